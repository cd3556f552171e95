#!/usr/bin/env python3
"""Product image embedding for classification and retrieval (e-commerce).

Trains an embedding model on an image-folder dataset (DIR/<class>/<image>,
one sub-folder per product class, examples/README.md): a CNN backbone, a
projection to a unit-length embedding, and a cosine classifier (NormFace:
logits = scale x cosine to a learned unit vector per class) trained with
cross-entropy. The same embedding serves classification (the nearest class
vector) and retrieval (the nearest other images). Validation reports
val_loss, val_top1 (the classifier's accuracy) and val_recall_at_<k> for
each --recall-k: the share of validation images whose k nearest other
validation images (cosine) include one of the same class.

Sizes:
  --size full  ResNet-50 trunk (torchvision, weights=None), 256-d
               embedding, 224x224
  --size tiny  the small ResNet of defect_classify.py, 64-d embedding, 32x32
  --image-size N overrides; --pretrained PATH loads on-site backbone weights
  (a torchvision ResNet-50 state_dict or an earlier model.pt; never
  downloaded).

Flags: --steps, --size, --batch (global), --lr, --checkpoint-every,
--eval-every, --data, --output, --seed, --embed-dim, --scale, --recall-k,
--image-size, --pretrained, --classes (synthetic mode); trainyard_common.py
describes the env (the plan) and the lines it prints. Activation
checkpointing wraps each residual block of the backbone. Outputs: model.pt,
classes.json, gallery.pt (the validation embeddings and labels: a retrieval
index), metrics.json.

Two CPU ranks by hand:
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29513 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/product_embed.py --size tiny --steps 40 &
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29513 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/product_embed.py --size tiny --steps 40
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import trainyard_common as tc
from defect_classify import build_model

DEFAULTS = {
    "tiny": {"steps": 60, "batch": 32, "lr": 3e-3, "checkpoint_every": 20, "eval_every": 20},
    "full": {"steps": 3000, "batch": 128, "lr": 1e-3, "checkpoint_every": 300, "eval_every": 300,
             "weight_decay": 0.05},
}


class Embedder(nn.Module):
    def __init__(self, arch, embed_dim, num_classes, scale):
        super().__init__()
        self.backbone, self.blocks = build_model(arch, 1)
        width = self.backbone.fc.in_features
        self.backbone.fc = nn.Identity()
        self.proj = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, embed_dim))
        self.classes = nn.Parameter(torch.randn(num_classes, embed_dim) * 0.1)
        self.scale = scale

    def embed(self, x):
        return F.normalize(self.proj(self.backbone(x)).float(), dim=1)

    def forward(self, x):
        e = self.embed(x)
        return e, self.scale * e @ F.normalize(self.classes.float(), dim=1).t()


def recall_at(emb, labels, k, chunk=1024):
    """Leave-one-out recall@k over emb [N, d] (unit rows), chunk queries at
    a time (the whole N x N similarity would not fit for large sets)."""
    k = min(k, len(labels) - 1)
    hits = 0.0
    for s in range(0, len(labels), chunk):
        sim = emb[s:s + chunk] @ emb.t()
        rows = torch.arange(sim.shape[0])
        sim[rows, rows + s] = -float("inf")  # not itself
        nn_idx = sim.topk(k, dim=1).indices
        hits += float((labels[nn_idx] == labels[s:s + chunk, None]).any(dim=1).sum())
    return hits / len(labels)


def main():
    p = tc.arg_parser(__doc__, DEFAULTS)
    p.add_argument("--embed-dim", type=int, default=None, help="default 64 (tiny) / 256 (full)")
    p.add_argument("--scale", type=float, default=16.0, help="cosine classifier temperature")
    p.add_argument("--recall-k", default="1,5", help="comma-separated k of recall@k")
    p.add_argument("--image-size", type=int, default=None, help="default 32 (tiny) / 224 (full)")
    p.add_argument("--pretrained", default="", help="on-site backbone weights (never downloaded)")
    p.add_argument("--classes", type=int, default=8, help="classes in synthetic mode")
    ctx = tc.start(p)
    a = ctx.args
    ks = [int(k) for k in a.recall_k.split(",") if k.strip()]
    if not ks or min(ks) < 1:
        tc.fail("--recall-k wants positive integers, got %r" % a.recall_k)
    arch = "tiny" if a.size == "tiny" else "resnet50"
    size = a.image_size or (32 if a.size == "tiny" else 224)
    dim = a.embed_dim or (64 if a.size == "tiny" else 256)
    if ctx.synthetic:
        base = tc.SyntheticImages(512 if a.size == "tiny" else 4096, a.classes, size, a.seed)
        classes = ["synthetic-%d" % i for i in range(a.classes)]
    else:
        base = tc.ImageFolder(ctx.data, size)
        classes = base.classes
    train_idx, val_idx = tc.stratified_split(base.labels, a.val_fraction, a.seed)
    ctx.log("data: %s, %d classes, %d train / %d validation images at %dx%d, %d-d embedding"
            % ("synthetic" if ctx.synthetic else ctx.data, len(classes), len(train_idx),
               len(val_idx), size, size, dim))

    model = Embedder(arch, dim, len(classes), a.scale)
    if a.pretrained and ctx.resume_state() is None:
        tc.load_pretrained(model.backbone, a.pretrained, drop_prefixes=("fc.",))
        ctx.log("loaded pretrained backbone weights from %s" % a.pretrained)

    def loss_fn(m, batch):
        x, y = batch
        return F.cross_entropy(m(x)[1], y)

    def eval_batch(m, batch):
        x, y = batch
        e, logits = m(x)
        return {"emb": e, "label": y, "loss": F.cross_entropy(logits, y, reduction="none"),
                "correct": (logits.argmax(1) == y).float()}

    gallery = {}

    def eval_finish(o):
        labels = o["label"].long()
        res = {"val_loss": o["loss"].mean(), "val_top1": o["correct"].mean()}
        for k in ks:
            res["val_recall_at_%d" % k] = recall_at(o["emb"], labels, k)
        gallery.update(emb=o["emb"], label=labels)
        return res

    def finish(module, summary):
        tc.atomic_json({"classes": classes, "image_size": size, "embed_dim": dim,
                        "normalize": "rgb / 127.5 - 1"}, os.path.join(ctx.output, "classes.json"))
        if gallery:
            tc.atomic_torch_save({"embeddings": gallery["emb"], "labels": gallery["label"],
                                  "files": [base.samples[i][0] for i in val_idx]
                                  if not ctx.synthetic else []},
                                 os.path.join(ctx.output, "gallery.pt"))

    tc.train(ctx, model, tc.Subset(base, train_idx), loss_fn,
             val_set=tc.Subset(base, val_idx), eval_batch=eval_batch, eval_finish=eval_finish,
             blocks=model.blocks, block_names="%d residual blocks of the backbone" % len(model.blocks),
             extra_state={"classes": classes, "embed_dim": dim, "image_size": size}, finish=finish)
    return 0


if __name__ == "__main__":
    tc.exit_process(main())
