"""SampleDataset: every sample of a set of shards, map-style, read in batches."""

import concurrent.futures
import hashlib
import io
import json
import os

import torch
import torch.utils.data

from ..errors import NotFound, SiloError
from ..tar import TarReader, group_samples, split_key
from ._decode import make_decoder
from ._shards import list_shards


def default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "silo", "index")


class SampleDataset(torch.utils.data.Dataset):
    """Every WebDataset sample of a set of shards, so that any sampler can draw globally
    uniform random samples without reading shards whole.

    The index comes from each shard's member list (GET ?archlist=true, one per shard,
    `index_threads` at a time), kept in `cache_dir` (default ~/.cache/silo/index; None:
    no cache) keyed by the shard's ETag, so a second run lists only the bucket.

    ds[i] reads one sample (GET ?archpath=KEY&archmode=wdskey); ds.fetch(indices) reads
    many with one batch GET (POST /v1/batch, one entry per member, served in runs by the
    targets) and returns the samples in the order asked. __getitems__ is fetch, so a
    torch >= 2 DataLoader with batch_size fetches each batch with one request; on torch
    1.13 pass a BatchSampler as `sampler` with batch_size=None: ds[list] is fetch(list).

    Samples are {"__key__", "__url__", "__index__", ext: bytes or decoded, ...}."""

    def __init__(self, client, bucket, prefix=None, template=None, shards=None, *, decode=None,
                 map=None, cache_dir="default", index_threads=16, batch_size_limit=100_000):
        super().__init__()
        self.client = client
        self.bucket = bucket
        self.decoder = make_decoder(decode)
        self.map = map
        self.batch_size_limit = batch_size_limit
        names = list_shards(client, bucket, prefix, template, shards)
        etags = self._etags(names, prefix, template)
        cache_dir = default_cache_dir() if cache_dir == "default" else cache_dir
        self.shards = names
        # Per sample: (shard index, key, tuple of member names); compact lists.
        self._shard_of = []
        self._keys = []
        self._members = []
        per_shard = self._load_index(names, etags, cache_dir, index_threads)
        for s, samples in enumerate(per_shard):
            for key, members in samples:
                self._shard_of.append(s)
                self._keys.append(key)
                self._members.append(tuple(members))

    def _etags(self, names, prefix, template):
        from .. import _plan
        common = prefix if prefix is not None else _plan.template_prefix(template) \
            if template is not None else os.path.commonprefix(names)
        wanted = set(names)
        etags = {o["name"]: o.get("etag", "") for o in self.client.list(self.bucket, common)
                 if o["name"] in wanted}
        missing = wanted - set(etags)
        if missing:
            name = sorted(missing)[0]
            raise NotFound("shard %r is not in bucket %r (%d of %d missing)"
                           % (name, self.bucket, len(missing), len(names)),
                           bucket=self.bucket, object=name, code="NOT_FOUND")
        return etags

    def _load_index(self, names, etags, cache_dir, threads):
        cache = {}
        path = None
        if cache_dir:
            digest = hashlib.sha256(("%s\0%s" % (self.client.endpoint, self.bucket)).encode()).hexdigest()[:16]
            path = os.path.join(cache_dir, "%s.json" % digest)
            try:
                with open(path, encoding="utf-8") as f:
                    cache = json.load(f)
            except (OSError, ValueError):
                cache = {}

        def index_of(name):
            hit = cache.get(name)
            if hit and hit.get("etag") == etags[name] and etags[name]:
                return hit["samples"]
            members = [m["name"] for m in self.client.list_members(self.bucket, name)]
            samples, last = [], None
            for m in members:
                key, _ = split_key(m)
                if key is None:
                    continue
                if key != last:
                    samples.append([key, []])
                    last = key
                samples[-1][1].append(m)
            return samples

        with concurrent.futures.ThreadPoolExecutor(max(1, threads)) as pool:
            per_shard = list(pool.map(index_of, names))
        if path:
            fresh = {n: {"etag": etags[n], "samples": s} for n, s in zip(names, per_shard)}
            if fresh != {n: cache.get(n) for n in names}:
                cache.update(fresh)
                try:
                    os.makedirs(cache_dir, exist_ok=True)
                    tmp = "%s.%d.tmp" % (path, os.getpid())
                    with open(tmp, "w", encoding="utf-8") as f:
                        json.dump(cache, f)
                    os.replace(tmp, path)
                except OSError:
                    pass  # a cache that cannot be written only costs time
        return per_shard

    def __len__(self):
        return len(self._keys)

    def sample_id(self, index):
        """(shard name, key) of sample `index`."""
        return self.shards[self._shard_of[index]], self._keys[index]

    def _finish(self, index, sample):
        sample["__index__"] = index
        if self.decoder is not None:
            sample = self.decoder(sample)
        if self.map is not None:
            sample = self.map(sample)
        return sample

    def _check(self, index):
        if not isinstance(index, int) and hasattr(index, "__index__"):
            index = index.__index__()
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("sample %d of %d" % (index, len(self)))
        return index

    def __getitem__(self, index):
        if isinstance(index, (list, tuple)) or (hasattr(index, "tolist") and
                                                getattr(index, "ndim", 0) == 1):
            return self.fetch(index)
        index = self._check(index)
        shard, key = self.sample_id(index)
        sample = self.client.get_sample(self.bucket, shard, key)
        sample["__url__"] = "silo://%s/%s" % (self.bucket, shard)
        return self._finish(index, sample)

    def fetch(self, indices):
        """The samples at `indices`, in that order, read with one batch GET."""
        if hasattr(indices, "tolist"):
            indices = indices.tolist()
        indices = [self._check(i) for i in indices]
        entries, owners = [], []
        for pos, i in enumerate(indices):
            shard = self.shards[self._shard_of[i]]
            for m in self._members[i]:
                entries.append({"bucket": self.bucket, "name": shard, "archpath": m})
                owners.append((pos, m))
        if len(entries) > self.batch_size_limit:
            half = len(indices) // 2
            return self.fetch(indices[:half]) + self.fetch(indices[half:])
        out = []
        for i in indices:
            shard = self.shards[self._shard_of[i]]
            out.append({"__key__": self._keys[i], "__url__": "silo://%s/%s" % (self.bucket, shard)})
        got = 0
        for (pos, member), (name, data) in zip(owners, self.client.get_batch(entries)):
            expected = "%s/%s/%s" % (self.bucket, self.shards[self._shard_of[indices[pos]]], member)
            if name != expected:
                raise SiloError("batch GET answered %r where %r was due" % (name, expected))
            _, ext = split_key(member)
            out[pos][ext] = data
            got += 1
        if got != len(entries):
            raise SiloError("batch GET answered %d of %d members" % (got, len(entries)))
        return [self._finish(i, s) for i, s in zip(indices, out)]

    __getitems__ = fetch
