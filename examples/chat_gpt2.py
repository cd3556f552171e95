#!/usr/bin/env python3
"""Customer-service chatbot fine-tune: a GPT-2-family decoder in plain PyTorch.

Trains a GPT-2 decoder (learned positions, pre-norm blocks, GELU MLP, tied
input/output embedding; the layout of OpenAI's GPT-2) on a chat-jsonl
dataset: one JSON object per line with "question" and "answer" strings
(examples/README.md; a file, or a directory whose *.jsonl files are read in
name order), split deterministically into train and validation. The
tokenizer is byte-level and needs no files: UTF-8 bytes 0..255, 256
<|endoftext|>, 257 <|sep|>, 258 padding. A pair is "<|endoftext|>question
<|sep|>answer<|endoftext|>" and the loss counts the answer and its final
<|endoftext|> only. Validation reports val_loss (nats per answer token).
Without data it trains on synthetic pairs (the answer is the question
reversed).

Sizes:
  --size full  GPT-2 small: 12 layers, width 768, 12 heads, 1024 positions
  --size tiny  2 layers, width 64, 4 heads, 128 positions, for CPU CI
  --pretrained PATH starts from an on-site model.pt of the same config (an
  earlier run of this script); nothing is downloaded.

Flags: --steps, --size, --batch (global), --lr, --checkpoint-every,
--eval-every, --data, --output, --seed, --pretrained, --dropout, --attn;
trainyard_common.py describes the env (the plan) and the lines it prints.
Activation checkpointing wraps each decoder block. Outputs, for a later
serving step: model.pt (the state_dict), config.json (the model config and
the tokenizer), metrics.json; the log ends with a sample answer.

Two CPU ranks by hand:
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29516 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/chat_gpt2.py --size tiny --steps 40 &
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29516 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/chat_gpt2.py --size tiny --steps 40
"""
import dataclasses
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import trainyard_common as tc

DEFAULTS = {
    "tiny": {"steps": 60, "batch": 16, "lr": 3e-3, "checkpoint_every": 20, "eval_every": 20},
    "full": {"steps": 3000, "batch": 32, "lr": 1e-4, "checkpoint_every": 300, "eval_every": 300,
             "weight_decay": 0.1, "clip": 1.0},
}
EOT, SEP, PAD = 256, 257, 258
BYTE_VOCAB = 259


@dataclasses.dataclass
class GPTConfig:
    vocab_size: int = BYTE_VOCAB
    n_ctx: int = 1024
    n_layer: int = 12
    n_embd: int = 768
    n_head: int = 12
    dropout: float = 0.1
    attn: str = "manual"  # manual (saves the s x s scores) | sdpa (torch >= 2.0)

    @staticmethod
    def sized(size, **over):
        base = dict(n_ctx=1024, n_layer=12, n_embd=768, n_head=12) if size == "full" else \
            dict(n_ctx=128, n_layer=2, n_embd=64, n_head=4)
        base.update({k: v for k, v in over.items() if v is not None})
        return GPTConfig(**base)

    def param_count(self):
        """Analytic: embeddings V*d + T*d, per block 12d^2 + 13d, final norm 2d."""
        d = self.n_embd
        return self.vocab_size * d + self.n_ctx * d + self.n_layer * (12 * d * d + 13 * d) + 2 * d


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd)
        self.c_proj = nn.Linear(c.n_embd, c.n_embd)
        self.n_head, self.dropout, self.attn = c.n_head, c.dropout, c.attn
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).view(b, t, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        if self.attn == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                               is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.n_head))
            # An additive causal mask, made here: autograd saves nothing for
            # an add, and gloo cannot broadcast a bool buffer.
            causal = torch.full((t, t), float("-inf"), device=x.device, dtype=att.dtype).triu(1)
            att = (att + causal).softmax(dim=-1)
            y = self.drop(att) @ v
        return self.drop(self.c_proj(y.transpose(1, 2).reshape(b, t, d)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd)
        self.attn = Attention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd)
        self.c_fc = nn.Linear(c.n_embd, 4 * c.n_embd)
        self.c_proj = nn.Linear(4 * c.n_embd, c.n_embd)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.n_ctx, c.n_embd)
        self.drop = nn.Dropout(c.dropout)
        self.h = nn.ModuleList(Block(c) for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.n_embd)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # GPT-2's scaled residual init
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * c.n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))[None])
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()  # tied output embedding

    @torch.no_grad()
    def generate(self, prompt_ids, max_new, stop=EOT):
        """Greedy continuation of one prompt (a list of token ids)."""
        ids = list(prompt_ids)
        for _ in range(max_new):
            x = torch.tensor([ids[-self.config.n_ctx:]], device=self.wte.weight.device)
            nxt = int(self(x)[0, -1, :256 + 1].argmax())  # bytes or <|endoftext|>
            if nxt == stop:
                break
            ids.append(nxt)
        return ids[len(prompt_ids):]


