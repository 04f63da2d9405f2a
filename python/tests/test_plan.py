"""Shuffle and split arithmetic, the shuffle buffer and its replay (no torch needed)."""

import random

import pytest

from silo import _plan


def test_templates():
    assert _plan.expand_template("train-{0000..0003}.tar") == [
        "train-0000.tar", "train-0001.tar", "train-0002.tar", "train-0003.tar"]
    assert _plan.expand_template("{0..20..10}-{a,b}") == ["0-a", "0-b", "10-a", "10-b", "20-a", "20-b"]
    assert _plan.expand_template("plain.tar") == ["plain.tar"]
    assert _plan.template_prefix("x/train-{00..10}.tar") == "x/train-"
    for bad in ("a{1..}", "a{}", "a{1..2", "a}b", "{3..1}", "{a,,b}"):
        with pytest.raises(ValueError):
            _plan.expand_template(bad)


@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize("workers", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("count", [1, 7, 20, 64])
def test_every_shard_exactly_once(world, workers, count):
    shards = ["s%03d.tar" % i for i in range(count)]
    for epoch in range(3):
        order = _plan.epoch_order(shards, 5, epoch, True)
        seen = []
        for rank in range(world):
            for worker in range(max(1, workers)):
                seen += _plan.split(order, rank, world, worker, workers)
        assert sorted(seen) == shards
        assert len(seen) == len(set(seen))


def test_epoch_orders_differ_and_repeat():
    shards = ["s%03d" % i for i in range(50)]
    a = _plan.epoch_order(shards, 0, 1, True)
    assert a == _plan.epoch_order(list(reversed(shards)), 0, 1, True)  # input order ignored
    assert a != _plan.epoch_order(shards, 0, 2, True)
    assert a != _plan.epoch_order(shards, 1, 1, True)
    assert _plan.epoch_order(shards, 0, 1, False) == sorted(shards)


def test_split_checks_arguments():
    with pytest.raises(ValueError):
        _plan.split([1], 2, 2, 0, 0)
    with pytest.raises(ValueError):
        _plan.split([1], 0, 1, 3, 2)


def run_stream(counts, size, seed):
    buf = _plan.ShuffleBuffer(size, random.Random(seed))
    out = []
    for i, n in enumerate(counts):
        for j in range(n):
            out += buf.push((i, j))
    return out + buf.drain()


@pytest.mark.parametrize("size", [0, 1, 2, 5, 50])
def test_buffer_is_a_permutation_and_deterministic(size):
    counts = [7, 0, 13, 4]
    out = run_stream(counts, size, 3)
    assert sorted(out) == [(i, j) for i, n in enumerate(counts) for j in range(n)]
    assert out == run_stream(counts, size, 3)
    if size <= 1:
        assert out == sorted(out)


@pytest.mark.parametrize("size", [0, 1, 3, 10, 100])
def test_replay_resumes_exactly(size):
    counts = [9, 1, 0, 12, 5]
    total = sum(counts)
    full = run_stream(counts, size, 11)
    for skip in range(0, total + 1):
        buf = _plan.ShuffleBuffer(size, random.Random(11))
        point = _plan.replay(lambda i: counts[i], len(counts), buf, skip)
        # Continue the real stream from the point with the placeholders as the buffer.
        rest = []
        if point.tail is not None:
            rest = list(point.tail)
        else:
            buf.items = list(point.buffer_items)
            for i in range(point.shard, len(counts)):
                for j in range(point.sample if i == point.shard else 0, counts[i]):
                    rest += buf.push((i, j))
            rest += buf.drain()
        assert full[:skip] + rest == full, (size, skip)
    with pytest.raises(ValueError):
        _plan.replay(lambda i: counts[i], len(counts), _plan.ShuffleBuffer(size, random.Random(1)),
                     total + 1)
