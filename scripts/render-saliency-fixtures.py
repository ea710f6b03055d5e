#!/usr/bin/python3
"""Renders the saliency task fixtures: a few "real-looking" scenes, one clear
foreground object on a smooth background, as 256x256 RGB PNG images in
tests/fixtures/saliency/ (calibration inputs of `tailor compress --calib` for
a saliency / background-removal model such as ISNet; the model resizes them).

Run once (the outputs are committed); rerunning with the same Debian packages
gives the same images:
    /usr/bin/python3 scripts/render-saliency-fixtures.py [OUT_DIR]

Needs python3-pil and fonts-dejavu-core. No randomness: every colour and
coordinate below is fixed.
"""
import os
import sys

from PIL import Image, ImageDraw, ImageFilter, ImageFont

SIZE = 256
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def gradient(top, bottom):
    """A vertical gradient from colour `top` to colour `bottom`."""
    img = Image.new("RGB", (SIZE, SIZE))
    d = ImageDraw.Draw(img)
    for y in range(SIZE):
        t = y / (SIZE - 1)
        d.line([(0, y), (SIZE, y)], fill=tuple(round(a + (b - a) * t) for a, b in zip(top, bottom)))
    return img


def ball():
    """A shaded red ball with its shadow on a floor/wall gradient."""
    img = gradient((200, 215, 230), (150, 140, 120))
    d = ImageDraw.Draw(img)
    d.ellipse([70, 200, 200, 225], fill=(90, 85, 75))
    for k in range(40):  # concentric discs, lighter towards the highlight
        r = 70 - k * 1.5
        c = (min(255, 150 + 3 * k), 20 + 3 * k, 20 + 3 * k)
        d.ellipse([135 - r - k * 0.4, 125 - r - k * 0.4, 135 + r - k * 0.4, 125 + r - k * 0.4],
                  fill=c)
    return img.filter(ImageFilter.GaussianBlur(0.8))


def person():
    """A figure (head, torso, arms, legs) in a blue coat against a green park."""
    img = gradient((170, 200, 235), (90, 140, 70))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 170, SIZE, SIZE], fill=(80, 125, 60))
    for x, h in [(20, 60), (210, 80), (235, 50)]:  # trees in the distance
        d.ellipse([x - 18, 170 - h, x + 18, 170 - h + 40], fill=(60, 105, 55))
    d.ellipse([108, 30, 148, 72], fill=(225, 185, 150))  # head
    d.pieslice([106, 26, 150, 66], 180, 360, fill=(70, 45, 30))  # hair
    d.rounded_rectangle([96, 74, 160, 160], 14, fill=(40, 70, 160))  # coat
    d.rounded_rectangle([78, 80, 96, 150], 8, fill=(40, 70, 160))  # arms
    d.rounded_rectangle([160, 80, 178, 150], 8, fill=(40, 70, 160))
    d.rectangle([104, 160, 126, 228], fill=(50, 50, 55))  # legs
    d.rectangle([132, 160, 154, 228], fill=(50, 50, 55))
    d.ellipse([98, 222, 128, 236], fill=(30, 25, 20))  # shoes
    d.ellipse([130, 222, 160, 236], fill=(30, 25, 20))
    return img.filter(ImageFilter.GaussianBlur(0.6))


def mug():
    """A yellow mug with a handle and the word 'tailor' on a wooden table."""
    img = gradient((235, 230, 220), (200, 190, 175))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 180, SIZE, SIZE], fill=(140, 95, 55))
    for y in range(185, SIZE, 12):  # wood grain
        d.line([(0, y), (SIZE, y + 4)], fill=(120, 80, 45), width=2)
    d.ellipse([170, 90, 220, 160], outline=(230, 180, 30), width=12)  # handle
    d.rounded_rectangle([60, 70, 185, 200], 12, fill=(240, 190, 40))
    d.ellipse([60, 60, 185, 82], fill=(200, 150, 30))
    d.text((78, 120), "tailor", font=ImageFont.truetype(BOLD, 26), fill=(60, 40, 20))
    return img.filter(ImageFilter.GaussianBlur(0.6))


def bird():
    """A dark bird shape (body, wing, tail, beak) against a sunset sky."""
    img = gradient((250, 170, 90), (120, 60, 120))
    d = ImageDraw.Draw(img)
    d.ellipse([40, 200, 300, 300], fill=(40, 30, 50))  # hill
    d.ellipse([80, 100, 170, 150], fill=(25, 25, 30))  # body
    d.ellipse([150, 80, 190, 118], fill=(25, 25, 30))  # head
    d.polygon([(188, 95), (215, 102), (188, 108)], fill=(230, 160, 30))  # beak
    d.polygon([(100, 110), (150, 40), (160, 115)], fill=(35, 35, 45))  # wing
    d.polygon([(85, 120), (30, 105), (40, 140)], fill=(25, 25, 30))  # tail
    d.line([(120, 148), (115, 175)], fill=(25, 25, 30), width=4)  # legs
    d.line([(140, 148), (142, 175)], fill=(25, 25, 30), width=4)
    return img.filter(ImageFilter.GaussianBlur(0.6))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "saliency")
    os.makedirs(out, exist_ok=True)
    for name, fn in [("ball", ball), ("person", person), ("mug", mug), ("bird", bird)]:
        fn().save(os.path.join(out, name + ".png"), optimize=True)


if __name__ == "__main__":
    main()
