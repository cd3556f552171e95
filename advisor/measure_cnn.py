#!/usr/bin/python3
"""measure_cnn.py - measure the advisor's table of image models on CPU.

For resnet50, resnet101 and vit-base (torchvision's vit_b_16), at 224 x 224
in training mode with fp32 weights, it measures:

- saved activations: the bytes torch.autograd.graph.saved_tensors_hooks sees
  during one forward pass at batch 1 and at batch 2 (each storage counted
  once, parameters excluded). Per sample = b2 - b1, fixed = 2 b1 - b2. The
  16-bit figure halves the floating-point tensors and keeps the others
  (max-pool indices are int64, masks bool), which is what autocast or a
  16-bit model stores;
- forward FLOPs per sample: 2 x the multiply-adds of every Conv2d and Linear
  module, and of nn.MultiheadAttention (its input and output projections
  and the two attention matmuls), counted with forward hooks;
- parameters, and the largest number one module holds itself (what
  DeepSpeed's model_to_params() calls the largest layer);
- the resident size of this process after importing torch and torchvision
  (the advisor's fixed cost of a CPU rank), and the fp32 matmul rate of one
  thread (the advisor's CPU peak).

Usage: /usr/bin/python3 advisor/measure_cnn.py > advisor/cnn_measured.txt
Uses Debian 12's python3-torch and python3-torchvision; downloads nothing
(random weights: the sizes do not depend on them).
"""
import resource
import sys
import time

import torch
import torchvision

MODELS = [
    ("resnet50", lambda: torchvision.models.resnet50(weights=None)),
    ("resnet101", lambda: torchvision.models.resnet101(weights=None)),
    ("vit-base", lambda: torchvision.models.vit_b_16(weights=None)),
]


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def saved_bytes(model, batch):
    params = {p.data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        st = t.storage()
        ptr = st.data_ptr()
        if ptr not in params:
            size = st.size() * t.element_size()
            kind = "float" if t.is_floating_point() else "other"
            if seen.get(ptr, (0, kind))[0] < size:
                seen[ptr] = (size, kind)
        return t

    x = torch.randn(batch, 3, 224, 224)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    del out
    fl = sum(s for s, k in seen.values() if k == "float")
    other = sum(s for s, k in seen.values() if k == "other")
    return fl, other


def forward_flops(model):
    total = [0]

    def conv(m, inp, out):
        k = m.kernel_size[0] * m.kernel_size[1] * (m.in_channels // m.groups)
        total[0] += 2 * out.numel() * k

    def linear(m, inp, out):
        total[0] += 2 * out.numel() * m.in_features

    def mha(m, inp, out):
        y = out[0]  # (batch, seq, embed) with batch_first, else (seq, batch, embed)
        s = y.shape[1] if m.batch_first else y.shape[0]
        b = y.shape[0] if m.batch_first else y.shape[1]
        e = m.embed_dim
        total[0] += b * (2 * s * e * 3 * e + 2 * 2 * s * s * e + 2 * s * e * e)

    hooks = []
    for mod in model.modules():
        if isinstance(mod, torch.nn.Conv2d):
            hooks.append(mod.register_forward_hook(conv))
        elif isinstance(mod, torch.nn.MultiheadAttention):
            hooks.append(mod.register_forward_hook(mha))
        elif isinstance(mod, torch.nn.Linear) and not isinstance(
            mod, torch.nn.modules.linear.NonDynamicallyQuantizableLinear
        ):
            # MultiheadAttention's out_proj is such a Linear, used through its
            # weight (counted with the attention above), never called.
            hooks.append(mod.register_forward_hook(linear))
    with torch.no_grad():
        model(torch.randn(1, 3, 224, 224))
    for h in hooks:
        h.remove()
    return total[0]


def largest_layer(model):
    return max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())


def sgemm_gflops():
    torch.set_num_threads(1)
    a = torch.randn(1024, 1024)
    b = torch.randn(1024, 1024)
    a @ b
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 2.0:
        a @ b
        n += 1
    return 2 * 1024**3 * n / (time.perf_counter() - t0) / 1e9


def main():
    torch.manual_seed(0)
    rss = rss_bytes()
    print("# advisor/measure_cnn.py: torch %s, torchvision %s, %s" % (
        torch.__version__, torchvision.__version__, time.strftime("%Y-%m-%d")))
    print("# CPU, fp32, 224 x 224, training mode; bytes of saved tensors (each storage once,")
    print("# parameters excluded); 16-bit = float bytes / 2 + other bytes")
    print("cpu_rank_rss_bytes %d" % rss)
    print("cpu_sgemm_gflops_1_thread %.1f" % sgemm_gflops())
    torch.set_num_threads(2)
    print("model params largest_layer_params fwd_flops_per_sample act_b1_float act_b1_other "
          "act_b2_float act_b2_other act32_per_sample act16_per_sample act32_fixed")
    for name, make in MODELS:
        model = make().train()
        f1, o1 = saved_bytes(model, 1)
        f2, o2 = saved_bytes(model, 2)
        per32 = (f2 + o2) - (f1 + o1)
        per16 = (f2 - f1) // 2 + (o2 - o1)
        fixed = 2 * (f1 + o1) - (f2 + o2)
        print("%s %d %d %d %d %d %d %d %d %d %d" % (
            name, sum(p.numel() for p in model.parameters()), largest_layer(model),
            forward_flops(model), f1, o1, f2, o2, per32, per16, fixed))
        sys.stdout.flush()
    print("# peak resident size of the measurement %d bytes" %
          (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))


if __name__ == "__main__":
    main()
