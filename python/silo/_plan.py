"""The arithmetic of ShardDataset without torch: brace templates, the per-epoch shard
order, the split across ranks and workers, the deterministic shuffle buffer and the
replay that lets a worker resume mid-epoch."""

import random
import re

_BRACE = re.compile(r"\{([^{}]*)\}")


def expand_template(text, max_names=10_000_000):
    """Names of a brace template, AIStore's syntax (src/wire/name_template.h):
    "train-{000000..004095}.tar" (a range; the first bound's width pads with zeros),
    "{0..100..10}" (a step), "{a,b,c}" (a list); several braces multiply, the last
    varying fastest."""
    parts = []
    pos = 0
    for m in _BRACE.finditer(text):
        literal = text[pos:m.start()]
        if "{" in literal or "}" in literal:
            raise ValueError("template %r: unbalanced braces" % text)
        parts.append([literal])
        body = m.group(1)
        if ".." in body:
            bounds = body.split("..")
            if len(bounds) not in (2, 3) or not all(b.strip().isdigit() for b in bounds):
                raise ValueError("template %r: bad range {%s}" % (text, body))
            lo, hi = int(bounds[0]), int(bounds[1])
            step = int(bounds[2]) if len(bounds) == 3 else 1
            if step <= 0 or hi < lo:
                raise ValueError("template %r: bad range {%s}" % (text, body))
            width = len(bounds[0]) if bounds[0].startswith("0") and len(bounds[0]) > 1 else 0
            parts.append([str(v).zfill(width) for v in range(lo, hi + 1, step)])
        else:
            choices = body.split(",")
            if body == "" or any(c == "" for c in choices):
                raise ValueError("template %r: an empty choice in {%s}" % (text, body))
            parts.append(choices)
        pos = m.end()
    tail = text[pos:]
    if "{" in tail or "}" in tail:
        raise ValueError("template %r: unbalanced braces" % text)
    parts.append([tail])
    total = 1
    for p in parts:
        total *= len(p)
    if total > max_names:
        raise ValueError("template %r names %d objects (limit %d)" % (text, total, max_names))
    names = [""]
    for p in parts:
        names = [n + c for n in names for c in p]
    return names


def template_prefix(text):
    i = text.find("{")
    return text if i < 0 else text[:i]


def epoch_order(shards, seed, epoch, shuffle):
    """The shard order of an epoch: the sorted list, permuted from (seed, epoch)."""
    order = sorted(shards)
    if shuffle:
        random.Random("silo-shards:%d:%d" % (seed, epoch)).shuffle(order)
    return order


def units(world_size, num_workers):
    """How many readers an epoch is split into: every worker of every rank."""
    return world_size * max(1, num_workers)


def unit_index(rank, world_size, worker, num_workers):
    if not 0 <= rank < world_size:
        raise ValueError("rank %d is not in [0, world_size=%d)" % (rank, world_size))
    w = max(1, num_workers)
    if not 0 <= worker < w:
        raise ValueError("worker %d is not in [0, %d)" % (worker, w))
    return rank * w + worker


def split(order, rank, world_size, worker, num_workers):
    """The shards one worker of one rank reads: every units()-th of the epoch's order,
    so each shard goes to exactly one reader."""
    return order[unit_index(rank, world_size, worker, num_workers)::units(world_size, num_workers)]


def worker_rng(seed, epoch, rank, worker):
    return random.Random("silo-samples:%d:%d:%d:%d" % (seed, epoch, rank, worker))


class ShuffleBuffer:
    """A sample shuffle buffer whose output depends only on its input sequence and its
    rng: push() returns nothing until `size` items are in, then a random one of them
    (replaced by the new one); drain() returns the rest, shuffled. size <= 1: none (items
    pass straight through, no random numbers drawn)."""

    def __init__(self, size, rng):
        self.size = size
        self.rng = rng
        self.items = []

    def push(self, item):
        """[] or [one item out]."""
        if self.size <= 1:
            return [item]
        if len(self.items) < self.size:
            self.items.append(item)
            return []
        j = self.rng.randrange(self.size)
        out = self.items[j]
        self.items[j] = item
        return [out]

    def drain(self):
        items, self.items = self.items, []
        if self.size > 1:
            self.rng.shuffle(items)
        return items


class ReplayPoint:
    """Where a worker's stream stands after `skip` outputs, found without reading data:
    the index of the shard being read (len(shards) when all were read), the index of
    its next sample, the buffer's content as (shard index, sample index) pairs, and the
    drained tail still to come (when the replay ended in the drain)."""

    def __init__(self, shard, sample, buffer_items, tail):
        self.shard = shard
        self.sample = sample
        self.buffer_items = buffer_items
        self.tail = tail

    def needed(self):
        return set(self.buffer_items) | set(self.tail or [])


def replay(sample_count, num_shards, buffer, skip):
    """Runs `buffer` (a ShuffleBuffer, its rng fresh) over placeholders (shard, sample)
    for shards whose sample counts sample_count(i) gives, until `skip` items came out.
    Returns the ReplayPoint; the buffer's rng is then where the real stream's would be.
    Raises ValueError when the shards hold fewer than `skip` samples."""
    emitted = 0
    if skip <= 0:
        return ReplayPoint(0, 0, [], None)
    for i in range(num_shards):
        n = sample_count(i)
        for j in range(n):
            emitted += len(buffer.push((i, j)))
            if emitted == skip:
                return ReplayPoint(i, j + 1, list(buffer.items), None)
    tail = buffer.drain()
    if emitted + len(tail) < skip:
        raise ValueError("cannot resume: this worker's shards hold %d samples, the state says "
                         "%d were consumed" % (emitted + len(tail), skip))
    return ReplayPoint(num_shards, 0, [], tail[skip - emitted:])
