import io
import os
import random
import sys
import tarfile

import pytest

# Tests run against the tree (python/), or, with SILO_TEST_INSTALLED=1 (tools/test.sh),
# against the installed package.
if os.environ.get("SILO_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # cluster.py


def write_shards(directory, count, per_shard, seed=0, size=(50, 400), prefix="train-"):
    """`count` WebDataset shards of `per_shard` samples (KEY.bin random bytes, KEY.cls
    its global number); returns {(shard, key): (bin, cls)} and the shard names."""
    rng = random.Random(seed)
    os.makedirs(directory, exist_ok=True)
    expected, names = {}, []
    n = 0
    for s in range(count):
        name = "%s%04d.tar" % (prefix, s)
        names.append(name)
        with tarfile.open(os.path.join(directory, name), "w", format=tarfile.USTAR_FORMAT) as t:
            for _ in range(per_shard):
                key = "sample%06d" % n
                data = rng.randbytes(rng.randint(*size))
                cls = str(n).encode()
                for ext, payload in (("bin", data), ("cls", cls)):
                    info = tarfile.TarInfo("%s.%s" % (key, ext))
                    info.size = len(payload)
                    t.addfile(info, io.BytesIO(payload))
                expected[(name, key)] = (data, cls)
                n += 1
    return expected, names


@pytest.fixture
def local_shards(tmp_path):
    expected, names = write_shards(str(tmp_path / "shards"), 12, 9)
    return str(tmp_path / "shards"), expected, names


def check_member_reads(c, bucket, expected, names):
    """Member listing, member and range reads and a sample of shards that write_shards
    made in `bucket` (the plain and the TLS integration tests share it)."""
    members = c.list_members(bucket, names[0])
    assert [m["name"] for m in members][:2] == ["sample000000.bin", "sample000000.cls"]
    bin0, _ = expected[(names[0], "sample000000")]
    assert c.get(bucket, names[0], archpath="sample000000.bin") == bin0
    assert c.get(bucket, names[0], archpath="sample000000.bin", range=(1, 3)) == bin0[1:4]
    sample = c.get_sample(bucket, names[0], "sample000003")
    assert (sample["bin"], sample["cls"]) == expected[(names[0], "sample000003")]
