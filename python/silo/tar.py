"""A streaming tar reader (never holds more than a member and a read chunk) and the
WebDataset grouping of members into samples.

Formats, as src/archive/tar_reader.cc reads them: POSIX ustar (155-byte name prefix), GNU
long names (L) and long links (K), PAX extended headers (x: path, size; global g headers
skipped), GNU base-256 sizes; header checksums checked. Regular files are members;
directories, links, devices are skipped. A stream that ends inside a member or before
the end-of-archive zero block is a TarError: a truncated shard is an error, never fewer
samples."""

import re

from .errors import TarError

BLOCK = 512
_MAX_NAME = 64 * 1024
_MAX_PAX = 1024 * 1024
_HIGH_BYTES = bytes(range(128, 256))


class TarMember:
    __slots__ = ("name", "size", "offset", "data")

    def __init__(self, name, size, offset, data):
        self.name = name      # str (UTF-8; undecodable bytes kept as surrogates)
        self.size = size
        self.offset = offset  # of the data's first byte in the stream
        self.data = data      # bytes

    def __repr__(self):
        return "TarMember(%r, size=%d, offset=%d)" % (self.name, self.size, self.offset)


def _number(field, what, where):
    if field and field[0] & 0x80:  # GNU base-256
        value = int.from_bytes(field[1:], "big") | ((field[0] & 0x3F) << (8 * (len(field) - 1)))
        if field[0] & 0x40:
            raise TarError("%s: a negative base-256 %s" % (where, what))
        return value
    text = field.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise TarError("%s: the header's %s field %r is not a number" % (where, what, bytes(field)))


def _checksum_ok(header):
    stored_field = header[148:156].split(b"\0", 1)[0].strip(b" ")
    try:
        stored = int(stored_field, 8)
    except ValueError:
        return False
    blanked = bytes(header[:148]) + b" " * 8 + bytes(header[156:512])
    unsigned = sum(blanked)
    if stored == unsigned:
        return True
    # Old tars summed signed chars: each byte over 127 counts 256 less. Counted in C, not
    # byte by byte in Python (this runs once per member of every shard read).
    high = len(blanked) - len(blanked.translate(None, _HIGH_BYTES))
    return stored == unsigned - 256 * high


def _decode_name(raw):
    return raw.decode("utf-8", "surrogateescape")


def _pax_records(data, where):
    out = {}
    i = 0
    while i < len(data):
        sp = data.find(b" ", i)
        if sp < 0:
            break
        try:
            length = int(data[i:sp])
        except ValueError:
            raise TarError("%s: a PAX record has no length" % where)
        if length <= 0 or i + length > len(data):
            raise TarError("%s: a PAX record runs past its header" % where)
        record = data[sp + 1:i + length - 1]  # without the trailing newline
        key, _, value = record.partition(b"=")
        out[key.decode("utf-8", "replace")] = value
        i += length
    return out


