#!/usr/bin/env python3
"""Independent safetensors implementation (numpy only) for the C++ tests.

  safetensors_check.py read FILE   checks a file tailor wrote against the
                                   expected tensors below; exit 0 when equal.
  safetensors_check.py write FILE  writes the expected tensors itself, for
                                   tailor to read.

The format, from the safetensors README: u64 little-endian header length N,
N bytes of JSON {name: {dtype, shape, data_offsets}, "__metadata__": {}},
then the data buffer, fully covered by the tensors.
"""
import json
import struct
import sys

import numpy as np


def expected():
    a = (np.arange(15, dtype=np.float32) * 0.5 - 3.0).reshape(3, 5)
    b = np.array([1.0, -2.0, 0.5, 65504.0], dtype=np.float16)
    c = np.array([[1, -1], [2**40, 7]], dtype=np.int64)
    # bfloat16 has no numpy dtype: its bit patterns as uint16 (1.0, -3.140625, 0.5).
    d = np.array([0x3F80, 0xC049, 0x3F00], dtype=np.uint16)
    e = np.array([[-128, 0, 127]], dtype=np.int8)
    return {"a": ("F32", a), "b": ("F16", b), "c": ("I64", c), "d": ("BF16", d), "e": ("I8", e)}


NP = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "BF16": np.uint16, "I8": np.int8}
METADATA = {"format": "pt", "note": "written for a test"}


def read(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    data = raw[8 + n :]
    meta = header.pop("__metadata__", {})
    if meta != METADATA:
        print("metadata differs:", meta)
        return 1
    spans = sorted(tuple(v["data_offsets"]) for v in header.values())
    pos = 0
    for b, e in spans:
        if b != pos:
            print("hole or overlap at", b)
            return 1
        pos = e
    if pos != len(data):
        print("buffer not fully covered")
        return 1
    exp = expected()
    if set(header) != set(exp):
        print("names differ:", sorted(header))
        return 1
    for name, (dt, arr) in exp.items():
        h = header[name]
        if h["dtype"] != dt or list(h["shape"]) != list(arr.shape):
            print(name, "dtype/shape differ:", h)
            return 1
        b, e = h["data_offsets"]
        got = np.frombuffer(data[b:e], dtype=np.dtype(NP[dt]).newbyteorder("<")).reshape(arr.shape)
        if not np.array_equal(got, arr):
            print(name, "values differ:", got, arr)
            return 1
    return 0


def write(path):
    header = {"__metadata__": METADATA}
    blobs, pos = [], 0
    for name, (dt, arr) in expected().items():
        blob = arr.astype(np.dtype(NP[dt]).newbyteorder("<")).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [pos, pos + len(blob)]}
        blobs.append(blob)
        pos += len(blob)
    js = json.dumps(header).encode("utf-8")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))
    return 0


if __name__ == "__main__":
    sys.exit(read(sys.argv[2]) if sys.argv[1] == "read" else write(sys.argv[2]))