def encode_pair(q, a, n_ctx):
    """(input ids, target ids with -100 where no loss is taken)."""
    qb = list(q.encode("utf-8"))[: n_ctx // 2]
    ab = list(a.encode("utf-8"))
    seq = ([EOT] + qb + [SEP] + ab + [EOT])[: n_ctx + 1]
    x, y = seq[:-1], seq[1:]
    y = [-100 if i < len(qb) + 1 else tok for i, tok in enumerate(y)]
    return torch.tensor(x), torch.tensor(y)


def read_chat_jsonl(path):
    files = [path]
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".jsonl"))
    elif not os.path.isfile(path):
        tc.fail("data %s: no such file or directory (chat-jsonl wants {\"question\",\"answer\"} lines)" % path)
    pairs, bad = [], 0
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    o = json.loads(line)
                    q, a = o["question"], o["answer"]
                    if not isinstance(q, str) or not isinstance(a, str) or not a:
                        raise ValueError
                except (ValueError, KeyError, TypeError):
                    bad += 1
                    continue
                pairs.append((q, a))
    if not pairs:
        tc.fail("data %s: no {\"question\",\"answer\"} lines found" % path)
    return pairs, bad


def synthetic_pairs(n, seed):
    g = torch.Generator()
    g.manual_seed(seed + 11)
    words = ["订单", "退货", "发票", "快递", "尺码", "颜色", "优惠", "库存", "保修", "安装"]
    out = []
    for _ in range(n):
        k = int(torch.randint(2, 6, (), generator=g))
        q = "".join(words[int(i)] for i in torch.randint(0, len(words), (k,), generator=g))
        out.append((q, q[::-1]))
    return out


class PairSet(torch.utils.data.Dataset):
    def __init__(self, pairs, n_ctx):
        self.items = [encode_pair(q, a, n_ctx) for q, a in pairs]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(items):
    n = max(len(x) for x, _ in items)
    x = torch.full((len(items), n), PAD, dtype=torch.long)
    y = torch.full((len(items), n), -100, dtype=torch.long)
    for i, (xi, yi) in enumerate(items):
        x[i, :len(xi)], y[i, :len(yi)] = xi, yi
    return x, y


def main():
    p = tc.arg_parser(__doc__, DEFAULTS)
    p.add_argument("--pretrained", default="", help="on-site model.pt of the same config")
    p.add_argument("--dropout", type=float, default=None, help="default 0 (tiny) / 0.1 (full)")
    p.add_argument("--attn", choices=("manual", "sdpa"), default="manual",
                   help="sdpa: F.scaled_dot_product_attention (PyTorch >= 2.0)")
    ctx = tc.start(p)
    a = ctx.args
    if a.attn == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        tc.fail("--attn sdpa needs PyTorch >= 2.0 (this is %s)" % torch.__version__)
    cfg = GPTConfig.sized(a.size, dropout=a.dropout if a.dropout is not None else
                          (0.0 if a.size == "tiny" else 0.1), attn=a.attn)
    pairs, bad = (synthetic_pairs(1024, a.seed), 0) if ctx.synthetic else read_chat_jsonl(ctx.data)
    train_idx, val_idx = tc.stratified_split([0] * len(pairs), a.val_fraction, a.seed)
    ctx.log("data: %s, %d train / %d validation pairs%s; model %s (%d parameters)"
            % ("synthetic" if ctx.synthetic else ctx.data, len(train_idx), len(val_idx),
               " (%d malformed lines skipped)" % bad if bad else "", dataclasses.asdict(cfg),
               cfg.param_count()))
    model = GPT(cfg)
    if a.pretrained and ctx.resume_state() is None:
        tc.load_pretrained(model, a.pretrained)
        ctx.log("loaded pretrained weights from %s" % a.pretrained)

    def loss_fn(m, batch):
        x, y = batch
        logits = m(x)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.view(-1), ignore_index=-100)

    def eval_batch(m, batch):
        x, y = batch
        logits = m(x).float()
        nll = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1), ignore_index=-100,
                              reduction="none").view(y.shape)
        return {"nll": nll.sum(1), "tokens": (y != -100).sum(1).float()}

    def eval_finish(o):
        return {"val_loss": o["nll"].sum() / o["tokens"].sum().clamp(min=1)}

    def finish(module, summary):
        tc.atomic_json({"model": dataclasses.asdict(cfg), "param_count": cfg.param_count(),
                        "tokenizer": {"type": "bytes", "eot": EOT, "sep": SEP, "pad": PAD},
                        "format": "<|endoftext|>question<|sep|>answer<|endoftext|>"},
                       os.path.join(ctx.output, "config.json"))
        module.eval()
        q = pairs[val_idx[0]][0] if val_idx else pairs[0][0]
        prompt = [EOT] + list(q.encode("utf-8"))[: cfg.n_ctx // 2] + [SEP]
        ans = bytes(t for t in module.generate(prompt, 48) if t < 256).decode("utf-8", errors="replace")
        summary["sample"] = {"question": q, "answer": ans}
        print("sample: %s -> %s" % (q, ans), flush=True)

    tc.train(ctx, model, PairSet([pairs[i] for i in train_idx], cfg.n_ctx), loss_fn,
             val_set=PairSet([pairs[i] for i in val_idx], cfg.n_ctx), eval_batch=eval_batch,
             eval_finish=eval_finish, collate=collate, blocks=list(model.h),
             block_names="%d decoder blocks" % len(model.h),
             extra_state={"config": dataclasses.asdict(cfg)}, finish=finish)
    return 0


if __name__ == "__main__":
    tc.exit_process(main())
