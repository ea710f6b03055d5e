#!/usr/bin/env python3
"""More varied saliency scenes than the four committed fixtures, seeded.

Writes N 256x256 RGB PNG scenes to OUT, each one foreground subject on a
background, drawn with PIL from numpy's default_rng(SEED * 1000 + k) for
scene k (the same arguments give the same files). A scene is:
- a background: a vertical two-colour gradient, a ground band with or
  without stripes, a few distant shapes (hills, trees, windows), and
  per-pixel noise of a random strength;
- a subject of one of six kinds, in random colours, place and size: an
  animal (body, head, legs, tail, ear), a standing figure, a vehicle
  (body, cabin, wheels), a potted plant (stem, leaves), a bottle or vase,
  a sign with a word in DejaVu Sans Bold;
- a shadow under the subject, a slight blur.

--with-fixtures: also copies tests/fixtures/saliency's four scenes, and names
every file so that `tailor compress --calib OUT` (which calibrates on the
even-numbered inputs in name order and verifies on the odd ones) calibrates
on ball, mug and the even-numbered generated scenes and verifies on bird,
person and the odd-numbered ones: the four fixtures keep their roles.

Usage: bench/compress/saliency_scenes.py OUT [N=4] [SEED=1] [--with-fixtures]
(from the repository root; needs python3-pil, python3-numpy and
fonts-dejavu-core).
"""
import os
import shutil
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

SIZE = 256
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
WORDS = ["EXIT", "OPEN", "CAFE", "STOP", "SALE", "HOTEL", "BUS", "INFO"]


def colour(rng, lo=0, hi=255):
    return tuple(int(v) for v in rng.integers(lo, hi + 1, 3))


