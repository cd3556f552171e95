"""trainyard_common: what every example training script shares.

A script holds its model and its data; this module does the rest:

- the platform's env (docs/agent-protocol.md): RANK, WORLD_SIZE, LOCAL_RANK,
  LOCAL_WORLD_SIZE, MASTER_ADDR/PORT, CUDA_VISIBLE_DEVICES, TRAINYARD_JOB_ID,
  TRAINYARD_CHECKPOINT_DIR, TRAINYARD_RESUME_FROM;
- the advisor's plan env (docs/advisor.md): TRAINYARD_STRATEGY (ddp | zero1 | zero2 |
  zero3 | zero2-offload | zero3-offload | zero3-offload-param | fsdp; default
  ddp), TRAINYARD_MICRO_BATCH, TRAINYARD_GRAD_ACCUM, TRAINYARD_PRECISION
  (fp32 | bf16 | fp16; default fp32), TRAINYARD_ACTIVATION_CHECKPOINTING
  (0 | 1), TRAINYARD_DS_CONFIG (the ds_config.json of the deepspeed
  launcher), TRAINYARD_FSDP_SHARDING (FULL_SHARD | SHARD_GRAD_OP | NO_SHARD);
- the job's data and outputs: TRAINYARD_DATA and TRAINYARD_OUTPUT_DIR, or
  --data / --output (a flag wins over the env). No data, or "synthetic",
  means synthetic-data mode.

How the plan is applied:
- ddp: DistributedDataParallel. zero1: DDP plus
  torch.distributed.optim.ZeroRedundancyOptimizer (each rank keeps the
  optimizer state of its share of the parameters). fsdp: FullyShardedDataParallel,
  only where torch.distributed.fsdp imports. zero2/zero3 and the offload
  variants: DeepSpeed, only where it imports. Where the node lacks what the
  plan needs, the script refuses (a TRAINYARD_PLAN_REFUSED line, the reason
  on stderr, exit 2) instead of silently running another strategy; on
  Debian 12's PyTorch 1.13 FSDP does not import and DeepSpeed is absent.
- micro-batch x gradient accumulation x ranks = the global batch (--batch):
  the plan's env overrides the split; where the global batch cannot be
  reached exactly the log says which batch was reached. DDP's no_sync() on
  all but the last micro-step.
- precision through torch.autocast: bf16 (CPU or CUDA), fp16 with a
  GradScaler (CUDA only), fp32 without autocast.
- activation checkpointing: torch.utils.checkpoint (non-reentrant) around
  the modules the script names.

What it prints (stdout):
  TRAINYARD_PLAN_APPLIED {json}           rank 0, once, plus a human line
  TRAINYARD_METRIC {"step":n,"loss":...}  rank 0, every --metric-every steps
  TRAINYARD_CHECKPOINT {"step":n,"path":"..."}  rank 0, every --checkpoint-every steps

Metric names: loss (mean over ranks of the step's micro-batches),
samples_per_sec (global), lr, the script's validation metrics (val_*), and
the measured sizes the advisor compares its prediction with, per rank (rank
0's): param_bytes, grad_bytes, optim_state_bytes (tensors in the optimizer's
state; under ZeRO-1 this rank's shard, optim_state_bytes_total the sum over
ranks), activation_bytes (tensors autograd saved during the forward of one
micro-batch, counted once per storage, parameters and their autocast copies
left out; under activation checkpointing the checkpointed modules' inputs,
which the recomputation keeps), peak_mem_bytes (CUDA only:
torch.cuda.max_memory_allocated) and rss_peak_bytes (the process's peak
resident set, from getrusage).

Checkpoints (torch.save of a dict: step, model, optimizer, scaler, data
position, the script's extra state) are written to a hidden temporary name
in TRAINYARD_CHECKPOINT_DIR, fsynced and renamed to step-<n>.pt, so a kill
never leaves a half-written file under a checkpoint's name. The optimizer
state of ZeRO-1 is consolidated on rank 0 first. Resuming from
TRAINYARD_RESUME_FROM restores all of it and the step counter continues.
At the end rank 0 writes model.pt and metrics.json into the output
directory (atomically) when there is one.
"""
import argparse
import contextlib
import hashlib
import importlib
import json
import math
import os
import re
import resource
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

PRECISIONS = ("fp32", "bf16", "fp16")
DS_STRATEGY = re.compile(r"^zero([123])(-offload(-param)?)?$")
# The advisor's names (docs/advisor.md, TRAINYARD_STRATEGY of a plan) for the
# strategies this module names otherwise.
ADVISOR_STRATEGY = {"zero3_offload_optimizer": "zero3-offload", "zero3_offload_all": "zero3-offload-param",
                    "fsdp_offload": "fsdp"}


def emit(kind, obj):
    print(kind + " " + json.dumps(obj, separators=(",", ":"), sort_keys=False), flush=True)


def stable_seed(*key):
    """A 63-bit seed from key, the same in every process (str hashes are
    salted per process, so hash() will not do)."""
    return int.from_bytes(hashlib.blake2b(repr(key).encode(), digest_size=8).digest(), "little") >> 1


def refuse(reason, **fields):
    """The plan cannot be applied on this node: say so and exit 2."""
    emit("TRAINYARD_PLAN_REFUSED", dict(fields, reason=reason))
    print("trainyard: refusing the plan: " + reason, file=sys.stderr, flush=True)
    sys.exit(2)


# What must outlive train() until exit_process(): the wrapped model, which
# holds the DDP Reducer and the gloo process group. Freed when train()
# returns, they run the same ~ProcessGroupGloo join that exit_process()
# keeps out of interpreter shutdown, and the rank hangs after "done" (seen
# twice in test_examples on a loaded machine, rank 0's files all written).
_KEEP_UNTIL_EXIT = []