class TarReader:
    """Members of a tar read from `source` (a callable read(n) -> bytes, b"" at the end,
    or a file-like with .read). Iterate for TarMember objects in archive order.
    `name` names the stream in errors (e.g. "bucket/shard-000.tar")."""

    def __init__(self, source, name="tar stream", chunk_size=1 << 20):
        self._read = source.read if hasattr(source, "read") else source
        self.name = name
        self._chunk = chunk_size
        self._buf = b""
        self._pos = 0
        self._offset = 0  # stream offset of self._buf[0]
        self._eof = False
        self.ended = False

    # -- buffered reads -------------------------------------------------------------
    def _available(self):
        return len(self._buf) - self._pos

    def _fill(self, need):
        """Until `need` bytes are buffered or the source ends; whether they are."""
        if self._available() >= need:
            return True
        parts = [self._buf[self._pos:]]
        have = len(parts[0])
        self._offset += self._pos
        while have < need and not self._eof:
            chunk = self._read(max(self._chunk, need - have))
            if not chunk:
                self._eof = True
                break
            parts.append(bytes(chunk))
            have += len(chunk)
        self._buf = b"".join(parts)
        self._pos = 0
        return have >= need

    def _take(self, n):
        if not self._fill(n):
            return None
        out = self._buf[self._pos:self._pos + n]
        self._pos += n
        return out

    def _skip(self, n):
        while n > 0:
            if self._available() == 0 and not self._fill(1):
                return False
            step = min(n, self._available())
            self._pos += step
            n -= step
        return True

    def position(self):
        return self._offset + self._pos

    # -- members --------------------------------------------------------------------
    def _fail(self, what):
        raise TarError("%s: %s" % (self.name, what))

    def __iter__(self):
        long_name = None
        pax = {}
        while True:
            at = self.position()
            header = self._take(BLOCK)
            if header is None:
                if self._available() == 0:
                    self._fail("truncated: the stream ended at offset %d without the "
                               "end-of-archive block" % at)
                self._fail("truncated: the header at offset %d is cut short" % at)
            if header == b"\0" * BLOCK:
                if long_name is not None or pax:
                    self._fail("an extended header at offset %d has no member" % at)
                self.ended = True
                return
            if not _checksum_ok(header):
                self._fail("not a tar, or corrupt: bad header checksum at offset %d" % at)
            where = "%s (header at offset %d)" % (self.name, at)
            size = _number(header[124:136], "size", where)
            kind = header[156:157]
            if "size" in pax:
                try:
                    size = int(pax["size"])
                except ValueError:
                    self._fail("a PAX size is not a number at offset %d" % at)
            padded = (size + BLOCK - 1) // BLOCK * BLOCK
            if kind in (b"L", b"K", b"x", b"g"):
                limit = _MAX_NAME if kind in (b"L", b"K") else _MAX_PAX
                if size > limit:
                    self._fail("an extended header of %d bytes at offset %d (limit %d)"
                               % (size, at, limit))
                data = self._take(padded)
                if data is None:
                    self._fail("truncated inside an extended header at offset %d" % at)
                data = data[:size]
                if kind == b"L":
                    long_name = data.split(b"\0", 1)[0]
                elif kind == b"x":
                    pax = _pax_records(data, where)
                continue
            if long_name is not None:
                raw_name = long_name
            elif "path" in pax:
                raw_name = pax["path"]
            else:
                raw_name = header[0:100].split(b"\0", 1)[0]
                if header[257:262] == b"ustar":
                    prefix = header[345:500].split(b"\0", 1)[0]
                    if prefix and header[257:263] != b"ustar ":  # POSIX ustar, not old GNU
                        raw_name = prefix + b"/" + raw_name
            long_name = None
            pax = {}
            data_at = self.position()
            if kind in (b"0", b"\0", b"7"):
                data = self._take(size) if size else b""
                if data is None:
                    self._fail("truncated: member %r at offset %d runs past the end of the "
                               "stream (%d bytes)" % (_decode_name(raw_name), data_at, size))
                if not self._skip(padded - size):
                    self._fail("truncated: the padding of member %r is cut short"
                               % _decode_name(raw_name))
                yield TarMember(_decode_name(raw_name), size, data_at, data)
            else:  # links, devices, directories, fifos: not members, and no data
                # follows them (as Python's tarfile reads them); unknown kinds carry size.
                if kind in (b"1", b"2", b"3", b"4", b"5", b"6"):
                    padded = 0
                if not self._skip(padded):
                    self._fail("truncated inside the entry at offset %d" % at)


# -- WebDataset grouping -------------------------------------------------------------
_KEY_EXT = re.compile(r"^((?:.*/|)[^./]+)[.]([^/]*)$")


def split_key(path):
    """(key, extension) of a member as WebDataset groups it: the key is the path up to
    the first dot of the basename, the extension the rest (lowercased). (None, None) for
    a name whose basename has no dot, and for WebDataset's `__*__` metadata members."""
    if "/" not in path and path.startswith("__") and path.endswith("__"):
        return None, None
    m = _KEY_EXT.match(path)
    if not m:
        return None, None
    return m.group(1), m.group(2).lower()


def group_samples(members, url=None):
    """Samples from (name, data) pairs in archive order, as WebDataset's group_by_keys
    makes them: consecutive members of one key are one sample {"__key__", "__url__",
    ext: data, ...}. A repeated extension within a sample is a TarError."""
    current = None
    for name, data in members:
        key, ext = split_key(name)
        if key is None:
            continue
        if current is None or current["__key__"] != key:
            if current is not None:
                yield current
            current = {"__key__": key, "__url__": url}
        if ext in current:
            raise TarError("%s: member %r repeats the extension %r of sample %r"
                           % (url, name, ext, key))
        current[ext] = data
    if current is not None:
        yield current


def sample_keys(member_names):
    """The sample keys in order (one per sample), for a list of member names: what
    group_samples would make of them, without the data (used to count samples from a
    member list)."""
    keys = []
    last = None
    for name in member_names:
        key, _ = split_key(name)
        if key is None:
            continue
        if key != last:
            keys.append(key)
            last = key
    return keys
