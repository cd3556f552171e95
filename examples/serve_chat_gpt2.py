#!/usr/bin/env python3
"""Model server for the chatbot chat_gpt2.py trains (kind chat).

Runs as a deployment's replica (docs/serving.md, "The model server"); the
env, routes, batching and lines are trainyard_serve.py's. The model is
chat_gpt2.py's own GPT class, loaded from either:
  - an output directory (TRAINYARD_MODEL_PATH a directory): config.json
    (the model config and the tokenizer) and model.pt (the state_dict),
    both of which must be in the manifest;
  - a checkpoint file (TRAINYARD_MODEL_PATH a file): trainyard_common's
    checkpoint dict, its "model" the state_dict and its extra state's
    "config" the model config.

Prompt: the question is the last user message (/v1/chat/completions) or
"prompt" (/v1/completions); the model sees "<|endoftext|>" + its UTF-8 bytes
(the first n_ctx/2 of them) + "<|sep|>", exactly as chat_gpt2.py builds its
sample, and answers until it produces <|endoftext|>. prompt_tokens and
completion_tokens count token ids (<|endoftext|> not counted in the answer).
  temperature 0 (default): greedy, the text GPT.generate gives for the same
      prompt and max_tokens;
  temperature > 0: samples from the softmax of logits / temperature over
      the bytes and <|endoftext|> (nucleus-cut at top_p), from a generator
      seeded by "seed" when given (the same seed: the same text);
  max_tokens (default 64) is capped at n_ctx; "stop" strings end the text
      before the first one.

Batching: a batch's requests generate together, one token per request per
step. At each step the requests whose current window (the last n_ctx ids)
has the same length run as one forward pass of shape [requests, length];
each row gives the same logits as that request alone (no padding, which
would change the attention's softmax sums), so batched answers equal
one-at-a-time answers. At start the server checks this on the loaded model
and device (a batched forward against single ones, bit for bit); where it
does not hold (some GPU kernels choose their reduction order by batch
size), every request runs alone and the log says so.

By hand: examples/README.md, "Model servers".
"""
import dataclasses
import os

import torch

import trainyard_serve as ts
from chat_gpt2 import EOT, GPT, SEP, GPTConfig

# What GPT.generate chooses among: the bytes and <|endoftext|>.
CHOICES = 256 + 1


def prompt_ids(question, n_ctx):
    """chat_gpt2.py's sample prompt: <|endoftext|> question <|sep|>."""
    return [EOT] + list(question.encode("utf-8"))[: n_ctx // 2] + [SEP]


class Chat(ts.Model):
    kind = "chat"

    def load(self, files):
        if files.is_dir:
            meta = files.json("config.json")
            tok = meta.get("tokenizer", {})
            if tok.get("type") != "bytes" or tok.get("eot") != EOT or tok.get("sep") != SEP:
                raise ValueError("config.json names another tokenizer: %r" % (tok,))
            config, state = meta["model"], torch.load(files.path("model.pt"), map_location="cpu")
        else:
            ck = torch.load(files.single(), map_location="cpu")
            if not isinstance(ck, dict) or "model" not in ck or "config" not in ck.get("extra", {}):
                raise ValueError("%s is not a chat_gpt2.py checkpoint (no model or extra config)" % files.single())
            config, state = ck["extra"]["config"], ck["model"]
        cfg = GPTConfig(**config)
        self.model = GPT(cfg)
        self.model.load_state_dict(state)
        use_cuda = torch.cuda.is_available() and os.environ.get("CUDA_VISIBLE_DEVICES", "") != ""
        self.device = torch.device("cuda", 0) if use_cuda else torch.device("cpu")
        self.model.to(self.device).eval()
        self.n_ctx = cfg.n_ctx
        self.max_tokens_cap = cfg.n_ctx
        self.exact_batches = self._rows_independent()
        print("model %s (%d parameters) on %s; %s" % (
            dataclasses.asdict(cfg), sum(p.numel() for p in self.model.parameters()), self.device,
            "requests of equal length run batched" if self.exact_batches else
            "a batched forward differs from single ones here: every request runs alone"), flush=True)

    @torch.no_grad()
    def _rows_independent(self):
        g = torch.Generator()
        g.manual_seed(1)
        for length in (1, 7, min(33, self.n_ctx)):
            x = torch.randint(0, CHOICES, (5, length), generator=g).to(self.device)
            batched = self.model(x)[:, -1]
            for i in range(x.shape[0]):
                if not torch.equal(self.model(x[i:i + 1])[0, -1], batched[i]):
                    return False
        return True

    def generate_batch(self, works):
        live = []
        for w in works:
            ids = prompt_ids(w.prompt, self.n_ctx)
            w.prompt_tokens = len(ids)
            gen = None
            if w.temperature > 0:
                gen = torch.Generator(device=self.device)
                if w.seed is not None:
                    gen.manual_seed(w.seed % (1 << 63))
                else:
                    gen.seed()
            live.append((w, ids, gen))
        if not self.exact_batches:
            for item in live:
                self._run([item])
        else:
            self._run(live)

    @torch.no_grad()
    def _run(self, live):
        while live:
            groups = {}
            for item in live:
                groups.setdefault(min(len(item[1]), self.n_ctx), []).append(item)
            for items in groups.values():
                x = torch.tensor([ids[-self.n_ctx:] for _, ids, _ in items], device=self.device)
                logits = self.model(x)
                for row, (w, ids, gen) in enumerate(items):
                    nxt = self._choose(logits[row, -1, :CHOICES], w, gen)
                    if nxt == EOT:
                        w.end("stop")
                    else:
                        ids.append(nxt)
                        w.push(bytes((nxt,)))
            live = [item for item in live if not item[0].finished]

    @staticmethod
    def _choose(logits, w, gen):
        if w.temperature == 0:
            return int(logits.argmax())  # as GPT.generate: the first maximum
        probs = torch.softmax(logits.float() / w.temperature, dim=-1)
        if w.top_p < 1.0:
            p, order = probs.sort(descending=True)
            keep = p.cumsum(0) - p < w.top_p  # the smallest head reaching top_p
            probs = torch.zeros_like(probs).scatter_(0, order[keep], p[keep])
        return int(torch.multinomial(probs, 1, generator=gen))


if __name__ == "__main__":
    ts.main(Chat())
