#!/usr/bin/env python3
"""Small PyTorch DDP training run: an MLP learns y = W x + noise.

Reads only the environment trainyard-worker sets (docs/agent-protocol.md):
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, CUDA_VISIBLE_DEVICES,
TRAINYARD_CHECKPOINT_DIR and TRAINYARD_RESUME_FROM. Backend nccl when CUDA is
usable and CUDA_VISIBLE_DEVICES is non-empty, else gloo; init_method env://.

Talks back through stdout lines:
  TRAINYARD_METRIC {"step":n,"loss":x,"samples_per_sec":y}   (rank 0)
  TRAINYARD_CHECKPOINT {"step":n,"path":"..."}              (rank 0)

Run two CPU ranks by hand:
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 \
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/ddp_mlp.py --steps 40 &
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 \
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/ddp_mlp.py --steps 40
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

IN_DIM = 32
OUT_DIM = 8


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--checkpoint-every", type=int, default=20)
    p.add_argument("--metric-every", type=int, default=1)
    p.add_argument("--sleep-per-step", type=float, default=0.0)
    return p.parse_args()


def emit(kind, obj):
    print(kind + " " + json.dumps(obj, separators=(",", ":")), flush=True)


def save_checkpoint(ckpt_dir, step, model, opt):
    """Atomic: write a temporary file, then rename over the final name."""
    os.makedirs(ckpt_dir, exist_ok=True)
    path = os.path.join(ckpt_dir, "step-%d.pt" % step)
    tmp = path + ".tmp.%d" % os.getpid()
    torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict()}, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def main():
    args = parse_args()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")

    use_cuda = torch.cuda.is_available() and os.environ.get("CUDA_VISIBLE_DEVICES", "") != ""
    if use_cuda:
        dev_index = local_rank % torch.cuda.device_count()
        torch.cuda.set_device(dev_index)
        device = torch.device("cuda", dev_index)
    else:
        device = torch.device("cpu")
    backend = "nccl" if use_cuda else "gloo"
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world)

    torch.manual_seed(1234)  # same initial weights on every rank
    w_true = torch.randn(IN_DIM, OUT_DIM, generator=torch.Generator().manual_seed(0))
    model = nn.Sequential(
        nn.Linear(IN_DIM, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, OUT_DIM),
    ).to(device)
    ddp = DDP(model, device_ids=[device.index] if use_cuda else None)
    opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()

    start_step = 0
    resume = os.environ.get("TRAINYARD_RESUME_FROM", "")
    if resume:
        ckpt = torch.load(resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start_step = int(ckpt["step"])
        if rank == 0:
            print("resumed from %s at step %d" % (resume, start_step), flush=True)
    # Each rank draws its own shard; the stream depends on where we resume.
    data = torch.Generator().manual_seed(1000 + rank + 7919 * start_step)
    ckpt_dir = os.environ.get("TRAINYARD_CHECKPOINT_DIR", "")
    # Every rank says it is up, so its log stream is never empty.
    print("rank %d of %d ready (local rank %s, backend %s)" %
          (rank, world, os.environ.get("LOCAL_RANK", "?"), backend), flush=True)
    if rank == 0:
        print("training: backend=%s world_size=%d steps=%d start=%d" %
              (backend, world, args.steps, start_step), flush=True)

    for step in range(start_step + 1, args.steps + 1):
        t0 = time.time()
        x = torch.randn(args.batch, IN_DIM, generator=data)
        y = x @ w_true + 0.01 * torch.randn(args.batch, OUT_DIM, generator=data)
        x, y = x.to(device), y.to(device)
        loss = loss_fn(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        mean /= world
        if args.sleep_per_step > 0:
            time.sleep(args.sleep_per_step)
        dt = max(time.time() - t0, 1e-9)
        if rank == 0 and args.metric_every > 0 and step % args.metric_every == 0:
            emit("TRAINYARD_METRIC", {"step": step, "loss": round(float(mean), 6),
                                      "samples_per_sec": round(args.batch * world / dt, 1)})
        if ckpt_dir and args.checkpoint_every > 0 and step % args.checkpoint_every == 0:
            if rank == 0:
                path = save_checkpoint(ckpt_dir, step, model, opt)
                emit("TRAINYARD_CHECKPOINT", {"step": step, "path": path})
            dist.barrier()

    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
