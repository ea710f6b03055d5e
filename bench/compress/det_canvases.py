#!/usr/bin/env python3
"""Detector calibration / verification inputs from the OCR fixture lines.

Composes the text lines of tests/fixtures/ocr onto white SIZE×SIZE canvases
(deterministic: line i goes to canvas i mod N, stacked top to bottom with a
left indent and gap that depend on i; wider lines are scaled down to fit), and
writes each canvas as x.npy [1, 3, SIZE, SIZE] f32 under OUT/<k>/ with
PaddleOCR's detector normalisation: (pixel / 255 − mean) / std per channel,
mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225), pixels replicated to
three channels (the lines are greyscale). Also writes OUT/<k>.png to look at.
`tailor compress --calib OUT` calibrates on the even-numbered canvases and
verifies on the odd ones, so no text line is in both sets.

Usage: bench/compress/det_canvases.py OUT [N=8] [SIZE=320] (from the repository root).
"""
import os
import sys

if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
    sys.exit(__doc__.strip() if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help")
             else "usage: bench/compress/det_canvases.py OUT [N=8] [SIZE=320]")

import numpy as np
from PIL import Image

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 8
size = int(sys.argv[3]) if len(sys.argv) > 3 else 320
src = "tests/fixtures/ocr"
names = [l.split("\t")[0] for l in open(os.path.join(src, "labels.tsv"), encoding="utf-8")
         if l.strip()]
canvases = [np.full((size, size), 255, np.uint8) for _ in range(n)]
ys = [8] * n
for i, name in enumerate(names):
    k = i % n
    line = Image.open(os.path.join(src, name)).convert("L")
    w, h = line.size
    left = 8 + (i * 37) % 48
    if w > size - left - 8:
        scale = (size - left - 8) / w
        line = line.resize((int(w * scale), max(16, int(h * scale))), Image.BILINEAR)
        w, h = line.size
    if ys[k] + h > size - 8:
        continue
    canvases[k][ys[k]:ys[k] + h, left:left + w] = np.asarray(line)
    ys[k] += h + 10 + (i * 13) % 24
mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
os.makedirs(out, exist_ok=True)
for k, c in enumerate(canvases):
    d = os.path.join(out, f"{k:02d}")
    os.makedirs(d, exist_ok=True)
    x = (np.repeat(c[None].astype(np.float32) / 255.0, 3, axis=0) - mean) / std
    np.save(os.path.join(d, "x.npy"), x[None].astype(np.float32))
    Image.fromarray(c).save(os.path.join(out, f"{k:02d}.png"))
print(f"{n} canvases {size}x{size} in {out}")