def exit_process(code):
    """End the process with code once stdout and stderr are flushed, without
    running interpreter shutdown. Why: with PyTorch 1.13 and gloo, the DDP
    Reducer can be destroyed during shutdown while the main thread holds the
    GIL; ~ProcessGroupGloo then joins a gloo worker thread that is itself
    waiting for the GIL to free a tensor, and the rank hangs forever after
    "done" (seen in test_examples on a loaded machine; the other rank had
    exited). The wrapped model is kept alive until here (_KEEP_UNTIL_EXIT)
    for the same reason. Every file the script writes is complete and renamed before
    train() returns, so skipping shutdown loses nothing."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if code is None else code if isinstance(code, int) else 1)


def fail(msg):
    """Bad input (data, flags, checkpoint): a clear message and exit 2."""
    print("trainyard: " + msg, file=sys.stderr, flush=True)
    sys.exit(2)


# ---------------------------------------------------------------- arguments

def arg_parser(doc, defaults):
    """The common flags. defaults: {"tiny": {flag: value}, "full": {...}}
    for steps, batch, lr (and any script flag added with default None)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(_size_defaults=defaults)
    p.add_argument("--size", choices=("tiny", "full"), default="full",
                   help="tiny: small enough for CPU CI; full: the real model")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps in all")
    p.add_argument("--batch", type=int, default=None, help="global batch (all ranks, all micro-steps)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=None, help="linear warm-up steps (default steps/20)")
    p.add_argument("--schedule", choices=("cosine", "constant"), default=None,
                   help="after the warm-up: cosine down to 10 %% of --lr, or constant")
    p.add_argument("--optim", choices=("adamw", "adam", "sgd"), default=None)
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--clip", type=float, default=None, help="gradient norm clip (0: none)")
    p.add_argument("--checkpoint-every", type=int, default=None, help="steps between checkpoints (0: none)")
    p.add_argument("--keep-checkpoints", type=int, default=2, help="newest checkpoints kept (0: all)")
    p.add_argument("--eval-every", type=int, default=None, help="steps between evaluations (0: only at the end)")
    p.add_argument("--metric-every", type=int, default=1, help="steps between metric lines")
    p.add_argument("--data", default=None, help="dataset path (default TRAINYARD_DATA; none: synthetic)")
    p.add_argument("--output", default=None, help="output directory (default TRAINYARD_OUTPUT_DIR)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--val-fraction", type=float, default=0.2, help="share of the data held out")
    p.add_argument("--workers", type=int, default=None, help="data loader processes per rank")
    return p


def _resolve_defaults(args):
    table = args._size_defaults.get(args.size, {})
    base = {"steps": 100, "batch": 32, "lr": 1e-3, "optim": "adamw", "weight_decay": 0.0, "schedule": "cosine",
            "clip": 0.0, "checkpoint_every": 100, "eval_every": 0}
    for k, v in list(base.items()) + list(table.items()):
        if getattr(args, k, None) is None:
            setattr(args, k, table.get(k, v))
    del args._size_defaults
    if args.warmup is None:
        args.warmup = args.steps // 20
    for name in ("steps", "batch"):
        if getattr(args, name) < 1:
            fail("--%s must be at least 1" % name)


# ---------------------------------------------------------------- plan

def _env_int(name, lo=1):
    v = os.environ.get(name, "")
    if v == "":
        return None
    try:
        n = int(v)
    except ValueError:
        n = lo - 1
    if n < lo:
        refuse("%s=%r is not an integer >= %d" % (name, v, lo), field=name)
    return n


def split_batch(global_batch, world, micro, accum):
    """(micro, accum, reached, note): micro x accum x world reaches
    global_batch exactly where it can; micro and accum from the plan win."""
    if micro and accum:
        pass
    elif micro:
        accum = max(1, math.ceil(global_batch / (micro * world)))
    elif accum:
        micro = max(1, global_batch // (accum * world))
    else:
        micro, accum = max(1, global_batch // world), 1
    reached = micro * accum * world
    note = "" if reached == global_batch else \
        "global batch %d asked, %d reached (micro-batch %d x accumulation %d x %d ranks)" % (
            global_batch, reached, micro, accum, world)
    return micro, accum, reached, note


class Plan:
    """The advisor's plan as read from the env, checked against this node."""

    def __init__(self, use_cuda):
        self.strategy = os.environ.get("TRAINYARD_STRATEGY", "").strip().lower() or "ddp"
        # TRAINYARD_ENGINE=deepspeed: the plan's ZeRO-1 is DeepSpeed stage 1,
        # not ZeroRedundancyOptimizer.
        self.engine = os.environ.get("TRAINYARD_ENGINE", "").strip().lower() or "torch"
        self.fsdp_cpu_offload = self.strategy == "fsdp_offload" or \
            os.environ.get("TRAINYARD_FSDP_CPU_OFFLOAD", "0").strip() == "1"
        self.strategy = ADVISOR_STRATEGY.get(self.strategy, self.strategy)
        self.micro_env = _env_int("TRAINYARD_MICRO_BATCH")
        self.accum_env = _env_int("TRAINYARD_GRAD_ACCUM")
        self.precision = os.environ.get("TRAINYARD_PRECISION", "").strip().lower() or "fp32"
        ac = os.environ.get("TRAINYARD_ACTIVATION_CHECKPOINTING", "").strip().lower() or "0"
        if ac not in ("0", "1", "true", "false"):
            refuse("TRAINYARD_ACTIVATION_CHECKPOINTING=%r is not 0 or 1" % ac,
                   field="TRAINYARD_ACTIVATION_CHECKPOINTING")
        self.activation_checkpointing = ac in ("1", "true")
        self.ds_config = os.environ.get("TRAINYARD_DS_CONFIG", "")
        self.fsdp_sharding = os.environ.get("TRAINYARD_FSDP_SHARDING", "").strip().upper() or "FULL_SHARD"
        self.backend_kind = "native"  # native DDP, fsdp or deepspeed
        if self.precision not in PRECISIONS:
            refuse("TRAINYARD_PRECISION=%r is not one of %s" % (self.precision, ", ".join(PRECISIONS)),
                   field="TRAINYARD_PRECISION")
        if self.precision == "fp16" and not use_cuda:
            refuse("TRAINYARD_PRECISION=fp16 needs CUDA (loss-scaled fp16 autocast); "
                   "on CPU ask for bf16 or fp32", field="TRAINYARD_PRECISION", missing="cuda")
        if self.precision == "bf16" and use_cuda and not torch.cuda.is_bf16_supported():
            refuse("TRAINYARD_PRECISION=bf16 but this GPU does not support bf16 "
                   "(compute capability below 8.0); ask for fp16 or fp32", field="TRAINYARD_PRECISION")
        if self.engine not in ("torch", "deepspeed"):
            refuse("TRAINYARD_ENGINE=%r is not torch or deepspeed" % self.engine, field="TRAINYARD_ENGINE")
        if self.strategy == "ddp" or (self.strategy == "zero1" and self.engine == "torch"):
            pass
        elif self.strategy == "fsdp":
            self.backend_kind = "fsdp"
            if self.fsdp_sharding not in ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD"):
                refuse("TRAINYARD_FSDP_SHARDING=%r is not FULL_SHARD, SHARD_GRAD_OP or NO_SHARD"
                       % self.fsdp_sharding, field="TRAINYARD_FSDP_SHARDING")
            try:
                # Not "import torch.distributed.fsdp": that would make torch
                # a local name here. On Debian's 1.13 the import fails.
                importlib.import_module("torch.distributed.fsdp")
            except Exception as e:  # any import-time error means "cannot run it"
                refuse("TRAINYARD_STRATEGY=fsdp needs torch.distributed.fsdp, which does not import "
                       "with this PyTorch (%s: %s: %s); ask for ddp or zero1, or run on a node whose "
                       "PyTorch has a working FSDP" % (torch.__version__, type(e).__name__, str(e)[:200]),
                       strategy="fsdp", missing="torch.distributed.fsdp")
        elif DS_STRATEGY.match(self.strategy):
            self.backend_kind = "deepspeed"
            try:
                importlib.import_module("deepspeed")
            except Exception as e:
                refuse("TRAINYARD_STRATEGY=%s needs DeepSpeed, which does not import on this node "
                       "(%s: %s); ask for ddp or zero1, or run on a node with DeepSpeed installed"
                       % (self.strategy, type(e).__name__, str(e)[:200]),
                       strategy=self.strategy, missing="deepspeed")
        else:
            refuse("TRAINYARD_STRATEGY=%r is not one of ddp, zero1, zero2, zero3, zero2-offload, "
                   "zero3-offload, zero3-offload-param, fsdp" % self.strategy, field="TRAINYARD_STRATEGY")


# ---------------------------------------------------------------- context

class Context:
    """Everything a script needs after start(): args, ranks, device, plan,
    data/output paths, and the checkpoint to resume from (loaded lazily)."""

    def __init__(self, args):
        self.args = args
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(self.world)))
        self.job_id = os.environ.get("TRAINYARD_JOB_ID", "")
        self.checkpoint_dir = os.environ.get("TRAINYARD_CHECKPOINT_DIR", "")
        self.resume_from = os.environ.get("TRAINYARD_RESUME_FROM", "")
        data = args.data if args.data is not None else os.environ.get("TRAINYARD_DATA", "")
        self.data = "" if data.strip().lower() in ("", "synthetic") else data
        self.output = args.output if args.output is not None else os.environ.get("TRAINYARD_OUTPUT_DIR", "")
        self.use_cuda = torch.cuda.is_available() and os.environ.get("CUDA_VISIBLE_DEVICES", "") != ""
        self.plan = Plan(self.use_cuda)
        self.micro, self.accum, self.global_batch, self.batch_note = split_batch(
            args.batch, self.world, self.plan.micro_env, self.plan.accum_env)
        if self.use_cuda:
            idx = self.local_rank % torch.cuda.device_count()
            torch.cuda.set_device(idx)
            self.device = torch.device("cuda", idx)
        else:
            self.device = torch.device("cpu")
            if "OMP_NUM_THREADS" not in os.environ:
                # Ranks of one node share its cores instead of each taking all.
                ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
                torch.set_num_threads(max(1, (ncpu or 1) // max(1, self.local_world)))
        if args.workers is None:
            args.workers = 2 if self.use_cuda else 0
        self.backend = "nccl" if self.use_cuda else "gloo"
        self._resume = None
        self.step = 0  # the current optimizer step (1-based while training)
        self.micro_step = 0

    @property
    def synthetic(self):
        return self.data == ""

    @property
    def amp_dtype(self):
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.plan.precision)

    def log(self, msg):
        if self.rank == 0:
            print(msg, flush=True)

    def resume_state(self):
        """The checkpoint named by TRAINYARD_RESUME_FROM, or None."""
        if not self.resume_from:
            return None
        if self._resume is None and self.plan.backend_kind == "deepspeed":
            # A DeepSpeed checkpoint is a directory step-<n> its engine loads.
            m = re.match(r"^step-(\d+)$", os.path.basename(self.resume_from.rstrip("/")))
            if not os.path.isdir(self.resume_from) or not m:
                fail("TRAINYARD_RESUME_FROM=%s: not a DeepSpeed checkpoint directory step-<n>"
                     % self.resume_from)
            self._resume = {"step": int(m.group(1)), "deepspeed": True}
        if self._resume is None:
            if not os.path.isfile(self.resume_from):
                fail("TRAINYARD_RESUME_FROM=%s: no such checkpoint file" % self.resume_from)
            try:
                self._resume = torch.load(self.resume_from, map_location="cpu")
            except Exception as e:
                fail("TRAINYARD_RESUME_FROM=%s: cannot load it: %s" % (self.resume_from, e))
            if not isinstance(self._resume, dict) or "step" not in self._resume:
                fail("TRAINYARD_RESUME_FROM=%s is not a trainyard checkpoint" % self.resume_from)
        return self._resume

    def generator(self, *salt):
        """A CPU generator seeded by (seed, rank, step, micro-step, salt):
        per-step randomness that a resumed run draws again the same way."""
        g = torch.Generator()
        g.manual_seed(stable_seed(self.args.seed, self.rank, self.step, self.micro_step, *salt))
        return g


def start(parser, argv=None):
    """Parse flags, read the env, check the plan (refusing what this node
    cannot run), join the process group, seed. Returns a Context."""
    args = parser.parse_args(argv)
    _resolve_defaults(args)
    ctx = Context(args)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group(ctx.backend, init_method="env://", rank=ctx.rank, world_size=ctx.world)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    print("rank %d of %d ready (local rank %d, backend %s, device %s)" %
          (ctx.rank, ctx.world, ctx.local_rank, ctx.backend, ctx.device), flush=True)
    return ctx


# ---------------------------------------------------------------- data

class ShardedBatches:
    """Batch sampler: every epoch a permutation seeded by (seed, epoch), rank
    r takes every world-th index from r on (the same count on each rank, the
    remainder dropped), in micro-batches; infinite. Starts at (epoch, offset)
    where offset counts this rank's samples already used in that epoch."""

    def __init__(self, n, micro, rank, world, seed, epoch=0, offset=0):
        self.n, self.micro, self.rank, self.world, self.seed = n, micro, rank, world, seed
        self.per_rank = n // world
        if self.per_rank < micro:
            fail("the training set has %d samples, too few for a micro-batch of %d on %d ranks"
                 % (n, micro, world))
        self.epoch, self.offset = epoch, offset
        if self.offset + micro > self.per_rank:
            self.epoch, self.offset = self.epoch + 1, 0

    def advance(self):
        """The position after the next micro-batch (mirrors __iter__)."""
        self.offset += self.micro
        if self.offset + self.micro > self.per_rank:
            self.epoch, self.offset = self.epoch + 1, 0

    def position(self):
        return {"epoch": self.epoch, "offset": self.offset, "world": self.world}

    def __iter__(self):
        # The start is taken now, not at the first next(): advance() moves it.
        return self._batches(self.epoch, self.offset)

    def _batches(self, epoch, offset):
        while True:
            g = torch.Generator()
            g.manual_seed(self.seed * 1000003 + epoch)
            shard = torch.randperm(self.n, generator=g)[self.rank:self.per_rank * self.world:self.world]
            while offset + self.micro <= self.per_rank:
                yield shard[offset:offset + self.micro].tolist()
                offset += self.micro
            epoch, offset = epoch + 1, 0


def stratified_split(labels, val_fraction, seed):
    """(train indices, val indices): per class, a seeded permutation, the
    first round(val_fraction * count) (at least one where a class has two
    or more) held out. Deterministic for the same labels and seed."""
    by_class = {}
    for i, y in enumerate(labels):
        by_class.setdefault(y, []).append(i)
    train, val = [], []
    for y in sorted(by_class):
        idx = by_class[y]
        g = torch.Generator()
        g.manual_seed(stable_seed("split", seed, str(y)))
        perm = [idx[j] for j in torch.randperm(len(idx), generator=g).tolist()]
        k = int(round(val_fraction * len(perm)))
        if val_fraction > 0 and k == 0 and len(perm) > 1:
            k = 1
        val += perm[:k]
        train += perm[k:]
    return sorted(train), sorted(val)


class Subset(torch.utils.data.Dataset):
    def __init__(self, base, indices):
        self.base, self.indices = base, list(indices)

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, i):
        return self.base[self.indices[i]]


class ImageFolder(torch.utils.data.Dataset):
    """image-folder: DIR/<class>/<image> (png, jpg, jpeg, bmp, webp, tif,
    tiff; classes sorted by name), decoded with PIL, RGB, resized to
    size x size, scaled to [-1, 1]. Items: (image [3,H,W] float, label)."""

    EXTS = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")

    def __init__(self, root, size):
        if not os.path.isdir(root):
            fail("data %s: not a directory (image-folder wants DIR/<class>/<image>)" % root)
        self.classes = sorted(d for d in os.listdir(root)
                              if os.path.isdir(os.path.join(root, d)) and not d.startswith("."))
        self.samples = []
        for c, name in enumerate(self.classes):
            for dirpath, dirs, files in sorted(os.walk(os.path.join(root, name))):
                dirs.sort()
                for f in sorted(files):
                    if f.lower().endswith(self.EXTS):
                        self.samples.append((os.path.join(dirpath, f), c))
        if not self.samples:
            fail("data %s: no images found in its class sub-folders" % root)
        self.labels = [y for _, y in self.samples]
        self.size = size

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        from PIL import Image
        path, y = self.samples[i]
        with Image.open(path) as im:
            im = im.convert("RGB").resize((self.size, self.size), Image.BILINEAR)
            x = torch.frombuffer(bytearray(im.tobytes()), dtype=torch.uint8)
        x = x.view(self.size, self.size, 3).permute(2, 0, 1).float().div_(127.5).sub_(1.0)
        return x, y


class SyntheticImages(torch.utils.data.Dataset):
    """Synthetic image-folder stand-in: item i has label i % classes and is
    that class's fixed random pattern plus noise, both from the seed, so a
    model can learn it and every run sees the same items."""

    def __init__(self, n, classes, size, seed, noise=0.5):
        g = torch.Generator()
        g.manual_seed(seed + 17)
        low = torch.rand(classes, 3, 4, 4, generator=g) * 2 - 1
        self.templates = torch.nn.functional.interpolate(low, size=(size, size), mode="bilinear",
                                                         align_corners=False)
        self.n, self.classes, self.size, self.seed, self.noise = n, classes, size, seed, noise
        self.labels = [i % classes for i in range(n)]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator()
        g.manual_seed(self.seed * 1000003 + i)
        y = i % self.classes
        x = self.templates[y] + self.noise * torch.randn(3, self.size, self.size, generator=g)
        return x.clamp_(-1, 1), y


def to_device(obj, device, float_dtype=None):
    if torch.is_tensor(obj):
        if float_dtype is not None and obj.is_floating_point():
            obj = obj.to(float_dtype)
        return obj.to(device, non_blocking=True)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(o, device, float_dtype) for o in obj)
    if isinstance(obj, dict):
        return {k: to_device(v, device, float_dtype) for k, v in obj.items()}
    return obj


