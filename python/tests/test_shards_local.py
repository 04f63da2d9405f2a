"""ShardDataset over local shard files (the same code path as Silo but for the opener):
epochs, splits, workers, resumption, decoding and the error policy."""

import collections
import os
import warnings

import pytest

torch = pytest.importorskip("torch")
import silo.torch as st  # noqa: E402
from silo import TarError  # noqa: E402


def keys(samples):
    return [s["__key__"] for s in samples]


def test_epoch_yields_every_sample_once_in_new_orders(local_shards):
    root, expected, names = local_shards
    ds = st.ShardDataset(None, root, prefix="train-", shuffle=True, seed=3, shuffle_buffer=20)
    orders = []
    for epoch in range(3):
        ds.set_epoch(epoch)
        got = list(ds)
        assert sorted(keys(got)) == sorted(k for _, k in expected)
        for s in got:
            assert (s["bin"], s["cls"]) == expected[(os.path.basename(s["__url__"]), s["__key__"])]
        orders.append(keys(got))
    assert orders[0] != orders[1] != orders[2]
    ds.set_epoch(1)
    assert keys(ds) == orders[1]  # an epoch is reproducible


def test_shards_by_template_and_list(local_shards):
    root, _, names = local_shards
    a = st.ShardDataset(None, root, template="train-{0000..0003}.tar", shuffle=False)
    b = st.ShardDataset(None, root, shards=names[:4], shuffle=False)
    assert keys(a) == keys(b) and len(keys(a)) == 36
    with pytest.raises(ValueError):
        st.ShardDataset(None, root)


@pytest.mark.parametrize("world", [1, 2, 3])
@pytest.mark.parametrize("workers", [0, 2])
def test_ranks_and_workers_cover_disjointly(local_shards, world, workers):
    root, expected, _ = local_shards
    seen = []
    for rank in range(world):
        ds = st.ShardDataset(None, root, prefix="train-", seed=1, rank=rank, world_size=world,
                             shuffle_buffer=10)
        ds.set_epoch(2)
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
        seen += keys(loader)
    assert collections.Counter(seen) == collections.Counter(k for _, k in expected)


@pytest.mark.parametrize("workers", [0, 2, 3])
@pytest.mark.parametrize("buffer", [0, 7, 40])
def test_resume_mid_epoch(local_shards, workers, buffer):
    root, expected, _ = local_shards
    make = lambda: st.ShardDataset(None, root, prefix="train-", seed=9, shuffle_buffer=buffer,  # noqa: E731
                                   shuffle=buffer > 0)
    ds = make()
    ds.set_epoch(4)
    full = keys(ds.track(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)))
    for stop in (1, 17, 50, len(full) - 1):
        ds = make()
        ds.set_epoch(4)
        first = []
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
        for s in ds.track(loader):
            first.append(s["__key__"])
            if len(first) == stop:
                break
        state = ds.state_dict()
        resumed = make()
        resumed.load_state_dict(state)
        rest = keys(resumed.track(torch.utils.data.DataLoader(resumed, batch_size=None,
                                                               num_workers=workers)))
        assert collections.Counter(first + rest) == collections.Counter(full), (stop, workers)
        if workers == 0:
            assert first + rest == full
        # A second checkpoint after the resume still counts from the epoch's start.
        assert sum(resumed.state_dict()["consumed"].values()) == len(full)


def test_resume_checks_the_setup(local_shards):
    root, _, _ = local_shards
    ds = st.ShardDataset(None, root, prefix="train-", seed=1)
    it = iter(ds)
    next(it)
    state = ds.state_dict()
    assert state["consumed"] == {"0": 1}
    with pytest.raises(ValueError, match="seed"):
        st.ShardDataset(None, root, prefix="train-", seed=2).load_state_dict(state)
    other = st.ShardDataset(None, root, prefix="train-", seed=1)
    other.load_state_dict(state)
    with pytest.raises(ValueError, match="num_workers"):
        list(torch.utils.data.DataLoader(other, batch_size=None, num_workers=2))


def test_batched_loader_and_track(local_shards):
    root, expected, _ = local_shards
    ds = st.ShardDataset(None, root, prefix="train-", decode=True, shuffle_buffer=5)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    total = 0
    for batch in ds.track(loader):
        total += len(batch["__key__"])
        assert isinstance(batch["cls"], torch.Tensor)  # cls decoded to int, collated
    assert total == len(expected)
    assert sum(ds.state_dict()["consumed"].values()) == len(expected)


def test_decoders(tmp_path):
    import io
    import json
    import tarfile

    import numpy as np
    from PIL import Image

    img = Image.new("RGB", (8, 6), (10, 200, 30))
    jpg, png, npy = io.BytesIO(), io.BytesIO(), io.BytesIO()
    img.save(jpg, "JPEG")
    img.save(png, "PNG")
    np.save(npy, np.arange(6).reshape(2, 3))
    path = tmp_path / "d-0.tar"
    with tarfile.open(path, "w") as t:
        for name, data in (("a.jpg", jpg.getvalue()), ("a.seg.png", png.getvalue()),
                           ("a.cls", b"7\n"), ("a.txt", "h\u00e9".encode()),
                           ("a.json", json.dumps({"x": 1}).encode()), ("a.npy", npy.getvalue()),
                           ("a.raw", b"\x00")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    s = next(iter(st.ShardDataset(None, str(tmp_path), prefix="d-", decode="torch")))
    assert s["jpg"].shape == (3, 6, 8) and s["seg.png"].shape == (3, 6, 8)
    assert s["cls"] == 7 and s["txt"] == "h\u00e9" and s["json"] == {"x": 1}
    assert s["npy"].tolist() == [[0, 1, 2], [3, 4, 5]] and s["raw"] == b"\x00"
    s = next(iter(st.ShardDataset(None, str(tmp_path), prefix="d-",
                                  decode={"raw": lambda b: len(b)}, map=lambda s: s["raw"])))
    assert s == 1


def test_error_policy(local_shards):
    root, expected, names = local_shards
    path = os.path.join(root, names[3])
    data = open(path, "rb").read()
    open(path, "wb").write(data[:1500])  # truncated shard
    ds = st.ShardDataset(None, root, prefix="train-", shuffle=False)
    with pytest.raises(TarError, match="truncated"):
        list(ds)
    ds = st.ShardDataset(None, root, prefix="train-", shuffle=False, on_error="warn")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = keys(ds)
    assert any(names[3] in str(x.message) for x in w)
    whole = [k for (n, k) in expected if n != names[3]]
    assert set(whole) <= set(got) and len(got) < len(expected)
