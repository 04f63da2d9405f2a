"""ShardDataset: WebDataset tar shards streamed from Silo into PyTorch."""

import hashlib
import os
import queue
import threading
import warnings

import torch
import torch.utils.data

from .. import _plan
from ..errors import SiloError, TLSError, TarError
from ..tar import TarReader, group_samples
from ._decode import make_decoder

_END = object()


def list_shards(client, bucket, prefix=None, template=None, shards=None, suffixes=(".tar",)):
    """The shard names a dataset reads: `shards` as given, or a brace template's names,
    or every object under `prefix` ending in one of `suffixes` (sorted). `client` None:
    `bucket` is a local directory."""
    given = sum(x is not None for x in (prefix, template, shards))
    if given != 1:
        raise ValueError("give exactly one of prefix=, template= or shards=")
    if shards is not None:
        names = [shards] if isinstance(shards, str) else list(shards)
    elif template is not None:
        names = _plan.expand_template(template)
    else:
        if client is None:
            root = os.path.join(bucket, os.path.dirname(prefix))
            base = os.path.basename(prefix)
            sub = os.path.dirname(prefix)
            names = [os.path.join(sub, n) if sub else n for n in os.listdir(root)
                     if n.startswith(base)]
        else:
            names = [o["name"] for o in client.list(bucket, prefix=prefix)]
        names = [n for n in names if not suffixes or n.endswith(tuple(suffixes))]
    if not names:
        raise ValueError("no shards: %s in %s" % (
            "prefix %r" % prefix if prefix is not None else
            "template %r" % template if template is not None else "an empty list", bucket))
    if len(set(names)) != len(names):
        raise ValueError("the shard list names a shard twice")
    return sorted(names)