# ---------------------------------------------------------------- measuring

def _storage_key(t):
    """(data pointer, bytes) of the storage under t, or None."""
    try:
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        return s.data_ptr(), s.nbytes()
    except Exception:
        return None


_VIEWLIKE = ("ToCopyBackward", "TBackward", "ViewBackward", "TransposeBackward", "PermuteBackward",
             "ExpandBackward", "UnsafeViewBackward", "AliasBackward", "ReshapeAliasBackward",
             "SliceBackward", "SelectBackward")


def _from_param(t, param_ids):
    """Whether t is a parameter seen through casts and views (autocast's
    16-bit weight copy, weight.t()): model state, not an activation."""
    fn = t.grad_fn
    for _ in range(6):
        if fn is None:
            return False
        if hasattr(fn, "variable"):
            return id(fn.variable) in param_ids
        if not type(fn).__name__.startswith(_VIEWLIKE):
            return False
        nxt = [f for f, _ in fn.next_functions if f is not None]
        if len(nxt) != 1:
            return False
        fn = nxt[0]
    return False


class SavedTensors:
    """Counts what autograd saves for backward inside the with-block,
    exactly: one entry per storage, parameters (and casts/views of them)
    left out. The activation checkpointing wrapper adds the inputs of the
    modules it recomputes, which it keeps instead."""

    active = None

    def __init__(self, module):
        self.param_ptrs = set()
        self.param_ids = set()
        for p in list(module.parameters()) + list(module.buffers()):
            k = _storage_key(p)
            if k:
                self.param_ptrs.add(k[0])
            self.param_ids.add(id(p))
        self.storages = {}
        self.ctx = None

    def _add(self, t):
        if not torch.is_tensor(t) or t.is_sparse:
            return
        k = _storage_key(t)
        if k is None or k[0] in self.param_ptrs or k[0] == 0:
            return
        if t.requires_grad and _from_param(t, self.param_ids):
            return
        self.storages[k[0]] = max(self.storages.get(k[0], 0), k[1])

    def _pack(self, t):
        self._add(t)
        return t

    def __enter__(self):
        self.ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self.ctx.__enter__()
        SavedTensors.active = self
        return self

    def __exit__(self, *exc):
        SavedTensors.active = None
        return self.ctx.__exit__(*exc)

    @property
    def nbytes(self):
        return sum(self.storages.values())


