#!/usr/bin/env python3
"""Benchmark: ResNet-50 training throughput in images per second.

Trains torchvision's ResNet-50 (weights=None, 1000 classes) on one
synthetic batch of random images and labels, made on the device once and
used every step, so that the figure is the model's and the strategy's, not
the data loader's (like the seed's table: ResNet-50, 3,200 img/s with DDP
on 4x A100). Every metric line carries samples_per_sec and the same figure
as img_per_sec; metrics.json's samples_per_sec_mean leaves out the first
two steps (warm-up).

Sizes:
  --size full  ResNet-50 (25,557,032 parameters) at 224x224
  --size tiny  the small ResNet of defect_classify.py at 32x32, for CPU CI
  --image-size N overrides (ResNet-50's parameter count does not depend on it).

Flags: --steps, --size, --batch (global), --lr, --checkpoint-every,
--eval-every (no validation here), --data (ignored: always synthetic),
--output, --seed, --image-size, --optim (default sgd with momentum 0.9);
trainyard_common.py describes the env (the plan) and the lines it prints.
Activation checkpointing wraps each Bottleneck block.

Two CPU ranks by hand:
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 \\
    python3 examples/bench_resnet50.py --size tiny --steps 20 &
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 \\
    python3 examples/bench_resnet50.py --size tiny --steps 20
"""
import sys

import torch
import torch.nn.functional as F

import trainyard_common as tc
from defect_classify import build_model

DEFAULTS = {
    "tiny": {"steps": 20, "batch": 32, "lr": 0.05, "optim": "sgd", "checkpoint_every": 0},
    "full": {"steps": 100, "batch": 256, "lr": 0.1, "optim": "sgd", "checkpoint_every": 0,
             "weight_decay": 1e-4, "warmup": 0, "schedule": "constant"},
}


class SyntheticBatch:
    """One batch of images and labels, made once (seeded) on the device."""

    def __init__(self, size, classes, seed):
        self.size, self.classes, self.seed = size, classes, seed

    def __len__(self):
        return 1 << 20  # the position counts samples as if the set were large

    def fixed_batch(self, micro, device):
        g = torch.Generator()
        g.manual_seed(self.seed + 3)
        x = torch.randn(micro, 3, self.size, self.size, generator=g)
        y = torch.randint(0, self.classes, (micro,), generator=g)
        return x.to(device), y.to(device)


def main():
    p = tc.arg_parser(__doc__, DEFAULTS)
    p.add_argument("--image-size", type=int, default=None, help="default 32 (tiny) / 224 (full)")
    ctx = tc.start(p)
    a = ctx.args
    arch = "tiny" if a.size == "tiny" else "resnet50"
    size = a.image_size or (32 if a.size == "tiny" else 224)
    classes = 10 if a.size == "tiny" else 1000
    model, blocks = build_model(arch, classes)
    ctx.log("benchmark: %s at %dx%d, %d classes, %d parameters, synthetic batch"
            % (arch, size, size, classes, sum(p.numel() for p in model.parameters())))

    def loss_fn(m, batch):
        x, y = batch
        return F.cross_entropy(m(x), y)

    s = tc.train(ctx, model, SyntheticBatch(size, classes, a.seed), loss_fn, blocks=blocks,
                 block_names="%d residual blocks" % len(blocks), rates={"img_per_sec": 1})
    ctx.log("throughput: %s img/s (mean after warm-up, global batch %d)"
            % (s["samples_per_sec_mean"], ctx.global_batch))
    return 0


if __name__ == "__main__":
    tc.exit_process(main())
