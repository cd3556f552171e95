#!/usr/bin/env python3
"""Benchmark: GPT-2 training throughput in sequences per second.

Trains the GPT-2 decoder of chat_gpt2.py with GPT-2 small's config (12
layers, width 768, 12 heads, the 50,257-token vocabulary: 124,439,808
parameters) on one synthetic batch of random tokens at sequence length 1024
(--seq-len), made on the device once and used every step, so that the
figure is the model's and the strategy's (the seed's table: GPT-2, 180
seq/s with DDP on 4x A100). Every metric line carries samples_per_sec, the
same figure as seq_per_sec, and tokens_per_sec; metrics.json's
samples_per_sec_mean leaves out the first two steps (warm-up).

Sizes:
  --size full  GPT-2 small, sequence length 1024
  --size tiny  2 layers, width 64, 4 heads, vocabulary 512, sequence
               length 64, for CPU CI

Flags: --steps, --size, --batch (global), --lr, --checkpoint-every,
--eval-every (no validation here), --data (ignored: always synthetic),
--output, --seed, --seq-len, --attn manual|sdpa; trainyard_common.py
describes the env (the plan) and the lines it prints. Activation
checkpointing wraps each decoder block.

Two CPU ranks by hand:
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29518 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 \\
    python3 examples/bench_gpt2.py --size tiny --steps 20 &
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29518 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 \\
    python3 examples/bench_gpt2.py --size tiny --steps 20
"""
import dataclasses
import sys

import torch
import torch.nn.functional as F

import trainyard_common as tc
from chat_gpt2 import GPT, GPTConfig

DEFAULTS = {
    "tiny": {"steps": 20, "batch": 16, "lr": 1e-3, "checkpoint_every": 0},
    "full": {"steps": 50, "batch": 32, "lr": 1e-4, "checkpoint_every": 0, "weight_decay": 0.1,
             "warmup": 0, "schedule": "constant"},
}


class SyntheticTokens:
    def __init__(self, vocab, seq_len, seed):
        self.vocab, self.seq_len, self.seed = vocab, seq_len, seed

    def __len__(self):
        return 1 << 20

    def fixed_batch(self, micro, device):
        g = torch.Generator()
        g.manual_seed(self.seed + 7)
        return torch.randint(0, self.vocab, (micro, self.seq_len + 1), generator=g).to(device)


def main():
    p = tc.arg_parser(__doc__, DEFAULTS)
    p.add_argument("--seq-len", type=int, default=None, help="default 64 (tiny) / 1024 (full)")
    p.add_argument("--attn", choices=("manual", "sdpa"), default="manual",
                   help="sdpa: F.scaled_dot_product_attention (PyTorch >= 2.0)")
    ctx = tc.start(p)
    a = ctx.args
    if a.attn == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        tc.fail("--attn sdpa needs PyTorch >= 2.0 (this is %s)" % torch.__version__)
    seq = a.seq_len or (64 if a.size == "tiny" else 1024)
    if a.size == "tiny":
        cfg = GPTConfig(vocab_size=512, n_ctx=max(64, seq), n_layer=2, n_embd=64, n_head=4, dropout=0.0,
                        attn=a.attn)
    else:
        cfg = GPTConfig(vocab_size=50257, n_ctx=max(1024, seq), dropout=0.0, attn=a.attn)
    model = GPT(cfg)
    ctx.log("benchmark: GPT-2 %s, %d parameters (analytic %d), sequence length %d, synthetic tokens"
            % (dataclasses.asdict(cfg), sum(p.numel() for p in model.parameters()), cfg.param_count(), seq))

    def loss_fn(m, tokens):
        logits = m(tokens[:, :-1])
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))

    s = tc.train(ctx, model, SyntheticTokens(cfg.vocab_size, seq, a.seed), loss_fn, blocks=list(model.h),
                 block_names="%d decoder blocks" % len(model.h),
                 rates={"seq_per_sec": 1, "tokens_per_sec": seq})
    ctx.log("throughput: %s seq/s (mean after warm-up, global batch %d, sequence length %d)"
            % (s["samples_per_sec_mean"], ctx.global_batch, seq))
    return 0


if __name__ == "__main__":
    tc.exit_process(main())