def _shards_digest(names):
    h = hashlib.sha256()
    for n in sorted(names):
        h.update(n.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()[:16]


class _Prefetcher:
    """Reads this worker's shards, one after another, on a thread of its own, into a
    bounded queue of chunks: the next shard arrives while the current one is parsed."""

    def __init__(self, open_shard, names, chunk=1 << 20, max_bytes=64 << 20):
        self._open = open_shard
        self._names = names
        self._chunk = chunk
        self._q = queue.Queue(maxsize=max(2, max_bytes // chunk))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="silo-shard-prefetch", daemon=True)
        self._thread.start()

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self):
        for i, name in enumerate(self._names):
            try:
                with self._open(name) as stream:
                    while True:
                        data = stream.read(self._chunk)
                        if not data:
                            break
                        if not self._put((i, data)):
                            return
            except BaseException as e:  # handed to the reader, who applies the policy
                if not self._put((i, e)):
                    return
                continue
            if not self._put((i, _END)):
                return

    def reader(self, i):
        """read(n) for shard i (the shards must be taken in order)."""
        state = {"done": False}

        def read(_n):
            if state["done"]:
                return b""
            k, item = self._q.get()
            if k != i:
                raise AssertionError("prefetch out of order: shard %d while reading %d" % (k, i))
            if item is _END:
                state["done"] = True
                return b""
            if isinstance(item, BaseException):
                state["done"] = True
                raise item
            return item

        def drain():  # the rest of shard i, when its reader stops early
            while not state["done"]:
                k, item = self._q.get()
                if item is _END or isinstance(item, BaseException):
                    state["done"] = True
        read.drain = drain
        return read

    def close(self):
        self._stop.set()
        try:
            while True:
                self._q.get_nowait()
        except queue.Empty:
            pass
        self._thread.join(timeout=5)


class ShardDataset(torch.utils.data.IterableDataset):
    """WebDataset tar shards of a Silo bucket as a stream of samples.

    Shards: `prefix=` (every object under it ending in .tar), `template=` (a brace
    template, "train-{0000..0199}.tar") or `shards=` (a list of names). Each epoch the
    shard order is shuffled from (seed, epoch) (set_epoch(n) before each epoch), then
    split across ranks (rank/world_size arguments, else torch.distributed when
    initialised, else 0/1) and DataLoader workers: each shard is read exactly once per
    epoch by one worker of one rank. A worker streams its shards (never whole in memory;
    the next one prefetched on a thread), parses them into samples as WebDataset groups
    them ({"__key__", "__url__", "jpg": bytes, "cls": bytes, ...}), passes them through a
    shuffle buffer of `shuffle_buffer` samples (seeded from seed, epoch, rank, worker),
    then decodes (`decode`: None for bytes, True/"rgb"/"pil"/"numpy"/"torch" for images
    plus cls/txt/json/npy, a dict {ext: fn}, or a callable) and applies `map`.

    Each sample also carries "__worker__" ("i/n": which worker of how many) and
    "__seq__" (its place in that worker's stream) so that state_dict() can record what
    the training loop consumed: iterate in-process, or wrap the DataLoader with
    ds.track(loader) (or call ds.observe(sample_or_batch) per item). load_state_dict()
    resumes the epoch with no sample repeated or skipped (same seed, shards, world size
    and num_workers).

    on_error: "raise" (default) or "warn" (a shard that fails is reported with
    warnings.warn and its remaining samples skipped; a TLSError is raised all the same).
    Samples of a shard that failed midway are not replayed exactly by a resume."""

    def __init__(self, client, bucket, prefix=None, template=None, shards=None, *,
                 shuffle=True, seed=0, rank=None, world_size=None, shuffle_buffer=1000,
                 decode=None, map=None, on_error="raise", prefetch_bytes=64 << 20,
                 chunk_size=1 << 20, open_shard=None, meta=True):
        super().__init__()
        if on_error not in ("raise", "warn"):
            raise ValueError("on_error must be 'raise' or 'warn'")
        self.client = client
        self.bucket = bucket
        self.shards = list_shards(client, bucket, prefix, template, shards)
        self.shuffle = shuffle
        self.seed = int(seed)
        self._rank, self._world_size = rank, world_size
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")
        self.shuffle_buffer = shuffle_buffer if shuffle else 0
        self.decoder = make_decoder(decode)
        self.map = map
        self.on_error = on_error
        self.prefetch_bytes = prefetch_bytes
        self.chunk_size = chunk_size
        self.open_shard = open_shard
        self.meta = meta
        self.epoch = 0
        self._resume = None     # {"num_workers", "consumed"} loaded, for this epoch
        self._consumed = {}     # worker index -> samples the loop consumed this epoch
        self._num_workers = None
        self._counts = {}       # shard -> sample count (from member lists, for resumes)

    # -- configuration ----------------------------------------------------------------
    def rank_world(self):
        if self._rank is not None:
            return int(self._rank), int(self._world_size)
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def set_epoch(self, epoch):
        """Sets the epoch (the shard order and the shuffle buffer's seed follow it).
        A resume state loaded for another epoch is dropped."""
        epoch = int(epoch)
        if epoch != self.epoch or self._resume is None:
            self._resume = None
            self._consumed = {}
        self.epoch = epoch

    def _url(self, name):
        return "silo://%s/%s" % (self.bucket, name) if self.client is not None else \
            os.path.join(self.bucket, name)

    def _open(self, name):
        if self.open_shard is not None:
            return self.open_shard(name)
        if self.client is None:
            return open(os.path.join(self.bucket, name), "rb")
        return self.client.get_stream(self.bucket, name)

    def worker_shards(self, worker=None, num_workers=None):
        """The shards this rank's worker reads this epoch, in order."""
        if worker is None:
            info = torch.utils.data.get_worker_info()
            worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        rank, world = self.rank_world()
        order = _plan.epoch_order(self.shards, self.seed, self.epoch, self.shuffle)
        return _plan.split(order, rank, world, worker, num_workers)

    # -- consumption and resumption -------------------------------------------------
    def observe(self, item):
        """Records that the training loop consumed `item` (a sample, or a batch collated
        from samples of one worker)."""
        w, seq = item.get("__worker__"), item.get("__seq__")
        if w is None or seq is None:
            raise ValueError("observe(): the item has no __worker__/__seq__ (meta=False?)")
        if isinstance(w, (list, tuple)):
            w = w[-1]
        if hasattr(seq, "tolist"):
            seq = seq.tolist()
        if isinstance(seq, (list, tuple)):
            seq = max(seq)
        worker, _, n = str(w).partition("/")
        worker, n = int(worker), int(n)
        if self._num_workers not in (None, n):
            raise ValueError("observe(): items from %d workers after %d" % (n, self._num_workers))
        self._num_workers = n
        self._consumed[worker] = max(self._consumed.get(worker, 0), int(seq) + 1)

    def track(self, iterable):
        """Yields the items of `iterable` (a DataLoader over this dataset), observing
        each: `for batch in ds.track(loader): ...` keeps state_dict() current."""
        for item in iterable:
            self.observe(item)
            yield item

    def state_dict(self):
        """Where this rank's epoch stands: what resumes it without repeating or skipping
        a sample (with the same shards, seed, world size and num_workers)."""
        rank, world = self.rank_world()
        return {"version": 1, "epoch": self.epoch, "seed": self.seed, "shuffle": self.shuffle,
                "shuffle_buffer": self.shuffle_buffer, "rank": rank, "world_size": world,
                "shards": _shards_digest(self.shards), "num_shards": len(self.shards),
                "num_workers": self._num_workers,
                "consumed": {str(k): v for k, v in sorted(self._consumed.items())}}

    def load_state_dict(self, state):
        if state.get("version") != 1:
            raise ValueError("unknown ShardDataset state version %r" % state.get("version"))
        rank, world = self.rank_world()
        mine = {"seed": self.seed, "shuffle": self.shuffle, "shuffle_buffer": self.shuffle_buffer,
                "rank": rank, "world_size": world, "shards": _shards_digest(self.shards)}
        for k, v in mine.items():
            if state.get(k) != v:
                raise ValueError("cannot resume: the state has %s=%r, this dataset %r"
                                 % (k, state.get(k), v))
        self.epoch = int(state["epoch"])
        self._consumed = {int(k): int(v) for k, v in state.get("consumed", {}).items()}
        self._num_workers = state.get("num_workers")
        self._resume = {"num_workers": self._num_workers, "consumed": dict(self._consumed)}

    def _sample_count(self, name):
        n = self._counts.get(name)
        if n is None:
            from ..tar import sample_keys
            if self.client is None and self.open_shard is None:
                with open(os.path.join(self.bucket, name), "rb") as f:
                    names = [m.name for m in TarReader(f, name)]
            else:
                names = [m["name"] for m in self.client.list_members(self.bucket, name)]
            n = len(sample_keys(names))
            self._counts[name] = n
        return n

    # -- iteration ----------------------------------------------------------------------
    def _samples_of(self, name, read, start=0):
        """(index, sample) of one shard from `start` on; errors by policy."""
        url = self._url(name)
        try:
            members = ((m.name, m.data) for m in TarReader(read, url, self.chunk_size))
            for index, sample in enumerate(group_samples(members, url)):
                if index >= start:
                    yield index, sample
        except (SiloError, OSError) as e:
            if self.on_error == "raise" or isinstance(e, TLSError):  # TLS: every shard would fail
                raise
            warnings.warn("silo.torch.ShardDataset: skipping the rest of %s: %s" % (url, e))
        # The prefetched rest of this shard (the tar's end blocks, or what followed an
        # error), up to the next shard; not when the consumer stopped (GeneratorExit).
        drain = getattr(read, "drain", None)
        if drain is not None:
            drain()

    def _direct_samples(self, name):
        with self._open(name) as stream:
            for item in self._samples_of(name, stream.read):
                yield item

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        in_process = info is None
        rank, world = self.rank_world()
        names = self.worker_shards(worker, num_workers)
        rng = _plan.worker_rng(self.seed, self.epoch, rank, worker)
        buffer = _plan.ShuffleBuffer(self.shuffle_buffer, rng)
        skip = 0
        if self._resume is not None:
            if self._resume["num_workers"] not in (None, num_workers):
                raise ValueError("cannot resume: the state was taken with num_workers=%s, this "
                                 "DataLoader has %d" % (self._resume["num_workers"], num_workers))
            skip = self._resume["consumed"].get(worker, 0)
        if in_process:
            self._num_workers = 1
        tag = "%d/%d" % (worker, num_workers)
        seq = skip

        def emit(sample):
            nonlocal seq
            if self.meta:
                sample["__worker__"] = tag
                sample["__seq__"] = seq
            if self.decoder is not None:
                sample = self.decoder(sample)
            if self.map is not None:
                sample = self.map(sample)
            seq += 1
            if in_process:
                self._consumed[0] = seq
            return sample

        first_shard, first_sample, tail, placeholders = 0, 0, None, None
        needed, found = set(), {}
        if skip:
            # Replay the buffer over placeholders (sample counts from the member lists),
            # then read again only the samples it still holds.
            point = _plan.replay(lambda i: self._sample_count(names[i]), len(names), buffer, skip)
            needed = point.needed()
            placeholders, buffer.items = buffer.items, []
            first_shard, first_sample, tail = point.shard, point.sample, point.tail
            for i in sorted({i for i, _ in needed if i != first_shard}):
                for j, sample in self._direct_samples(names[i]):
                    if (i, j) in needed:
                        found[(i, j)] = sample

        def restore(keys):
            missing = [k for k in keys if k not in found]
            if missing:
                i, j = missing[0]
                raise SiloError("cannot resume: sample %d of %s was not found again (the shard "
                                "changed or failed)" % (j, self._url(names[i])))
            return [found.pop(k) for k in keys]

        prefetch = None
        if first_shard < len(names):
            prefetch = _Prefetcher(self._open, names[first_shard:], self.chunk_size,
                                   self.prefetch_bytes)
        try:
            for k, name in enumerate(names[first_shard:]):
                i = first_shard + k
                for j, sample in self._samples_of(name, prefetch.reader(k)):
                    if i == first_shard and j < first_sample:
                        if (i, j) in needed:
                            found[(i, j)] = sample
                        continue
                    if placeholders is not None:
                        buffer.items, placeholders = restore(placeholders), None
                    for out in buffer.push(sample):
                        yield emit(out)
                if placeholders is not None:
                    buffer.items, placeholders = restore(placeholders), None
            if placeholders is not None:
                buffer.items, placeholders = restore(placeholders), None
            rest = restore(tail) if tail is not None else buffer.drain()
            for out in rest:
                yield emit(out)
        finally:
            if prefetch is not None:
                prefetch.close()
        if in_process:
            self._resume = None

    def __len__(self):
        raise TypeError("ShardDataset has no length (an IterableDataset of shards); "
                        "SampleDataset has one")
