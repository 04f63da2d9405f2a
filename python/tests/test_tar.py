"""The streaming tar reader and the WebDataset grouping."""

import io
import random
import tarfile

import pytest

from silo import TarError, TarReader, group_samples, split_key
from silo.tar import sample_keys


def make_tar(members, fmt=tarfile.USTAR_FORMAT, extra=None):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for info in extra or []:
            t.addfile(info)
    return buf.getvalue()


class Dribble:
    """Hands out a stream in reads of random small sizes (members split across reads)."""

    def __init__(self, data, seed=0, most=700):
        self.data, self.pos = data, 0
        self.rng = random.Random(seed)
        self.most = most

    def read(self, n):
        k = min(n, self.rng.randint(1, self.most))
        out = self.data[self.pos:self.pos + k]
        self.pos += len(out)
        return out


def members_of(data, **kw):
    return [(m.name, m.data) for m in TarReader(Dribble(data, **kw), "t.tar", chunk_size=97)]


def sample_members(n=30, seed=1):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append(("s%04d.jpg" % i, rng.randbytes(rng.randint(0, 3000))))
        out.append(("s%04d.cls" % i, str(i).encode()))
    return out


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_members_split_across_reads(fmt):
    members = sample_members()
    data = make_tar(members, fmt)
    for seed in range(5):
        assert members_of(data, seed=seed) == members


def test_offsets_are_data_offsets():
    members = sample_members(5)
    data = make_tar(members)
    for m in TarReader(io.BytesIO(data)):
        assert data[m.offset:m.offset + m.size] == m.data


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
def test_long_names(fmt):
    long_dir = "d" * 120 + "/" + "e" * 30
    name = long_dir + "/sample.with.dots.jpg"
    if fmt == tarfile.USTAR_FORMAT:
        name = "p" * 140 + "/short.jpg"  # fits ustar's 155-byte prefix + 100-byte name
    members = [(name, b"x" * 10), ("b" * 300 + ".txt", b"y"), ("\u00e9t\u00e9/\u65e5.cls", b"7")]
    if fmt == tarfile.USTAR_FORMAT:
        members = members[:1]
    assert members_of(make_tar(members, fmt)) == members


def test_links_and_directories_are_not_members():
    d = tarfile.TarInfo("dir")
    d.type = tarfile.DIRTYPE
    s = tarfile.TarInfo("dir/link.jpg")
    s.type = tarfile.SYMTYPE
    s.linkname = "x.jpg"
    data = make_tar([("a.jpg", b"1")], extra=[d, s])
    assert members_of(data) == [("a.jpg", b"1")]


def test_truncated_streams_fail():
    data = make_tar(sample_members(4))
    # Cut inside a member, inside a header, at a member boundary (no end block).
    first_data = next(iter(TarReader(io.BytesIO(data)))).offset
    for cut in (first_data + 5, 700, 1024, first_data - 100):
        with pytest.raises(TarError, match="truncated|cut short"):
            members_of(data[:cut])
    # A stream that ends exactly after a member, without the end-of-archive block.
    reader = TarReader(io.BytesIO(data))
    ms = list(reader)
    boundary = ms[-1].offset + ((ms[-1].size + 511) // 512) * 512
    with pytest.raises(TarError, match="end-of-archive"):
        members_of(data[:boundary])


def test_not_a_tar():
    with pytest.raises(TarError, match="checksum"):
        members_of(b"hello world" * 100)
    with pytest.raises(TarError):
        members_of(b"")


def test_corrupt_header_checksum():
    data = bytearray(make_tar(sample_members(2)))
    data[10] ^= 0xFF
    with pytest.raises(TarError, match="checksum"):
        members_of(bytes(data))


def test_signed_header_checksum():
    # Old tars summed the header as signed chars: a name byte over 127 counts 256 less.
    data = bytearray(make_tar([("caf\u00e9.txt", b"x" * 3)]))
    header = bytearray(data[:512])
    header[148:156] = b" " * 8
    signed = sum(b - 256 if b > 127 else b for b in header)
    assert signed != sum(header), "the name must hold a byte over 127"
    data[148:156] = b"%06o\0 " % signed
    ms = members_of(bytes(data))
    assert ms == [("caf\u00e9.txt", b"xxx")]
    data[148:156] = b"%06o\0 " % (signed + 1)
    with pytest.raises(TarError, match="checksum"):
        members_of(bytes(data))


def test_split_key_as_webdataset():
    assert split_key("a/b/c.d.jpg") == ("a/b/c", "d.jpg")
    assert split_key("s0001.JPG") == ("s0001", "jpg")
    assert split_key("dir.x/s1.cls") == ("dir.x/s1", "cls")
    assert split_key("noext") == (None, None)
    assert split_key("__meta__") == (None, None)
    assert split_key("dir/.hidden") == (None, None)


def test_group_samples():
    members = [("a.jpg", b"1"), ("a.cls", b"2"), ("b.jpg", b"3"), ("README", b"x"),
               ("b.json", b"{}"), ("c.seg.png", b"4")]
    samples = list(group_samples(members, url="bk/s.tar"))
    assert samples == [
        {"__key__": "a", "__url__": "bk/s.tar", "jpg": b"1", "cls": b"2"},
        {"__key__": "b", "__url__": "bk/s.tar", "jpg": b"3", "json": b"{}"},
        {"__key__": "c", "__url__": "bk/s.tar", "seg.png": b"4"},
    ]
    assert sample_keys([m[0] for m in members]) == ["a", "b", "c"]
    with pytest.raises(TarError, match="repeats"):
        list(group_samples([("a.jpg", b""), ("a.jpg", b"")]))
