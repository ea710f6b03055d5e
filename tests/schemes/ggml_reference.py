"""Independent numpy implementation of ggml's q8_0 and q4_0 block encoders,
written from the definitions in include/tailor/schemes/ggml_blocks.h (ggml's
quantize_row_q8_0_ref / quantize_row_q4_0_ref): each row of W [out, in]
(in % 32 == 0) is cut into blocks of 32; every block is written as ggml
stores it (f16 scale little-endian, then the codes).

usage: ggml_reference.py W.npy LABEL BLOCKS.npy DECODED.npy
writes the block bytes (u8) and the dequantized weights (f32 [out, in]).
"""
import sys

import numpy as np


def blocks_of(w):
    w = np.asarray(w, dtype=np.float32)
    assert w.ndim == 2 and w.shape[1] % 32 == 0
    return w.reshape(-1, 32)


def inverse(d):
    out = np.zeros_like(d)
    nz = d != 0
    out[nz] = np.float32(1) / d[nz]
    return out


def q8_0(w):
    b = blocks_of(w)
    amax = np.abs(b).max(axis=1)
    d = (amax / np.float32(127)).astype(np.float32)
    x = (b * inverse(d)[:, None]).astype(np.float32)
    xd = np.abs(x.astype(np.float64))
    q = (np.sign(x) * np.floor(xd + 0.5)).astype(np.int8)  # roundf: half away from zero
    d16 = d.astype(np.float16)
    raw = np.concatenate([d16.view(np.uint8).reshape(-1, 2), q.view(np.uint8)], axis=1)
    dec = q.astype(np.float32) * d16.astype(np.float32)[:, None]
    return raw.reshape(-1), dec.reshape(np.shape(w))


def q4_0(w):
    b = blocks_of(w)
    first = np.argmax(np.abs(b), axis=1)  # the first of equal magnitudes
    m = b[np.arange(b.shape[0]), first]
    d = (m / np.float32(-8)).astype(np.float32)
    v = (b * inverse(d)[:, None]).astype(np.float32) + np.float32(8.5)
    c = np.minimum(15, np.trunc(v.astype(np.float64))).astype(np.uint8)
    packed = (c[:, :16] | (c[:, 16:] << 4)).astype(np.uint8)
    d16 = d.astype(np.float16)
    raw = np.concatenate([d16.view(np.uint8).reshape(-1, 2), packed], axis=1)
    dec = (c.astype(np.float32) - 8) * d16.astype(np.float32)[:, None]
    return raw.reshape(-1), dec.reshape(np.shape(w))


def main():
    w = np.load(sys.argv[1])
    raw, dec = {"q8_0": q8_0, "q4_0": q4_0}[sys.argv[2]](w)
    np.save(sys.argv[3], raw)
    np.save(sys.argv[4], dec.astype(np.float32))


if __name__ == "__main__":
    with np.errstate(over="ignore"):
        main()
