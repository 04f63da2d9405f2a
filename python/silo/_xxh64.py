"""XXH64 (xxHash, 64-bit), as libxxhash computes it: HRW placement hashes object names
with it. Uses the `xxhash` module when it is installed (C speed); otherwise this pure
Python version, which the tests check against values from the C++ side
(tests/data/hrw_vectors.json)."""

_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261
_M = 0xFFFFFFFFFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc, lane):
    acc = (acc + lane * _P2) & _M
    acc = _rotl(acc, 31)
    return (acc * _P1) & _M


def _merge(acc, val):
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _M


def xxh64_pure(data, seed=0):
    """XXH64 of `data` (bytes-like) with `seed` (0 <= seed < 2**64), as an int."""
    data = bytes(data)
    seed &= _M
    n = len(data)
    i = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _M
        v2 = (seed + _P2) & _M
        v3 = seed
        v4 = (seed - _P1) & _M
        limit = n - 32
        from_bytes = int.from_bytes
        while i <= limit:
            v1 = _round(v1, from_bytes(data[i:i + 8], "little"))
            v2 = _round(v2, from_bytes(data[i + 8:i + 16], "little"))
            v3 = _round(v3, from_bytes(data[i + 16:i + 24], "little"))
            v4 = _round(v4, from_bytes(data[i + 24:i + 32], "little"))
            i += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        k1 = _round(0, int.from_bytes(data[i:i + 8], "little"))
        h ^= k1
        h = (_rotl(h, 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * _P1) & _M
        h = (_rotl(h, 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M
        h = (_rotl(h, 11) * _P1) & _M
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    h ^= h >> 32
    return h


try:  # pragma: no cover - depends on the machine
    import xxhash as _xxhash

    def xxh64(data, seed=0):
        return _xxhash.xxh64_intdigest(bytes(data), seed & _M)

    IMPLEMENTATION = "xxhash module"
except ImportError:  # pragma: no cover
    xxh64 = xxh64_pure
    IMPLEMENTATION = "pure Python"
