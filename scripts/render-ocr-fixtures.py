#!/usr/bin/python3
"""Renders the OCR task fixtures: single printed text lines as PNG images with
their ground truth, tests/fixtures/ocr/{NN_name.png, labels.tsv}.

Run once (the outputs are committed); rerunning with the same Debian packages
gives the same images:
    /usr/bin/python3 scripts/render-ocr-fixtures.py [OUT_DIR]

Needs python3-pil and Debian's fonts-dejavu-core (Latin: DejaVu Sans, Serif,
Sans Mono) and fonts-wqy-microhei (CJK: WenQuanYi Micro Hei). Every character
used is in models/ppocr_keys_v1.txt (or is a space). Images are 8-bit
greyscale, height 48 px, width fitted to the text with an 8 px margin; most are
black on white, a few grey on light grey and a few with seeded Gaussian noise.
labels.tsv: one line per image, `file<TAB>text`, UTF-8.
"""
import os
import random
import sys

from PIL import Image, ImageDraw, ImageFont

FONTS = {
    "sans": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "serif": "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "mono": "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    "bold": "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "cjk": "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
}

HEIGHT = 48
MARGIN = 8

# (name, text, font, size in px, style); style: plain | grey | noisy
LINES = [
    ("digits1", "0123456789", "sans", 30, "plain"),
    ("digits2", "31415926", "mono", 30, "plain"),
    ("digits3", "2718 2818 2845", "serif", 28, "plain"),
    ("phone", "400-820-8820", "sans", 28, "plain"),
    ("word1", "Hello", "sans", 32, "plain"),
    ("word2", "tailor", "serif", 32, "plain"),
    ("word3", "Compression", "bold", 30, "plain"),
    ("word4", "Budget", "sans", 30, "plain"),
    ("word5", "network", "mono", 30, "plain"),
    ("word6", "RUNTIME", "sans", 30, "plain"),
    ("sentence1", "The quick brown fox", "sans", 28, "plain"),
    ("sentence2", "jumps over the lazy dog", "serif", 28, "plain"),
    ("sentence3", "Open the door slowly.", "sans", 28, "plain"),
    ("sentence4", "Read every line twice", "bold", 26, "plain"),
    ("sentence5", "Models run on CPUs", "sans", 28, "plain"),
    ("sentence6", "Keep it simple", "mono", 28, "plain"),
    ("price1", "$12.99", "sans", 30, "plain"),
    ("price2", "Total: $1,250.00", "sans", 28, "plain"),
    ("price3", "¥388", "sans", 30, "plain"),
    ("price4", "50% off", "serif", 30, "plain"),
    ("date1", "2024-03-15", "sans", 28, "plain"),
    ("date2", "15/08/2023", "mono", 28, "plain"),
    ("date3", "12:45", "sans", 30, "plain"),
    ("date4", "March 7, 2025", "serif", 28, "plain"),
    ("email", "info@example.com", "sans", 26, "plain"),
    ("cjk1", "中国", "cjk", 32, "plain"),
    ("cjk2", "你好", "cjk", 32, "plain"),
    ("cjk3", "北京大学", "cjk", 32, "plain"),
    ("cjk4", "人民银行", "cjk", 32, "plain"),
    ("cjk5", "上海电话", "cjk", 32, "plain"),
    ("cjk6", "2024年3月15日", "cjk", 30, "plain"),
    ("cjk7", "日本", "cjk", 32, "plain"),
    ("grey1", "Light grey text", "sans", 28, "grey"),
    ("grey2", "98765", "sans", 30, "grey"),
    ("grey3", "学生", "cjk", 32, "grey"),
    ("noisy1", "Noise test 42", "sans", 28, "noisy"),
    ("noisy2", "ABCDEF", "bold", 30, "noisy"),
    ("noisy3", "大学", "cjk", 32, "noisy"),
]


def render(text, font_key, size, style, rng):
    font = ImageFont.truetype(FONTS[font_key], size)
    left, top, right, bottom = font.getbbox(text)
    width = right - left + 2 * MARGIN
    fg, bg = (0, 255) if style != "grey" else (90, 215)
    img = Image.new("L", (width, HEIGHT), bg)
    draw = ImageDraw.Draw(img)
    # Centre the ink box vertically.
    y = (HEIGHT - (bottom - top)) // 2 - top
    draw.text((MARGIN - left, y), text, font=font, fill=fg)
    if style == "noisy":
        px = img.load()
        for yy in range(HEIGHT):
            for xx in range(width):
                v = px[xx, yy] + rng.gauss(0.0, 28.0)
                px[xx, yy] = max(0, min(255, int(round(v))))
    return img


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "fixtures", "ocr")
    keys_path = os.path.join(root, "models", "ppocr_keys_v1.txt")
    keys = set(open(keys_path, encoding="utf-8").read().split("\n")) if os.path.exists(keys_path) else None
    os.makedirs(out, exist_ok=True)
    rng = random.Random(20240315)
    labels = []
    for i, (name, text, font, size, style) in enumerate(LINES):
        if keys is not None:
            missing = [c for c in text if c != " " and c not in keys]
            if missing:
                sys.exit(f"render-ocr-fixtures: {name}: {missing} not in {keys_path}")
        fname = f"{i:02d}_{name}.png"
        render(text, font, size, style, rng).save(os.path.join(out, fname), optimize=True)
        labels.append(f"{fname}\t{text}\n")
    with open(os.path.join(out, "labels.tsv"), "w", encoding="utf-8") as f:
        f.writelines(labels)
    print(f"render-ocr-fixtures: {len(labels)} lines in {out}")


if __name__ == "__main__":
    main()
