#!/usr/bin/env python3
"""Detector calibration / verification inputs from the OCR fixture lines.

Composes the text lines of tests/fixtures/ocr onto white SIZE×SIZE canvases
(deterministic: line i goes to canvas i mod N, stacked top to bottom with a
left indent and gap that depend on i; wider lines are scaled down to fit), and
writes each canvas as x.npy [1, 3, SIZE, SIZE] f32 under OUT/<k>/ with
PaddleOCR's detector normalisation: (pixel / 255 − mean) / std per channel,
mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225), pixels replicated to
three channels (the lines are greyscale). Also writes OUT/<k>/x.png to look
at (compress --calib reads only the .npy of each input folder).
`tailor compress --calib OUT` calibrates on the even-numbered canvases and
verifies on the odd ones, so no text line is in both sets.

--fill: then fills the rest of each canvas with lines rendered in DejaVu Sans
(Debian's fonts-dejavu-core): words of random letters, numbers, prices and
dates, 12-28 px high, grey 0-90 on white, drawn from numpy's default_rng(1000
+ k) for canvas k, so each canvas's rendered text is its own. The 38 fixture
lines alone leave two or three short lines per canvas at N = 16, and the two
halves' damage then differs by line (the detector's held-out half measured 0.4-0.6x
the calibration half's for every plan and uniform scheme); filled canvases
hold about ten lines each.

Usage: bench/compress/det_canvases.py OUT [N=8] [SIZE=320] [--fill] (from the repository root).
"""
import os
import sys

if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
    sys.exit(__doc__.strip() if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help")
             else "usage: bench/compress/det_canvases.py OUT [N=8] [SIZE=320] [--fill]")

import numpy as np
from PIL import Image

fill = "--fill" in sys.argv[2:]
args = [a for a in sys.argv[1:] if a != "--fill"]
out = args[0]
n = int(args[1]) if len(args) > 1 else 8
size = int(args[2]) if len(args) > 2 else 320
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
if fill:
    from PIL import ImageDraw, ImageFont
    font_path = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    if not os.path.exists(font_path):
        sys.exit(f"det_canvases.py: --fill needs {font_path} (apt-get install fonts-dejavu-core)")
    letters = "abcdefghijklmnopqrstuvwxyz"

    def word(rng):
        kind = rng.integers(0, 6)
        if kind == 0:
            return f"{rng.integers(1, 999)}.{rng.integers(0, 100):02d}"
        if kind == 1:
            return f"{rng.integers(1, 29):02d}/{rng.integers(1, 13):02d}/{rng.integers(1990, 2030)}"
        w = "".join(letters[i] for i in rng.integers(0, 26, rng.integers(2, 10)))
        return w.capitalize() if kind == 2 else w.upper() if kind == 3 else w

    for k in range(n):
        rng = np.random.default_rng(1000 + k)
        img = Image.fromarray(canvases[k])
        draw = ImageDraw.Draw(img)
        y = ys[k]
        while True:
            px = int(rng.integers(12, 29))
            font = ImageFont.truetype(font_path, px)
            if y + px + 4 > size - 8:
                break
            left = 8 + int(rng.integers(0, 48))
            text = " ".join(word(rng) for _ in range(int(rng.integers(1, 7))))
            while len(text) > 1 and draw.textlength(text, font=font) > size - left - 8:
                text = text[:-1]
            draw.text((left, y), text.strip(), fill=int(rng.integers(0, 91)), font=font)
            y += px + 6 + int(rng.integers(0, 20))
        canvases[k] = np.asarray(img).copy()
mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
os.makedirs(out, exist_ok=True)
for k, c in enumerate(canvases):
    d = os.path.join(out, f"{k:02d}")
    os.makedirs(d, exist_ok=True)
    x = (np.repeat(c[None].astype(np.float32) / 255.0, 3, axis=0) - mean) / std
    np.save(os.path.join(d, "x.npy"), x[None].astype(np.float32))
    Image.fromarray(c).save(os.path.join(d, "x.png"))
    stale = os.path.join(out, f"{k:02d}.png")  # where versions before stop 51 put it
    if os.path.exists(stale):
        os.remove(stale)  # compress --calib refuses files beside input folders
print(f"{n} canvases {size}x{size} in {out}")