def _tensor_bytes(obj, seen):
    if torch.is_tensor(obj):
        k = _storage_key(obj)
        key = k[0] if k else id(obj)
        if key in seen:
            return 0
        seen.add(key)
        return k[1] if k else obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(_tensor_bytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(v, seen) for v in obj)
    return 0


def _local_optimizer(opt):
    # ZeroRedundancyOptimizer keeps its shard's state in .optim; DeepSpeed's
    # wrappers in .optimizer.
    for name in ("optim", "optimizer"):
        inner = getattr(opt, name, None)
        if isinstance(inner, torch.optim.Optimizer):
            return inner
    return opt


def model_state_sizes(module, opt):
    params = list(module.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
    seen = set()
    optim_bytes = sum(_tensor_bytes(s, seen) for s in _local_optimizer(opt).state.values())
    return {"param_bytes": param_bytes, "grad_bytes": grad_bytes, "optim_state_bytes": optim_bytes}


def rss_peak_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


# ---------------------------------------------------------------- checkpointing

def atomic_write(path, write):
    """write(fileobj) into a hidden temporary in path's directory, fsync,
    rename over path, fsync the directory."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ".%s.tmp.%d" % (os.path.basename(path), os.getpid()))
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_torch_save(obj, path):
    atomic_write(path, lambda f: torch.save(obj, f))


def atomic_json(obj, path):
    atomic_write(path, lambda f: f.write((json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()))


CKPT_NAME = re.compile(r"^step-(\d+)\.pt$")


def _prune(ckpt_dir, keep):
    found = sorted((int(m.group(1)), n) for n in os.listdir(ckpt_dir) for m in [CKPT_NAME.match(n)] if m)
    for _, n in found[:-keep] if keep > 0 else []:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(ckpt_dir, n))


def _remove_stale_temporaries(ckpt_dir):
    """Temporaries of a writer that was killed (never a checkpoint)."""
    if not os.path.isdir(ckpt_dir):
        return
    for n in os.listdir(ckpt_dir):
        if n.startswith(".step-") and ".tmp." in n:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(ckpt_dir, n))


# ---------------------------------------------------------------- the model

def apply_activation_checkpointing(modules):
    """Each module's forward runs under torch.utils.checkpoint
    (non-reentrant: works with DDP and inputs that need no grad); its
    inputs are what stays saved, and SavedTensors counts them."""
    from torch.utils.checkpoint import checkpoint

    for m in modules:
        inner = m.forward

        def forward(*a, _inner=inner, **kw):
            if SavedTensors.active is not None and torch.is_grad_enabled():
                for t in a:
                    SavedTensors.active._add(t)
            if not torch.is_grad_enabled():
                return _inner(*a, **kw)
            return checkpoint(_inner, *a, use_reentrant=False, **kw)

        m.forward = forward


def make_optimizer(ctx, params):
    a = ctx.args
    if a.optim == "sgd":
        cls, kw = torch.optim.SGD, {"lr": a.lr, "momentum": 0.9, "weight_decay": a.weight_decay}
    elif a.optim == "adam":
        cls, kw = torch.optim.Adam, {"lr": a.lr, "weight_decay": a.weight_decay}
    else:
        cls, kw = torch.optim.AdamW, {"lr": a.lr, "weight_decay": a.weight_decay}
    if ctx.plan.strategy == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        return ZeroRedundancyOptimizer(params, optimizer_class=cls, **kw), \
            "ZeroRedundancyOptimizer(%s)" % cls.__name__
    return cls(params, **kw), cls.__name__


def lr_at(args, step):
    """Linear warm-up to --lr, then constant or cosine down to 10 %."""
    if args.warmup > 0 and step <= args.warmup:
        return args.lr * step / args.warmup
    if args.schedule == "constant":
        return args.lr
    span = max(1, args.steps - args.warmup)
    progress = min(1.0, (step - args.warmup) / span)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


class _Wrapped:
    """The model as trained (DDP / FSDP / DeepSpeed engine) and as stored."""

    def __init__(self, ctx, module, blocks):
        self.ctx = ctx
        self.module = module
        self.kind = ctx.plan.backend_kind
        self.engine = None
        dev_ids = [ctx.device.index] if ctx.use_cuda else None
        if self.kind == "fsdp":
            self.model = self._fsdp(module, blocks)
        elif self.kind == "deepspeed":
            self.model = module  # deepspeed.initialize wraps it with the optimizer
        else:
            self.model = nn.parallel.DistributedDataParallel(module, device_ids=dev_ids)

    def _fsdp(self, module, blocks):
        # Not exercised in CI: Debian's PyTorch 1.13 cannot import FSDP.
        import functools
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
        from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy
        block_ids = {id(b) for b in blocks}
        policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: id(m) in block_ids)
        mp = None
        if self.ctx.amp_dtype is not None:
            mp = MixedPrecision(param_dtype=self.ctx.amp_dtype, reduce_dtype=self.ctx.amp_dtype,
                                buffer_dtype=self.ctx.amp_dtype)
        extra = {}
        if self.ctx.plan.fsdp_cpu_offload:
            from torch.distributed.fsdp import CPUOffload
            extra["cpu_offload"] = CPUOffload(offload_params=True)
        return FSDP(module, auto_wrap_policy=policy, mixed_precision=mp, **extra,
                    sharding_strategy=getattr(ShardingStrategy, self.ctx.plan.fsdp_sharding),
                    device_id=self.ctx.device if self.ctx.use_cuda else None)

    def deepspeed_init(self, args):
        # Not exercised in CI: DeepSpeed is not packaged for Debian.
        import deepspeed
        ctx = self.ctx
        cfg = {}
        if ctx.plan.ds_config:
            try:
                with open(ctx.plan.ds_config) as f:
                    cfg = json.load(f)
            except (OSError, ValueError) as e:
                fail("TRAINYARD_DS_CONFIG=%s: %s" % (ctx.plan.ds_config, e))
        m = DS_STRATEGY.match(ctx.plan.strategy)
        zo = cfg.setdefault("zero_optimization", {})
        zo.setdefault("stage", int(m.group(1)))
        if m.group(2):
            zo.setdefault("offload_optimizer", {"device": "cpu"})
        if m.group(3):
            zo.setdefault("offload_param", {"device": "cpu"})
        cfg["train_micro_batch_size_per_gpu"] = ctx.micro
        cfg["gradient_accumulation_steps"] = ctx.accum
        cfg["train_batch_size"] = ctx.global_batch
        if ctx.plan.precision == "bf16":
            cfg.setdefault("bf16", {"enabled": True})
        elif ctx.plan.precision == "fp16":
            cfg.setdefault("fp16", {"enabled": True})
        cfg.setdefault("optimizer", {"type": "AdamW" if args.optim != "sgd" else "SGD",
                                     "params": {"lr": args.lr, "weight_decay": args.weight_decay}})
        if args.clip > 0:
            cfg.setdefault("gradient_clipping", args.clip)
        params = [p for p in self.module.parameters() if p.requires_grad]
        self.engine, opt, _, _ = deepspeed.initialize(model=self.module, model_parameters=params,
                                                      config=cfg)
        self.model = self.engine
        return opt, "DeepSpeed ZeRO-%s (%s)" % (zo["stage"], cfg["optimizer"]["type"])

    def no_sync(self, last):
        if last or self.kind == "deepspeed":
            return contextlib.nullcontext()
        return self.model.no_sync()

    def eval_model(self):
        # DDP's forward may broadcast buffers (a collective): evaluate the
        # plain module, which every rank holds whole. FSDP and DeepSpeed
        # ZeRO-3 need their wrapper (every rank runs the same batches).
        return self.module if self.kind == "native" else self.model

    def full_state_dict(self):
        """The whole model's state (rank 0's copy is the one to save);
        collective under FSDP."""
        if self.kind == "fsdp":
            from torch.distributed.fsdp import FullStateDictConfig, StateDictType
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            with FSDP.state_dict_type(self.model, StateDictType.FULL_STATE_DICT,
                                      FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
                return self.model.state_dict()
        if self.kind == "deepspeed" and self.engine.zero_optimization_stage() == 3:
            return self.engine._zero3_consolidated_16bit_state_dict()
        return {k: v.detach().cpu() for k, v in self.module.state_dict().items()}


def _eval(ctx, wrapped, val_set, collate, eval_batch, eval_finish, float_dtype=None):
    """Every rank evaluates val items rank, rank+world, ... in batches (the
    same number of batches on every rank; the short shard repeats an item
    that is then dropped); the per-item outputs of all ranks are gathered,
    put back in item order and handed to eval_finish on every rank."""
    model = wrapped.eval_model()
    was_training = model.training
    model.eval()
    n = len(val_set)
    mine = list(range(ctx.rank, n, ctx.world))
    per_rank = math.ceil(n / ctx.world)
    bs = max(1, ctx.micro * 2)
    outs, idx = {}, []
    with torch.no_grad(), autocast(ctx):
        for b in range(0, per_rank, bs):
            chunk = mine[b:b + bs]
            real = len(chunk)
            chunk = chunk + [mine[0] if mine else 0] * (min(bs, per_rank - b) - real)
            if not chunk:
                continue
            batch = to_device(collate([val_set[i] for i in chunk]), ctx.device, float_dtype)
            res = eval_batch(model, batch)
            for k, v in res.items():
                outs.setdefault(k, []).append(v[:real].detach().float().cpu())
            idx += chunk[:real]
    model.train(was_training)
    local = {"idx": idx, "outs": {k: torch.cat(v) for k, v in outs.items()}}
    parts = [None] * ctx.world
    dist.all_gather_object(parts, local)
    order = torch.tensor([i for p in parts for i in p["idx"]], dtype=torch.long)
    perm = torch.argsort(order)
    keys = [k for p in parts for k in p["outs"]]
    merged = {}
    for k in dict.fromkeys(keys):
        merged[k] = torch.cat([p["outs"][k] for p in parts if k in p["outs"]])[perm]
    return eval_finish(merged)


def autocast(ctx):
    if ctx.amp_dtype is None or ctx.plan.backend_kind != "native":
        return contextlib.nullcontext()  # FSDP / DeepSpeed cast themselves
    return torch.autocast(device_type=ctx.device.type, dtype=ctx.amp_dtype)


def default_collate(items):
    return torch.utils.data.default_collate(items)


def train(ctx, model, train_set, loss_fn, val_set=None, eval_batch=None, eval_finish=None,
          blocks=(), block_names="", collate=default_collate, extra_state=None, finish=None,
          rates=None):
    """Train model (an nn.Module on the CPU) with the plan applied.

    loss_fn(model, batch) -> scalar loss of one micro-batch (batch already on
      the device; ctx.step / ctx.micro_step / ctx.generator() for randomness).
    train_set: a Dataset (items combined by collate), or an object with
      fixed_batch(micro, device) for benchmarks (one batch, used every step).
    val_set, eval_batch(model, batch) -> {name: per-item tensor [B, ...]},
      eval_finish({name: tensor [N, ...]}) -> {metric: float}: the validation.
    blocks: the modules activation checkpointing wraps (block_names says
      which, for the log). extra_state: a dict the checkpoint carries.
    finish(module, summary): rank 0 writes the script's own outputs.
    rates: extra throughput names, {"seq_per_sec": 1, "tokens_per_sec": 1024}
      (multipliers of samples_per_sec).
    Returns the summary dict."""
    args = ctx.args
    t_start = time.time()
    resume = ctx.resume_state()
    if resume is not None and "model" in resume:
        try:
            model.load_state_dict(resume["model"])
        except (RuntimeError, KeyError) as e:
            fail("TRAINYARD_RESUME_FROM=%s does not fit this model (other --size or flags?): %s"
                 % (ctx.resume_from, str(e)[:300]))
    blocks = list(blocks)
    if ctx.plan.activation_checkpointing and not blocks:
        refuse("TRAINYARD_ACTIVATION_CHECKPOINTING=1 but this script names no modules to checkpoint",
               field="TRAINYARD_ACTIVATION_CHECKPOINTING")
    if ctx.plan.activation_checkpointing:
        apply_activation_checkpointing(blocks)
    model.to(ctx.device)
    wrapped = _Wrapped(ctx, model, blocks)
    _KEEP_UNTIL_EXIT.append(wrapped)  # never freed before os._exit (see exit_process)
    if wrapped.kind == "deepspeed":
        opt, opt_name = wrapped.deepspeed_init(args)
    else:
        opt, opt_name = make_optimizer(ctx, wrapped.model.parameters() if wrapped.kind == "fsdp"
                                       else model.parameters())
    use_scaler = ctx.plan.precision == "fp16" and wrapped.kind == "native"
    scaler = torch.cuda.amp.GradScaler(enabled=use_scaler)

    start_step, pos = 0, {"epoch": 0, "offset": 0, "world": ctx.world}
    if resume is not None:
        start_step = int(resume["step"])
        if wrapped.kind == "deepspeed":
            _, client = wrapped.engine.load_checkpoint(os.path.dirname(ctx.resume_from.rstrip("/")),
                                                       tag=os.path.basename(ctx.resume_from.rstrip("/")))
            resume = dict(resume, **(client or {}))
        elif wrapped.kind == "fsdp":
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            opt.load_state_dict(FSDP.shard_full_optim_state_dict(resume["optimizer"], wrapped.model))
        else:
            opt.load_state_dict(resume["optimizer"])
        if resume.get("scaler"):
            scaler.load_state_dict(resume["scaler"])
        old = resume.get("data", pos)
        # The position counts samples per rank; with another world size keep
        # the share of the epoch already seen.
        pos = {"epoch": int(old["epoch"]), "offset": int(old["offset"]) * int(old["world"]) // ctx.world}
        ctx.log("resumed from %s at step %d (data epoch %d, offset %d per rank)"
                % (ctx.resume_from, start_step, pos["epoch"], pos["offset"]))

    # DeepSpeed's bf16/fp16 engines hold 16-bit weights and want 16-bit inputs.
    float_dtype = ctx.amp_dtype if wrapped.kind == "deepspeed" else None
    fixed = getattr(train_set, "fixed_batch", None)
    if fixed is not None:
        # One batch used every step; the position still counts samples.
        sampler = ShardedBatches(max(len(train_set), ctx.micro * ctx.world), ctx.micro, ctx.rank,
                                 ctx.world, args.seed, pos["epoch"], pos["offset"])
        fixed_batch = to_device(fixed(ctx.micro, ctx.device), ctx.device, float_dtype)
        batches = None
    else:
        sampler = ShardedBatches(len(train_set), ctx.micro, ctx.rank, ctx.world, args.seed,
                                 pos["epoch"], pos["offset"])
        loader = torch.utils.data.DataLoader(train_set, batch_sampler=sampler, collate_fn=collate,
                                             num_workers=args.workers, pin_memory=ctx.use_cuda,
                                             persistent_workers=args.workers > 0)
        batches = iter(loader)

    applied = {
        "strategy": ctx.plan.strategy, "optimizer": opt_name, "world_size": ctx.world,
        "micro_batch": ctx.micro, "grad_accum": ctx.accum, "global_batch": ctx.global_batch,
        "requested_global_batch": args.batch, "global_batch_reached": ctx.global_batch == args.batch,
        "micro_batch_from": "plan" if ctx.plan.micro_env else "split",
        "grad_accum_from": "plan" if ctx.plan.accum_env else "split",
        "precision": ctx.plan.precision, "grad_scaler": use_scaler,
        "activation_checkpointing": ctx.plan.activation_checkpointing,
        "checkpointed_modules": len(blocks) if ctx.plan.activation_checkpointing else 0,
        "checkpointed": block_names if ctx.plan.activation_checkpointing else "",
        "backend": ctx.backend, "device": str(ctx.device), "torch": torch.__version__,
        "size": args.size, "synthetic": ctx.synthetic, "start_step": start_step, "steps": args.steps,
    }
    if ctx.plan.ds_config:
        applied["ds_config"] = ctx.plan.ds_config
    if ctx.rank == 0:
        emit("TRAINYARD_PLAN_APPLIED", applied)
        print("plan applied: strategy %s (%s), micro-batch %d x accumulation %d x %d ranks = global "
              "batch %d%s, precision %s%s, activation checkpointing %s"
              % (ctx.plan.strategy, opt_name, ctx.micro, ctx.accum, ctx.world, ctx.global_batch,
                 " (asked %d: %s)" % (args.batch, ctx.batch_note) if ctx.batch_note else "",
                 ctx.plan.precision, " with loss scaling" if use_scaler else "",
                 "on %d modules (%s)" % (len(blocks), block_names)
                 if ctx.plan.activation_checkpointing else "off"), flush=True)
    if ctx.batch_note:
        print("trainyard: %s" % ctx.batch_note, file=sys.stderr, flush=True)

    if ctx.checkpoint_dir and ctx.rank == 0:
        os.makedirs(ctx.checkpoint_dir, exist_ok=True)
        _remove_stale_temporaries(ctx.checkpoint_dir)
    if not ctx.checkpoint_dir and args.checkpoint_every > 0:
        ctx.log("no TRAINYARD_CHECKPOINT_DIR: not writing checkpoints")

    sizes = {}
    evals, speeds = [], []
    last_metrics = {}
    t_mark, steps_since = time.time(), 0

    def save_checkpoint(step):
        if wrapped.kind == "deepspeed":
            return _save_deepspeed(ctx, wrapped, step, sampler, extra_state)
        if ctx.plan.strategy == "zero1":
            opt.consolidate_state_dict(to=0)  # collective
        if wrapped.kind == "fsdp":
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            osd = FSDP.full_optim_state_dict(wrapped.model, opt)  # collective
        else:
            osd = opt.state_dict() if ctx.rank == 0 else None
        msd = wrapped.full_state_dict()
        path = None
        if ctx.rank == 0:
            path = os.path.join(ctx.checkpoint_dir, "step-%d.pt" % step)
            atomic_torch_save({"step": step, "model": msd, "optimizer": osd,
                               "scaler": scaler.state_dict() if use_scaler else None,
                               "data": sampler.position(), "extra": extra_state or {},
                               "plan": applied, "args": {k: v for k, v in vars(args).items()}}, path)
            emit("TRAINYARD_CHECKPOINT", {"step": step, "path": path})
            _prune(ctx.checkpoint_dir, args.keep_checkpoints)
        dist.barrier()
        return path

    model.train()
    step = start_step
    while step < args.steps:
        step += 1
        ctx.step = step
        lr = lr_at(args, step)
        for g in opt.param_groups:
            g["lr"] = lr
        loss_sum = torch.zeros((), device=ctx.device)
        for m in range(ctx.accum):
            ctx.micro_step = m
            # Dropout and other draws from the global generator: seeded per
            # (rank, step, micro-step), so a resumed run draws what the
            # uninterrupted one would have.
            torch.manual_seed(stable_seed("step", args.seed, ctx.rank, step, m))
            if batches is None:
                batch = fixed_batch
            else:
                batch = to_device(next(batches), ctx.device, float_dtype)
            sampler.advance()
            measure = not sizes and m == 0
            with wrapped.no_sync(m == ctx.accum - 1):
                with (SavedTensors(model) if measure else contextlib.nullcontext()) as saved, autocast(ctx):
                    loss = loss_fn(wrapped.model, batch)
                if measure:
                    sizes["activation_bytes"] = saved.nbytes
                if wrapped.kind == "deepspeed":
                    wrapped.engine.backward(loss)
                    wrapped.engine.step()
                else:
                    scaler.scale(loss / ctx.accum).backward()
            loss_sum += loss.detach().float()
        first = "param_bytes" not in sizes
        if wrapped.kind != "deepspeed":
            if args.clip > 0:
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(wrapped.model.parameters(), args.clip)
            if first:  # the gradients exist now; the optimizer state after the step
                sizes.update(model_state_sizes(model, opt))
            scaler.step(opt)
            scaler.update()
        if first:
            sizes["optim_state_bytes"] = model_state_sizes(model, opt)["optim_state_bytes"]
            if ctx.plan.strategy == "zero1" and wrapped.kind != "deepspeed":
                total = torch.tensor([sizes["optim_state_bytes"]], dtype=torch.float64, device=ctx.device)
                dist.all_reduce(total)
                sizes["optim_state_bytes_total"] = int(total.item())
        if wrapped.kind != "deepspeed":
            opt.zero_grad(set_to_none=True)

        do_metric = args.metric_every > 0 and (step % args.metric_every == 0 or step == args.steps)
        mean = None
        if do_metric:
            mean = loss_sum / ctx.accum
            dist.all_reduce(mean)
            mean = float(mean) / ctx.world
        steps_since += 1
        do_eval = val_set is not None and eval_batch is not None and (
            (args.eval_every > 0 and step % args.eval_every == 0) or step == args.steps)
        if do_metric:
            if ctx.use_cuda:
                torch.cuda.synchronize()
            dt = max(time.time() - t_mark, 1e-9)
            sps = ctx.global_batch * steps_since / dt
            # Intervals that hold one of the first two steps warm up caches
            # and allocators: the mean leaves them out when others exist.
            speeds.append((step - steps_since - start_step >= 2, sps))
            rec = {"step": step, "loss": round(mean, 6), "samples_per_sec": round(sps, 2),
                   "lr": float("%.6g" % lr)}
            for name, mult in (rates or {}).items():
                rec[name] = round(sps * mult, 2)
            rec.update({k: v for k, v in sizes.items() if not k.startswith("_")})
            if ctx.use_cuda:
                rec["peak_mem_bytes"] = torch.cuda.max_memory_allocated(ctx.device)
            rec["rss_peak_bytes"] = rss_peak_bytes()
            last_metrics = rec
        if do_eval:
            ev = _eval(ctx, wrapped, val_set, collate, eval_batch, eval_finish, float_dtype)
            ev = {k: round(float(v), 6) for k, v in ev.items()}
            evals.append(dict(ev, step=step))
            if do_metric:
                last_metrics.update(ev)
            elif ctx.rank == 0:
                emit("TRAINYARD_METRIC", dict(ev, step=step))
        if do_metric and ctx.rank == 0:
            emit("TRAINYARD_METRIC", last_metrics)
        if ctx.checkpoint_dir and args.checkpoint_every > 0 and step % args.checkpoint_every == 0:
            save_checkpoint(step)
        if do_metric or do_eval:
            t_mark, steps_since = time.time(), 0

    summary = {
        "script": os.path.basename(sys.argv[0]), "job_id": ctx.job_id, "steps": args.steps,
        "start_step": start_step, "plan": applied, "final": last_metrics,
        "evals": evals, "first_eval": evals[0] if evals else None, "last_eval": evals[-1] if evals else None,
        "samples_per_sec_mean": _mean_speed(speeds),
        "sizes": {k: v for k, v in sizes.items() if not k.startswith("_")},
        "wall_s": round(time.time() - t_start, 3), "args": vars(args),
    }
    state = wrapped.full_state_dict() if ctx.output else None
    if ctx.output and ctx.rank == 0:
        os.makedirs(ctx.output, exist_ok=True)
        atomic_torch_save(state, os.path.join(ctx.output, "model.pt"))
        if finish is not None:
            finish(model, summary)
        atomic_json(summary, os.path.join(ctx.output, "metrics.json"))
        print("wrote %s (model.pt, metrics.json)" % ctx.output, flush=True)
    dist.barrier()
    dist.destroy_process_group()
    ctx.log("done: %d steps, %.1f s" % (args.steps, time.time() - t_start))
    return summary


def _mean_speed(speeds):
    warm = [s for w, s in speeds if w] or [s for _, s in speeds]
    return round(sum(warm) / len(warm), 2) if warm else None


def _save_deepspeed(ctx, wrapped, step, sampler, extra_state):
    # Not exercised in CI (no DeepSpeed on Debian). Every rank writes its
    # shard into a hidden directory; rank 0 renames it when all are done.
    tag = "step-%d" % step
    tmp_tag = ".%s.tmp" % tag
    wrapped.engine.save_checkpoint(ctx.checkpoint_dir, tag=tmp_tag,
                                   client_state={"step": step, "data": sampler.position(),
                                                 "extra": extra_state or {}})
    dist.barrier()
    path = os.path.join(ctx.checkpoint_dir, tag)
    if ctx.rank == 0:
        os.replace(os.path.join(ctx.checkpoint_dir, tmp_tag), path)
        emit("TRAINYARD_CHECKPOINT", {"step": step, "path": path})
    dist.barrier()
    return path


def load_pretrained(module, path, drop_prefixes=()):
    """Weights from an on-site file (a state_dict, or a dict with "model"),
    never downloaded. Entries under drop_prefixes whose shapes differ (a
    classifier head for other classes) are left as initialised and named."""
    if not os.path.isfile(path):
        fail("--pretrained %s: no such file (weights come from an on-site path; nothing is downloaded)" % path)
    try:
        sd = torch.load(path, map_location="cpu")
    except Exception as e:
        fail("--pretrained %s: cannot load it: %s" % (path, e))
    if isinstance(sd, dict) and isinstance(sd.get("model"), dict):
        sd = sd["model"]
    own = module.state_dict()
    dropped = [k for k in sd if k in own and sd[k].shape != own[k].shape and k.startswith(tuple(drop_prefixes))]
    for k in dropped:
        del sd[k]
    missing, unexpected = module.load_state_dict(sd, strict=False)
    bad = [k for k in missing if not k.startswith(tuple(drop_prefixes))]
    if bad or unexpected:
        fail("--pretrained %s does not fit the model: missing %s, unexpected %s"
             % (path, bad[:5], list(unexpected)[:5]))
    return dropped
