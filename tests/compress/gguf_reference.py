"""Independent GGUF reader for the tests: parses a GGUF (v2/v3) file with its
own code (the layout of https://github.com/ggml-org/ggml/blob/master/docs/gguf.md)
and decodes F32, F16, Q8_0 and Q4_0 tensors with numpy.

usage: gguf_reference.py FILE.gguf OUT_DIR
writes OUT_DIR/<tensor name>.npy (f32, row-major shape = ne reversed) per
tensor, OUT_DIR/tensors.txt (name type dims, one line each) and
OUT_DIR/metadata.txt (key = value; arrays as [array of N] and their first
three elements).
"""
import os
import struct
import sys

import numpy as np

TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 8: "Q8_0"}
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
          11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        return self.take(SCALAR[t])


def decode(t, raw, ne):
    n = int(np.prod(ne))
    if t == 0:
        return np.frombuffer(raw, "<f4", n)
    if t == 1:
        return np.frombuffer(raw, "<f2", n).astype(np.float32)
    size = 34 if t == 8 else 18
    blocks = np.frombuffer(raw, np.uint8, n // 32 * size).reshape(-1, size)
    d = blocks[:, :2].copy().view("<f2").astype(np.float32)  # [blocks, 1]
    if t == 8:
        q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    else:
        lo = (blocks[:, 2:] & 0x0F).astype(np.float32) - 8
        hi = (blocks[:, 2:] >> 4).astype(np.float32) - 8
        q = np.concatenate([lo, hi], axis=1)  # element j < 16 low nibbles, j >= 16 high
    return (q * d).reshape(-1)


def main():
    path, out = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    r = Reader(data)
    assert data[:4] == b"GGUF", "bad magic"
    r.pos = 4
    version = r.take("<I")
    assert version in (2, 3), version
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        ne = [r.take("<Q") for _ in range(nd)]
        infos.append((name, ne, r.take("<I"), r.take("<Q")))
    align = meta.get("general.alignment", 32)
    start = (r.pos + align - 1) // align * align
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tensors.txt"), "w") as f:
        for name, ne, t, off in infos:
            shape = list(reversed(ne))
            w = decode(t, data[start + off:], ne).reshape(shape)
            np.save(os.path.join(out, name + ".npy"), w.astype(np.float32))
            f.write("%s %s %s\n" % (name, TYPE_NAMES[t], "x".join(map(str, shape))))
    with open(os.path.join(out, "metadata.txt"), "w") as f:
        for k, v in meta.items():
            if isinstance(v, list):
                v = "[array of %d] %s" % (len(v), " ".join(map(str, v[:3])))
            f.write("%s = %s\n" % (k, v))


if __name__ == "__main__":
    main()
