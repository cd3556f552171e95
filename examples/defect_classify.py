#!/usr/bin/env python3
"""Surface-defect classification: fine-tune ResNet-50 on an image folder.

Trains an image classifier over an image-folder dataset (DIR/<class>/<image>,
one sub-folder per defect class, examples/README.md) split deterministically
into train and validation (--val-fraction, --seed), and reports val_loss and
val_acc. Without data it trains on synthetic class patterns.

Sizes:
  --size full  torchvision ResNet-50 (25.6M parameters) at 224x224
  --size tiny  a small ResNet (BasicBlocks of 16, 32, 64 channels, 0.08M
               parameters) at 32x32, for CPU CI
  --arch resnet50|tiny and --image-size N override the size's choice.
  --pretrained PATH loads weights from an on-site file (a torchvision
  ResNet-50 state_dict, or the model.pt of an earlier run) before training;
  the classifier (fc) is re-initialised when its class count differs.
  Nothing is ever downloaded (torchvision.models.resnet50(weights=None)).

Flags: --steps, --size, --batch (global), --lr, --checkpoint-every,
--eval-every, --data, --output, --seed, --arch, --pretrained, --image-size,
--classes (synthetic mode); trainyard_common.py describes the env it reads
(the plan: TRAINYARD_STRATEGY, TRAINYARD_MICRO_BATCH, ...) and what it
prints. Activation checkpointing wraps each residual block (layer1..layer4).
Outputs (--output or TRAINYARD_OUTPUT_DIR): model.pt, classes.json,
metrics.json.

Two CPU ranks by hand:
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/defect_classify.py --size tiny --steps 40 &
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/defect_classify.py --size tiny --steps 40
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import trainyard_common as tc

DEFAULTS = {
    "tiny": {"steps": 60, "batch": 32, "lr": 3e-3, "checkpoint_every": 20, "eval_every": 20},
    "full": {"steps": 2000, "batch": 64, "lr": 1e-3, "checkpoint_every": 200, "eval_every": 200,
             "weight_decay": 0.05},
}


class TinyResNet(nn.Module):
    """A CIFAR-style ResNet: 3x3 stem, one BasicBlock per stage, global
    average pool, fc. Same module names as torchvision's (layerN, fc)."""

    def __init__(self, num_classes, widths=(16, 32, 64)):
        super().__init__()
        from torchvision.models.resnet import BasicBlock
        self.conv1 = nn.Conv2d(3, widths[0], 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        layers, cin = [], widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            down = None
            if stride != 1 or cin != w:
                down = nn.Sequential(nn.Conv2d(cin, w, 1, stride=stride, bias=False), nn.BatchNorm2d(w))
            layers.append(nn.Sequential(BasicBlock(cin, w, stride=stride, downsample=down)))
            cin = w
        self.layer1, self.layer2, self.layer3 = layers
        self.fc = nn.Linear(cin, num_classes)

    def features(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)

    def forward(self, x):
        return self.fc(self.features(x))


def build_model(arch, num_classes):
    """(model, residual blocks for activation checkpointing)."""
    if arch == "tiny":
        m = TinyResNet(num_classes)
    else:
        import torchvision
        m = torchvision.models.resnet50(weights=None, num_classes=num_classes)
    blocks = [b for name, layer in m.named_children() if name.startswith("layer") for b in layer]
    return m, blocks


def main():
    p = tc.arg_parser(__doc__, DEFAULTS)
    p.add_argument("--arch", choices=("resnet50", "tiny"), default=None)
    p.add_argument("--pretrained", default="", help="on-site weights file (never downloaded)")
    p.add_argument("--image-size", type=int, default=None, help="default 32 (tiny) / 224 (full)")
    p.add_argument("--classes", type=int, default=6, help="classes in synthetic mode")
    ctx = tc.start(p)
    a = ctx.args
    arch = a.arch or ("tiny" if a.size == "tiny" else "resnet50")
    size = a.image_size or (32 if a.size == "tiny" else 224)
    if ctx.synthetic:
        base = tc.SyntheticImages(512 if a.size == "tiny" else 4096, a.classes, size, a.seed)
        classes = ["synthetic-%d" % i for i in range(a.classes)]
    else:
        base = tc.ImageFolder(ctx.data, size)
        classes = base.classes
    train_idx, val_idx = tc.stratified_split(base.labels, a.val_fraction, a.seed)
    ctx.log("data: %s, %d classes, %d train / %d validation images at %dx%d"
            % ("synthetic" if ctx.synthetic else ctx.data, len(classes), len(train_idx),
               len(val_idx), size, size))

    model, blocks = build_model(arch, len(classes))
    if a.pretrained and ctx.resume_state() is None:
        dropped = tc.load_pretrained(model, a.pretrained, drop_prefixes=("fc.",))
        ctx.log("loaded pretrained weights from %s%s" % (
            a.pretrained, " (re-initialised %s for %d classes)" % (", ".join(dropped), len(classes))
            if dropped else ""))

    def loss_fn(m, batch):
        x, y = batch
        return F.cross_entropy(m(x), y)

    def eval_batch(m, batch):
        x, y = batch
        logits = m(x).float()
        return {"loss": F.cross_entropy(logits, y, reduction="none"),
                "correct": (logits.argmax(1) == y).float()}

    def eval_finish(o):
        return {"val_loss": o["loss"].mean(), "val_acc": o["correct"].mean()}

    def finish(module, summary):
        tc.atomic_json({"classes": classes, "arch": arch, "image_size": size,
                        "normalize": "rgb / 127.5 - 1"}, os.path.join(ctx.output, "classes.json"))

    tc.train(ctx, model, tc.Subset(base, train_idx), loss_fn,
             val_set=tc.Subset(base, val_idx), eval_batch=eval_batch, eval_finish=eval_finish,
             blocks=blocks, block_names="%d residual blocks of layer1..layer%d" % (
                 len(blocks), 3 if arch == "tiny" else 4),
             extra_state={"classes": classes, "arch": arch, "image_size": size}, finish=finish)
    return 0


if __name__ == "__main__":
    tc.exit_process(main())
