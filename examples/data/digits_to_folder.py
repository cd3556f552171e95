#!/usr/bin/env python3
"""Write scikit-learn's handwritten digits as an image-folder dataset.

The digits set ships inside Debian's python3-sklearn (sklearn.datasets.
load_digits reads it from the package; nothing is downloaded): 1,797
grayscale images of 8x8 pixels (values 0..16), 10 classes. Written as
OUT/<digit>/digit-<index>.png, upscaled --scale times (default 4: 32x32),
values spread over 0..255. The result is what examples/defect_classify.py,
product_embed.py and product_ddpm.py read (examples/README.md, image-folder).

  python3 examples/data/digits_to_folder.py /tmp/digits [--scale 4]
"""
import argparse
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="output directory (created; existing files are overwritten)")
    p.add_argument("--scale", type=int, default=4, help="upscaling factor of the 8x8 images")
    args = p.parse_args()
    if args.scale < 1:
        p.error("--scale must be at least 1")
    from PIL import Image
    from sklearn.datasets import load_digits

    d = load_digits()
    size = 8 * args.scale
    counts = {}
    for i, (img, label) in enumerate(zip(d.images, d.target)):
        cls = os.path.join(args.out, str(int(label)))
        os.makedirs(cls, exist_ok=True)
        pix = bytes(int(round(v * 255 / 16)) for v in img.reshape(-1))
        im = Image.frombytes("L", (8, 8), pix).resize((size, size), Image.BILINEAR)
        im.save(os.path.join(cls, "digit-%04d.png" % i))
        counts[int(label)] = counts.get(int(label), 0) + 1
    print("wrote %d images (%dx%d) in %d classes to %s: %s"
          % (sum(counts.values()), size, size, len(counts), args.out,
             ", ".join("%d:%d" % kv for kv in sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
