#!/usr/bin/env python3
"""Globally uniform random samples from a set of shards, a batch per request:
silo.torch.SampleDataset indexes every sample from the shards' member lists (cached), and
each batch of indices is read with one batch GET instead of one GET per sample.

    python examples/random_samples.py --bucket train --prefix train- --batch 256 --batches 20
"""

import argparse
import time

import torch

import silo
import silo.torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", default=None)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--prefix", default="train-")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()

    client = silo.Client(args.endpoint)
    ds = silo.torch.SampleDataset(client, args.bucket, prefix=args.prefix)
    print("%d samples in %d shards" % (len(ds), len(ds.shards)))
    # torch >= 2: DataLoader(ds, batch_size=B, sampler=RandomSampler(ds)) calls
    # ds.__getitems__(indices) once per batch. This form works on torch 1.13 too: the
    # sampler hands whole batches of indices to ds[list] (= ds.fetch(list)).
    sampler = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(ds), args.batch, drop_last=True)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, sampler=sampler, num_workers=args.workers,
                                         collate_fn=lambda samples: samples)
    t0 = time.perf_counter()
    n = nbytes = 0
    for i, samples in enumerate(loader):
        n += len(samples)
        nbytes += sum(len(v) for s in samples for k, v in s.items() if isinstance(v, bytes))
        if i + 1 == args.batches:
            break
    dt = time.perf_counter() - t0
    print("%d samples, %.1f MB in %.2f s: %.0f samples/s" % (n, nbytes / 1e6, dt, n / dt))
    print("first sample of the last batch: %s" % {k: (v if k.startswith("__") else "%d bytes" % len(v))
                                                  for k, v in samples[0].items()})


if __name__ == "__main__":
    main()