def background(rng):
    top, bottom = colour(rng, 60, 250), colour(rng, 30, 220)
    img = Image.new("RGB", (SIZE, SIZE))
    d = ImageDraw.Draw(img)
    for y in range(SIZE):
        t = y / (SIZE - 1)
        d.line([(0, y), (SIZE, y)], fill=tuple(round(a + (b - a) * t) for a, b in zip(top, bottom)))
    horizon = int(rng.integers(140, 210))
    ground = colour(rng, 30, 200)
    d.rectangle([0, horizon, SIZE, SIZE], fill=ground)
    if rng.random() < 0.5:  # stripes: floorboards, a road, furrows
        stripe = tuple(max(0, c - 25) for c in ground)
        step = int(rng.integers(8, 20))
        for y in range(horizon + 4, SIZE, step):
            d.line([(0, y), (SIZE, y + int(rng.integers(-4, 5)))], fill=stripe, width=2)
    for _ in range(int(rng.integers(1, 5))):  # distant shapes
        x = int(rng.integers(0, SIZE))
        w, h = int(rng.integers(15, 60)), int(rng.integers(15, 70))
        c = colour(rng, 40, 200)
        if rng.random() < 0.5:
            d.ellipse([x - w, horizon - h, x + w, horizon + 10], fill=c)
        else:
            d.rectangle([x - w // 2, horizon - h, x + w // 2, horizon], fill=c)
    return img, horizon


def animal(d, rng, cx, base, s, c):
    body = [cx - 50 * s, base - 70 * s, cx + 40 * s, base - 30 * s]
    d.ellipse(body, fill=c)
    hx = cx + (45 if rng.random() < 0.5 else -55) * s
    d.ellipse([hx - 18 * s, base - 95 * s, hx + 18 * s, base - 60 * s], fill=c)
    d.polygon([(hx - 10 * s, base - 90 * s), (hx - 4 * s, base - 110 * s), (hx + 4 * s, base - 90 * s)],
              fill=c)
    for lx in (-40, -25, 15, 30):
        d.rectangle([cx + lx * s, base - 40 * s, cx + (lx + 8) * s, base], fill=c)
    tx = cx - 50 * s if hx > cx else cx + 40 * s
    d.line([(tx, base - 60 * s), (tx + (-25 if hx > cx else 25) * s, base - 85 * s)], fill=c,
           width=max(2, int(6 * s)))


def figure(d, rng, cx, base, s, c):
    skin = colour(rng, 120, 240)
    d.rectangle([cx - 22 * s, base - 60 * s, cx - 4 * s, base], fill=colour(rng, 20, 120))
    d.rectangle([cx + 4 * s, base - 60 * s, cx + 22 * s, base], fill=colour(rng, 20, 120))
    d.rounded_rectangle([cx - 30 * s, base - 140 * s, cx + 30 * s, base - 55 * s], int(12 * s), fill=c)
    d.rounded_rectangle([cx - 46 * s, base - 135 * s, cx - 30 * s, base - 70 * s], int(7 * s), fill=c)
    d.rounded_rectangle([cx + 30 * s, base - 135 * s, cx + 46 * s, base - 70 * s], int(7 * s), fill=c)
    d.ellipse([cx - 20 * s, base - 182 * s, cx + 20 * s, base - 140 * s], fill=skin)


def vehicle(d, rng, cx, base, s, c):
    d.rounded_rectangle([cx - 80 * s, base - 55 * s, cx + 80 * s, base - 15 * s], int(10 * s), fill=c)
    d.rounded_rectangle([cx - 45 * s, base - 90 * s, cx + 35 * s, base - 50 * s], int(10 * s), fill=c)
    d.rectangle([cx - 35 * s, base - 82 * s, cx + 25 * s, base - 58 * s], fill=colour(rng, 150, 230))
    for wx in (-50, 50):
        d.ellipse([cx + (wx - 18) * s, base - 36 * s, cx + (wx + 18) * s, base], fill=(25, 25, 25))


def plant(d, rng, cx, base, s, c):
    pot = colour(rng, 90, 200)
    d.polygon([(cx - 30 * s, base - 50 * s), (cx + 30 * s, base - 50 * s), (cx + 22 * s, base),
               (cx - 22 * s, base)], fill=pot)
    d.line([(cx, base - 50 * s), (cx, base - 160 * s)], fill=(40, 90, 40), width=max(2, int(5 * s)))
    for k in range(int(rng.integers(4, 8))):
        y = base - (70 + 15 * k) * s
        side = 1 if k % 2 else -1
        d.ellipse([cx + min(0, side * 50) * s, y - 12 * s, cx + max(0, side * 50) * s, y + 12 * s],
                  fill=c)


def bottle(d, rng, cx, base, s, c):
    d.rounded_rectangle([cx - 30 * s, base - 120 * s, cx + 30 * s, base], int(14 * s), fill=c)
    d.rectangle([cx - 11 * s, base - 165 * s, cx + 11 * s, base - 115 * s], fill=c)
    d.rectangle([cx - 13 * s, base - 175 * s, cx + 13 * s, base - 162 * s], fill=colour(rng))
    d.rectangle([cx - 30 * s, base - 85 * s, cx + 30 * s, base - 45 * s], fill=colour(rng, 180, 255))


def sign(d, rng, cx, base, s, c):
    d.rectangle([cx - 4 * s, base - 90 * s, cx + 4 * s, base], fill=(90, 90, 95))
    d.rounded_rectangle([cx - 60 * s, base - 160 * s, cx + 60 * s, base - 90 * s], int(8 * s), fill=c)
    word = WORDS[int(rng.integers(0, len(WORDS)))]
    font = ImageFont.truetype(BOLD, max(10, int(26 * s)))
    d.text((cx - 50 * s, base - 140 * s), word, font=font, fill=colour(rng, 0, 80))


SUBJECTS = [animal, figure, vehicle, plant, bottle, sign]


def scene(seed):
    rng = np.random.default_rng(seed)
    img, horizon = background(rng)
    d = ImageDraw.Draw(img)
    s = float(rng.uniform(0.7, 1.2))
    cx = float(rng.uniform(80, 176))
    base = float(min(SIZE - 10, horizon + rng.uniform(20, 60)))
    ground = img.getpixel((int(cx), int(base)))
    d.ellipse([cx - 70 * s, base - 8, cx + 70 * s, base + 8], fill=tuple(c // 2 for c in ground))
    SUBJECTS[int(rng.integers(0, len(SUBJECTS)))](d, rng, cx, base, s, colour(rng, 0, 255))
    px = np.asarray(img).astype(np.float64)
    px += rng.normal(0.0, float(rng.uniform(0, 12)), px.shape)
    img = Image.fromarray(np.clip(np.rint(px), 0, 255).astype(np.uint8))
    return img.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.4, 1.0))))


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if not args or "-h" in argv or "--help" in argv:
        sys.exit(__doc__.strip())
    out = args[0]
    n = int(args[1]) if len(args) > 1 else 4
    seed = int(args[2]) if len(args) > 2 else 1
    os.makedirs(out, exist_ok=True)
    names = [f"scene{k:02d}" for k in range(n)]
    if "--with-fixtures" in argv:
        fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "fixtures", "saliency")
        # In their own name order (ball, bird, mug, person), as compress reads
        # the fixture folder: even-numbered calibrate, odd-numbered verify.
        order = sorted(f for f in os.listdir(fixtures) if f.endswith(".png"))
        for i, name in enumerate(order):
            shutil.copyfile(os.path.join(fixtures, name), os.path.join(out, f"{i:03d}_{name}"))
        names = [f"{len(order) + k:03d}_{name}" for k, name in enumerate(names)]
    for k, name in enumerate(names):
        scene(seed * 1000 + k).save(os.path.join(out, name + ".png"), optimize=True)


if __name__ == "__main__":
    main(sys.argv[1:])
