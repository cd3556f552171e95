#!/usr/bin/env python3
"""Chinese review / title text classification (e-commerce).

Trains a small Transformer encoder on a text-lines dataset: UTF-8 lines
"label<TAB>text" (examples/README.md; a file, or a directory whose *.tsv and
*.txt files are read in name order), split per label deterministically into
train and validation. Tokens are characters (--tokenizer char: the
--vocab-size most frequent characters of the training split, the rest
<unk>) or UTF-8 bytes (--tokenizer byte: 256 symbols, nothing to learn
beforehand). The encoder's mean-pooled output feeds a linear classifier.
Validation reports val_loss and val_acc. Without data it trains on
synthetic sentences whose label sets their character mix.

Sizes:
  --size full  6 layers, width 384, 6 heads, FFN 1536, 256 tokens, dropout 0.1
  --size tiny  2 layers, width 64, 4 heads, FFN 128, 64 tokens, no dropout,
               for CPU CI
  --max-len N and --dropout P override.

Flags: --steps, --size, --batch (global), --lr, --checkpoint-every,
--eval-every, --data, --output, --seed, --tokenizer, --vocab-size,
--max-len, --dropout; trainyard_common.py describes the env (the plan) and the lines
it prints. Activation checkpointing wraps each encoder layer. Outputs:
model.pt, vocab.json (labels, tokenizer, characters), metrics.json.

Two CPU ranks by hand:
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29515 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/review_textcls.py --size tiny --steps 40 &
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29515 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/review_textcls.py --size tiny --steps 40
"""
import collections
import functools
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import trainyard_common as tc

DEFAULTS = {
    "tiny": {"steps": 60, "batch": 32, "lr": 2e-3, "checkpoint_every": 20, "eval_every": 20},
    "full": {"steps": 5000, "batch": 128, "lr": 5e-4, "checkpoint_every": 500, "eval_every": 500,
             "weight_decay": 0.01, "clip": 1.0},
}
SIZES = {"tiny": dict(layers=2, width=64, heads=4, ffn=128, max_len=64, dropout=0.0),
         "full": dict(layers=6, width=384, heads=6, ffn=1536, max_len=256, dropout=0.1)}
PAD, UNK = 0, 1


def read_text_lines(path):
    """[(label, text)] from "label<TAB>text" lines; other lines are counted."""
    files = [path]
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith((".tsv", ".txt")))
    elif not os.path.isfile(path):
        tc.fail("data %s: no such file or directory (text-lines wants label<TAB>text lines)" % path)
    rows, bad = [], 0
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                line = line.rstrip("\r\n")
                label, sep, text = line.partition("\t")
                if not sep or not label.strip() or not text.strip():
                    bad += line.strip() != ""
                    continue
                rows.append((label.strip(), text.strip()))
    if not rows:
        tc.fail("data %s: no label<TAB>text lines found" % path)
    return rows, bad


def synthetic_rows(n, classes, seed):
    """Class c draws mostly from its own 40 CJK characters, some from all."""
    g = torch.Generator()
    g.manual_seed(seed + 5)
    base = 0x4E00
    rows = []
    for i in range(n):
        c = i % classes
        k = int(torch.randint(8, 40, (), generator=g))
        own = torch.randint(0, 40, (k,), generator=g) + 40 * c
        common = torch.randint(0, 40 * classes, (k,), generator=g)
        pick = torch.where(torch.rand(k, generator=g) < 0.6, own, common)
        rows.append(("class-%d" % c, "".join(chr(base + int(v)) for v in pick)))
    return rows


class Tokenizer:
    def __init__(self, kind, chars=()):
        self.kind = kind
        self.chars = list(chars)
        self.index = {ch: i + 2 for i, ch in enumerate(self.chars)}
        self.size = 258 if kind == "byte" else len(self.chars) + 2

    @classmethod
    def fit(cls, kind, texts, vocab_size):
        if kind == "byte":
            return cls("byte")
        counts = collections.Counter(ch for t in texts for ch in t)
        chars = [ch for ch, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:vocab_size - 2]]
        return cls("char", chars)

    def encode(self, text, max_len):
        if self.kind == "byte":
            ids = [b + 2 for b in text.encode("utf-8")]
        else:
            ids = [self.index.get(ch, UNK) for ch in text]
        return ids[:max_len] or [UNK]


