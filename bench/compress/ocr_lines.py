#!/usr/bin/python3
"""More OCR lines for the recogniser's calibration and verification.

Writes OUT/{NN_name.png, labels.tsv} as tests/fixtures/ocr holds them: first
the fixture lines themselves (scripts/render-ocr-fixtures.py's list, the same
renderer), then EXTRA lines of seeded random text (random.Random(SEED)):
Latin words, digit groups, prices, dates and runs of common CJK characters,
in the fixture fonts at 26-32 px, mostly black on white, some grey, some
noisy. Every character is in models/ppocr_keys_v1.txt. `tailor compress
--ocr-lines OUT` calibrates on the even-numbered lines and verifies on the
odd ones, so more lines narrow both sides (the 19 + 19 fixture lines leave
per-line KL heavy-tailed: one line can dominate a mean).

Usage: /usr/bin/python3 bench/compress/ocr_lines.py OUT [EXTRA=42] [SEED=7]
(from the repository root). Needs python3-pil, fonts-dejavu-core and
fonts-wqy-microhei.
"""
import importlib.util
import os
import random
import sys

if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
    sys.exit(__doc__.strip() if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help")
             else "usage: bench/compress/ocr_lines.py OUT [EXTRA=42] [SEED=7]")
out = sys.argv[1]
extra = int(sys.argv[2]) if len(sys.argv) > 2 else 42
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 7
spec = importlib.util.spec_from_file_location("fixtures", "scripts/render-ocr-fixtures.py")
fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixtures)
keys = set(open("models/ppocr_keys_v1.txt", encoding="utf-8").read().split("\n"))
cjk = [c for c in "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长"
       if c in keys]
letters = "abcdefghijklmnopqrstuvwxyz"
rng = random.Random(seed)


def latin_word():
    w = "".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
    return rng.choice([w, w.capitalize(), w.upper()])


def text():
    kind = rng.randrange(6)
    if kind == 0:
        return " ".join(latin_word() for _ in range(rng.randint(1, 4)))
    if kind == 1:
        return " ".join(str(rng.randint(0, 99999)) for _ in range(rng.randint(1, 3)))
    if kind == 2:
        return f"${rng.randint(1, 9999)}.{rng.randint(0, 99):02d}"
    if kind == 3:
        return f"{rng.randint(1990, 2030)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == 4:
        return "".join(rng.choice(cjk) for _ in range(rng.randint(2, 8)))
    return latin_word() + " " + str(rng.randint(1, 999))


os.makedirs(out, exist_ok=True)
labels = []
lines = [(n, t, f, s, st) for n, t, f, s, st in fixtures.LINES]
for i in range(extra):
    t = text()
    is_cjk = any(c in cjk for c in t)
    font = "cjk" if is_cjk else rng.choice(["sans", "serif", "mono", "bold"])
    style = rng.choices(["plain", "grey", "noisy"], [8, 1, 1])[0]
    lines.append((f"extra{i}", t, font, rng.randint(26, 32), style))
render_rng = random.Random(20240315)
for i, (name, t, font, size, style) in enumerate(lines):
    missing = [c for c in t if c != " " and c not in keys]
    if missing:
        sys.exit(f"ocr_lines.py: {name}: {missing} not in models/ppocr_keys_v1.txt")
    fname = f"{i:02d}_{name}.png"
    fixtures.render(t, font, size, style, render_rng).save(os.path.join(out, fname), optimize=True)
    labels.append(f"{fname}\t{t}\n")
with open(os.path.join(out, "labels.tsv"), "w", encoding="utf-8") as f:
    f.writelines(labels)
print(f"ocr_lines.py: {len(labels)} lines in {out}")
