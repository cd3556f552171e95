#!/usr/bin/env python3
"""Model server of kind echo: no model, for measuring the gateway's own cost.

Same contract, env and helper as every serve script (docs/serving.md, "The
model server"; trainyard_serve.py), the manifest check of whatever files the
version has included; it loads none of them and imports no torch.

  /v1/chat/completions, /v1/completions: the answer is the question (the
      last user message, or "prompt") itself, produced one character per
      step so that streaming has one chunk per character; max_tokens and
      stop apply as for a real model. Tokens are UTF-8 bytes (prompt_tokens:
      the question's bytes, completion_tokens: the answer's).
  /v1/embeddings: per input a vector of DIM floats from SHA-256 chains of
      its UTF-8 bytes, scaled to unit length: the same text, the same vector.

Works go through the same batcher as a real model, so batching costs the
same too.
"""
import hashlib
import math
import struct

import trainyard_serve as ts

DIM = 16


def embedding(text):
    data = text.encode("utf-8")
    raw = b""
    block = hashlib.sha256(data).digest()
    while len(raw) < DIM * 4:
        raw += block
        block = hashlib.sha256(block + data).digest()
    # Unsigned 32-bit words to [-1, 1), then unit length.
    v = [w / 2147483648.0 - 1.0 for w in struct.unpack("<%dI" % DIM, raw[:DIM * 4])]
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


class Echo(ts.Model):
    kind = "echo"

    def load(self, files):
        self.files = files.names()

    def generate_batch(self, works):
        for w in works:
            w.prompt_tokens = len(w.prompt.encode("utf-8"))
        live = [(w, iter(w.prompt)) for w in works]
        # One character of every live Work per step, as a model would.
        while live:
            for w, chars in live:
                ch = next(chars, None)
                if ch is None:
                    w.end("stop")
                    continue
                data = ch.encode("utf-8")
                for i in range(len(data)):
                    # A character's bytes are tokens of their own, counted;
                    # push() hands out whole characters only.
                    if w.push(data[i:i + 1]):
                        break
            live = [(w, chars) for w, chars in live if not w.finished]

    def embed_batch(self, works):
        for w in works:
            w.answer([embedding(t) for t in w.inputs], sum(len(t.encode("utf-8")) for t in w.inputs))


if __name__ == "__main__":
    ts.main(Echo())
