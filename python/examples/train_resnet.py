#!/usr/bin/env python3
"""Train a torchvision ResNet from WebDataset shards in a Silo bucket (KEY.jpg + KEY.cls).

One process:        python examples/train_resnet.py --bucket train --prefix imagenet/train-
Several (DDP):      torchrun --nproc_per_node 8 examples/train_resnet.py --bucket train ...
(silo.torch.ShardDataset takes rank and world size from torch.distributed once it is
initialised: each shard is read by exactly one worker of one rank per epoch.)

Endpoint and keys: --endpoint, else SILO_ENDPOINT / SILO_ACCESS_KEY / SILO_SECRET_KEY,
else ~/.config/silo/config.json. Checkpoints hold the loader's state_dict, so a resumed
run continues the epoch where it stopped, with no sample seen twice or skipped.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torchvision
import torchvision.transforms as T

import silo
import silo.torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", default=None)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--prefix", default="train-")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--checkpoint", default="checkpoint.pt")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    args = ap.parse_args()

    if "RANK" in os.environ:  # started by torchrun
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank() if dist.is_initialized() else 0
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if torch.cuda.is_available() \
        else torch.device("cpu")

    client = silo.Client(args.endpoint)
    augment = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                         T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = silo.torch.ShardDataset(client, args.bucket, prefix=args.prefix, shuffle=True, seed=0,
                                 decode="rgb", map=lambda s: (augment(s["jpg"]), s["cls"],
                                                              s["__worker__"], s["__seq__"]))
    model = getattr(torchvision.models, args.model)(num_classes=args.classes).to(device)
    if dist.is_initialized():
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    start_epoch = 0
    ckpt = "%s.rank%d" % (args.checkpoint, rank)
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        ds.load_state_dict(state["data"])  # resumes inside the epoch it was taken in
        start_epoch = state["data"]["epoch"]

    step = 0
    for epoch in range(start_epoch, args.epochs):
        if epoch != start_epoch or not os.path.exists(ckpt):
            ds.set_epoch(epoch)
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, num_workers=args.workers,
                                             pin_memory=True)
        for x, y, worker, seq in loader:
            # What the loop consumed: the batch's worker and sequence numbers.
            ds.observe({"__worker__": worker, "__seq__": seq})
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x.to(device, non_blocking=True)),
                                                         y.to(device, non_blocking=True))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            if step % 100 == 0:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                            "data": ds.state_dict()}, ckpt)
                print("rank %d epoch %d step %d loss %.3f" % (rank, epoch, step, loss.item()), flush=True)
            if args.max_steps and step >= args.max_steps:
                return


if __name__ == "__main__":
    main()