class TextSet(torch.utils.data.Dataset):
    def __init__(self, rows, labels, tok, max_len):
        self.items = [(torch.tensor(tok.encode(t, max_len)), labels[y]) for y, t in rows]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def make_collate(max_len):
    """Batches padded to max_len, not to their longest text: every step then
    has the same shape, so the memory a sample needs (what the advisor plans
    from one measured sample) does not depend on which texts meet in a batch."""
    return functools.partial(collate, max_len=max_len)


def collate(items, max_len):
    x = torch.full((len(items), max_len), PAD, dtype=torch.long)
    for i, (ids, _) in enumerate(items):
        x[i, :len(ids)] = ids
    return x, torch.tensor([y for _, y in items])


class EncoderLayer(nn.Module):
    """Pre-norm Transformer encoder layer (self-attention over the unpadded
    tokens, GELU FFN). Written out rather than nn.TransformerEncoderLayer,
    whose inference fast path in PyTorch 1.13 breaks under CPU autocast."""

    def __init__(self, width, heads, ffn, dropout):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, ffn)
        self.fc2 = nn.Linear(ffn, width)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, pad):
        b, n, w = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / (w // self.heads) ** 0.5
        att = att.masked_fill(pad[:, None, None, :], float("-inf")).softmax(-1)
        y = (self.drop(att) @ v).transpose(1, 2).reshape(b, n, w)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))


class Classifier(nn.Module):
    def __init__(self, vocab, classes, layers, width, heads, ffn, max_len, dropout):
        super().__init__()
        self.tok = nn.Embedding(vocab, width, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, width)
        self.layers = nn.ModuleList(EncoderLayer(width, heads, ffn, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        pad = x == PAD
        h = self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))[None]
        for layer in self.layers:
            h = layer(h, pad)
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        pooled = (self.norm(h) * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.head(pooled)


def main():
    p = tc.arg_parser(__doc__, DEFAULTS)
    p.add_argument("--tokenizer", choices=("char", "byte"), default="char")
    p.add_argument("--vocab-size", type=int, default=None, help="char tokenizer: default 3000 / 8000")
    p.add_argument("--max-len", type=int, default=None, help="tokens per text, default 64 / 256")
    p.add_argument("--dropout", type=float, default=None, help="default 0 (tiny) / 0.1 (full)")
    p.add_argument("--classes", type=int, default=4, help="classes in synthetic mode")
    ctx = tc.start(p)
    a = ctx.args
    cfg = dict(SIZES[a.size])
    for k in ("max_len", "dropout"):
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    rows, bad = (synthetic_rows(1024, a.classes, a.seed), 0) if ctx.synthetic else read_text_lines(ctx.data)
    labels = {y: i for i, y in enumerate(sorted({y for y, _ in rows}))}
    train_idx, val_idx = tc.stratified_split([y for y, _ in rows], a.val_fraction, a.seed)
    tok = Tokenizer.fit(a.tokenizer, [rows[i][1] for i in train_idx],
                        a.vocab_size or (3000 if a.size == "tiny" else 8000))
    resume = ctx.resume_state()
    if resume is not None and resume.get("extra", {}).get("chars") not in (None, tok.chars):
        tc.fail("TRAINYARD_RESUME_FROM=%s was trained with another vocabulary (other data?)" % ctx.resume_from)
    ctx.log("data: %s, %d labels %s, %d train / %d validation lines%s, %s tokenizer with %d symbols"
            % ("synthetic" if ctx.synthetic else ctx.data, len(labels), sorted(labels), len(train_idx),
               len(val_idx), " (%d malformed lines skipped)" % bad if bad else "", tok.kind, tok.size))
    model = Classifier(tok.size, len(labels), **cfg)

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
        tc.atomic_json({"labels": sorted(labels, key=labels.get), "tokenizer": tok.kind,
                        "chars": "".join(tok.chars), "pad": PAD, "unk": UNK,
                        "byte_offset": 2 if tok.kind == "byte" else None, "config": cfg},
                       os.path.join(ctx.output, "vocab.json"))

    tc.train(ctx, model, TextSet([rows[i] for i in train_idx], labels, tok, cfg["max_len"]), loss_fn,
             val_set=TextSet([rows[i] for i in val_idx], labels, tok, cfg["max_len"]),
             eval_batch=eval_batch, eval_finish=eval_finish, collate=make_collate(cfg["max_len"]),
             blocks=list(model.layers), block_names="%d encoder layers" % len(model.layers),
             extra_state={"labels": sorted(labels, key=labels.get), "chars": tok.chars,
                          "tokenizer": tok.kind}, finish=finish)
    return 0


if __name__ == "__main__":
    tc.exit_process(main())
