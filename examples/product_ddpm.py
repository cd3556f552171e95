#!/usr/bin/env python3
"""Product-image generation: a small DDPM U-Net trained on product photos.

Trains a denoising diffusion model (Ho et al. 2020: linear beta schedule,
the network predicts the added noise, MSE loss) on the images of an
image-folder dataset (DIR/<class>/<image>; the classes are ignored,
examples/README.md), or on synthetic patterns without data. Validation
reports val_loss, the noise-prediction MSE on held-out images at fixed
timesteps and noise. At the end rank 0 draws --samples images by ancestral
sampling and writes them to the output directory as samples/sample-NNN.png
plus a grid samples.png.

Sizes:
  --size full  U-Net with 64/128/256 channels, 64x64 images, T=1000
  --size tiny  U-Net with 16/32 channels, 16x16 images, T=100, for CPU CI
  --image-size N, --timesteps T and --channels override.

Flags: --steps, --size, --batch (global), --lr, --checkpoint-every,
--eval-every, --data, --output, --seed, --image-size, --timesteps,
--channels, --samples; trainyard_common.py describes the env (the plan) and
the lines it prints. Activation checkpointing wraps each residual block of
the U-Net. Outputs: model.pt, config.json, samples/, samples.png,
metrics.json.

Two CPU ranks by hand:
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29514 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/product_ddpm.py --size tiny --steps 40 --output /tmp/out &
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29514 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 \\
    TRAINYARD_CHECKPOINT_DIR=/tmp/ck python3 examples/product_ddpm.py --size tiny --steps 40 --output /tmp/out
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import trainyard_common as tc

DEFAULTS = {
    "tiny": {"steps": 60, "batch": 32, "lr": 2e-3, "checkpoint_every": 20, "eval_every": 20},
    "full": {"steps": 20000, "batch": 64, "lr": 2e-4, "checkpoint_every": 1000, "eval_every": 1000,
             "clip": 1.0},
}


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.norm1 = nn.GroupNorm(min(8, cin), cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(min(8, cout), cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(temb)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class UNet(nn.Module):
    """Two resolutions per channel multiplier; skip connections by concat."""

    def __init__(self, channels):
        super().__init__()
        c0 = channels[0]
        self.tdim = c0 * 4
        self.time = nn.Sequential(nn.Linear(c0, self.tdim), nn.SiLU(), nn.Linear(self.tdim, self.tdim))
        self.inp = nn.Conv2d(3, c0, 3, padding=1)
        self.down, self.pools = nn.ModuleList(), nn.ModuleList()
        cin, skips = c0, []
        for i, c in enumerate(channels):
            self.down.append(ResBlock(cin, c, self.tdim))
            skips.append(c)
            cin = c
            self.pools.append(nn.Conv2d(c, c, 3, stride=2, padding=1) if i < len(channels) - 1
                              else nn.Identity())
        self.mid = ResBlock(cin, cin, self.tdim)
        self.up, self.ups = nn.ModuleList(), nn.ModuleList()
        for i, c in reversed(list(enumerate(channels))):
            self.up.append(ResBlock(cin + skips[i], c, self.tdim))
            cin = c
            self.ups.append(nn.Upsample(scale_factor=2, mode="nearest") if i > 0 else nn.Identity())
        self.out = nn.Sequential(nn.GroupNorm(min(8, cin), cin), nn.SiLU(), nn.Conv2d(cin, 3, 3, padding=1))
        self.blocks = list(self.down) + [self.mid] + list(self.up)

    def forward(self, x, t):
        temb = self.time(timestep_embedding(t, self.time[0].in_features))
        h = self.inp(x)
        hs = []
        for block, pool in zip(self.down, self.pools):
            h = block(h, temb)
            hs.append(h)
            h = pool(h)
        h = self.mid(h, temb)
        for block, up in zip(self.up, self.ups):
            h = block(torch.cat([h, hs.pop()], dim=1), temb)
            h = up(h)
        return self.out(h)


class Diffusion:
    def __init__(self, timesteps):
        self.T = timesteps
        scale = 1000.0 / timesteps
        self.betas = torch.linspace(1e-4 * scale, 0.02 * scale, timesteps, dtype=torch.float64).clamp(max=0.999)
        self.alphas = 1 - self.betas
        self.abar = torch.cumprod(self.alphas, 0)

    def noisy(self, x0, t, noise):
        ab = self.abar.to(x0.device)[t].float()[:, None, None, None]
        return ab.sqrt() * x0 + (1 - ab).sqrt() * noise

    @torch.no_grad()
    def sample(self, model, n, size, device, gen):
        x = torch.randn(n, 3, size, size, generator=gen).to(device)
        for t in reversed(range(self.T)):
            tt = torch.full((n,), t, dtype=torch.long, device=device)
            eps = model(x, tt).float()
            a, ab, b = float(self.alphas[t]), float(self.abar[t]), float(self.betas[t])
            x = (x - b / math.sqrt(1 - ab) * eps) / math.sqrt(a)
            if t > 0:
                x = x + math.sqrt(b) * torch.randn(x.shape, generator=gen).to(device)
        return x.clamp(-1, 1)


class Unlabelled(torch.utils.data.Dataset):
    """Images only; with fixed=True item i also carries its own timestep and
    noise (seeded by i), so validation measures the same thing each time."""

    def __init__(self, base, T, fixed, seed):
        self.base, self.T, self.fixed, self.seed = base, T, fixed, seed

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        x = self.base[i][0]
        if not self.fixed:
            return x
        g = torch.Generator()
        g.manual_seed(tc.stable_seed("ddpm-val", self.seed, i))
        return x, torch.randint(0, self.T, (), generator=g), torch.randn(x.shape, generator=g)


def save_png(img, path):
    from PIL import Image
    arr = ((img.float().cpu() + 1) * 127.5).round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0)
    Image.fromarray(arr.contiguous().numpy(), "RGB").save(path)


def main():
    p = tc.arg_parser(__doc__, DEFAULTS)
    p.add_argument("--image-size", type=int, default=None, help="default 16 (tiny) / 64 (full)")
    p.add_argument("--timesteps", type=int, default=None, help="default 100 (tiny) / 1000 (full)")
    p.add_argument("--channels", default=None, help="comma-separated, default 16,32 / 64,128,256")
    p.add_argument("--samples", type=int, default=16, help="images drawn at the end")
    ctx = tc.start(p)
    a = ctx.args
    size = a.image_size or (16 if a.size == "tiny" else 64)
    T = a.timesteps or (100 if a.size == "tiny" else 1000)
    channels = [int(c) for c in (a.channels or ("16,32" if a.size == "tiny" else "64,128,256")).split(",")]
    if size % (2 ** (len(channels) - 1)):
        tc.fail("--image-size %d is not divisible by 2^%d (one halving per extra channel level)"
                % (size, len(channels) - 1))
    if ctx.synthetic:
        base = tc.SyntheticImages(512 if a.size == "tiny" else 8192, 8, size, a.seed, noise=0.1)
    else:
        base = tc.ImageFolder(ctx.data, size)
    train_idx, val_idx = tc.stratified_split(base.labels, a.val_fraction, a.seed)
    ctx.log("data: %s, %d train / %d validation images at %dx%d, T=%d, channels %s"
            % ("synthetic" if ctx.synthetic else ctx.data, len(train_idx), len(val_idx), size, size, T,
               channels))
    diff = Diffusion(T)
    model = UNet(channels)

    def loss_fn(m, x0):
        g = ctx.generator()
        t = torch.randint(0, T, (x0.shape[0],), generator=g).to(x0.device)
        noise = torch.randn(x0.shape, generator=g).to(x0.device)
        return F.mse_loss(m(diff.noisy(x0, t, noise), t).float(), noise)

    def eval_batch(m, batch):
        x0, t, noise = batch
        err = (m(diff.noisy(x0, t, noise), t).float() - noise) ** 2
        return {"mse": err.flatten(1).mean(1)}

    def eval_finish(o):
        return {"val_loss": o["mse"].mean()}

    def finish(module, summary):
        module.eval()
        g = torch.Generator()
        g.manual_seed(a.seed + 99)
        imgs = diff.sample(module, a.samples, size, ctx.device, g)
        d = os.path.join(ctx.output, "samples")
        os.makedirs(d, exist_ok=True)
        for i, img in enumerate(imgs):
            save_png(img, os.path.join(d, "sample-%03d.png" % i))
        cols = max(1, int(math.ceil(math.sqrt(len(imgs)))))
        rows = int(math.ceil(len(imgs) / cols))
        grid = torch.full((3, rows * size, cols * size), -1.0)
        for i, img in enumerate(imgs.cpu()):
            r, c = divmod(i, cols)
            grid[:, r * size:(r + 1) * size, c * size:(c + 1) * size] = img
        save_png(grid, os.path.join(ctx.output, "samples.png"))
        tc.atomic_json({"image_size": size, "timesteps": T, "channels": channels,
                        "schedule": "linear betas 1e-4..0.02 scaled by 1000/T", "predicts": "noise"},
                       os.path.join(ctx.output, "config.json"))
        summary["samples"] = len(imgs)
        print("wrote %d samples to %s" % (len(imgs), d), flush=True)

    tc.train(ctx, model, Unlabelled(tc.Subset(base, train_idx), T, False, a.seed), loss_fn,
             val_set=Unlabelled(tc.Subset(base, val_idx), T, True, a.seed), eval_batch=eval_batch,
             eval_finish=eval_finish, blocks=model.blocks,
             block_names="%d U-Net residual blocks" % len(model.blocks),
             extra_state={"image_size": size, "timesteps": T, "channels": channels}, finish=finish)
    return 0


if __name__ == "__main__":
    tc.exit_process(main())
