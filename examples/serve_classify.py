#!/usr/bin/env python3
"""Model server for the text classifier review_textcls.py trains (kind classify).

Runs as a deployment's replica (docs/serving.md, "The model server"); the
env, routes, batching and lines are trainyard_serve.py's. The model is
review_textcls.py's own Classifier and Tokenizer, loaded from either:
  - an output directory: vocab.json (labels, tokenizer, characters, model
    config) and model.pt (the state_dict), both in the manifest;
  - a checkpoint file: its "model" state_dict, the labels, characters and
    tokenizer of its extra state, and the model config its "args" give
    (--size, --max-len, --dropout), as review_textcls.py computes it.

POST /v1/predict {"inputs": ["text", ...]} (or one string) answers
{"object": "list", "data": [{"index", "label", "score", "scores": {label:
probability}}], "usage"}: the label of the highest probability, its
probability, and every label's. prompt_tokens counts the token ids the
texts became (each cut to the model's max_len, as in training).

Batching: the texts of every request in a batch run as one forward pass.
Each text is padded to max_len, the shape it had in training and in
validation, so its answer does not depend on the texts it meets in a batch.
"""
import os

import torch

import trainyard_serve as ts
from review_textcls import PAD, SIZES, Classifier, Tokenizer


class Classify(ts.Model):
    kind = "classify"

    def load(self, files):
        if files.is_dir:
            vocab = files.json("vocab.json")
            labels, kind, chars, cfg = vocab["labels"], vocab["tokenizer"], list(vocab["chars"]), vocab["config"]
            state = torch.load(files.path("model.pt"), map_location="cpu")
        else:
            ck = torch.load(files.single(), map_location="cpu")
            extra, args = ck.get("extra", {}), ck.get("args", {})
            if "labels" not in extra or "tokenizer" not in extra or "size" not in args:
                raise ValueError("%s is not a review_textcls.py checkpoint" % files.single())
            labels, kind, chars = extra["labels"], extra["tokenizer"], extra.get("chars") or []
            cfg = dict(SIZES[args["size"]])
            for k in ("max_len", "dropout"):
                if args.get(k) is not None:
                    cfg[k] = args[k]
            state = ck["model"]
        self.labels = list(labels)
        self.tok = Tokenizer(kind, chars)
        self.max_len = cfg["max_len"]
        self.model = Classifier(self.tok.size, len(self.labels), **cfg)
        self.model.load_state_dict(state)
        use_cuda = torch.cuda.is_available() and os.environ.get("CUDA_VISIBLE_DEVICES", "") != ""
        self.device = torch.device("cuda", 0) if use_cuda else torch.device("cpu")
        self.model.to(self.device).eval()
        print("classifier: %d labels %s, %s tokenizer, %s, on %s"
              % (len(self.labels), self.labels, kind, cfg, self.device), flush=True)

    @torch.no_grad()
    def predict_batch(self, works):
        ids = [[self.tok.encode(t, self.max_len) for t in w.inputs] for w in works]
        rows = [x for per in ids for x in per]
        x = torch.full((len(rows), self.max_len), PAD, dtype=torch.long)
        for i, r in enumerate(rows):
            x[i, :len(r)] = torch.tensor(r)
        probs = torch.softmax(self.model(x.to(self.device)).float(), dim=-1).cpu()
        at = 0
        for w, per in zip(works, ids):
            out = []
            for p in probs[at:at + len(per)].tolist():
                best = max(range(len(p)), key=p.__getitem__)
                out.append({"label": self.labels[best], "score": p[best],
                            "scores": dict(zip(self.labels, p))})
            at += len(per)
            w.answer(out, sum(len(r) for r in per))


if __name__ == "__main__":
    ts.main(Classify())
