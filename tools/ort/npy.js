// Minimal NumPy .npy reader/writer (format versions 1.0, 2.0, 3.0 read; 1.0 or
// 2.0 written), for the dtypes tailor exchanges with onnxruntime:
//   npy descr  ->  onnxruntime tensor type (typed array)
//   <f4           float32  (Float32Array)
//   <f2           float16  (Uint16Array of IEEE half bit patterns)
//   <i8           int64    (BigInt64Array)
//   <i4           int32    (Int32Array)
//   |u1           uint8    (Uint8Array)
//   |b1           bool     (Uint8Array of 0/1)
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// Only C-order, little-endian arrays. Errors are thrown as Error("FILE: problem").
'use strict';

const fs = require('fs');
const path = require('path');

const DTYPES = {
  '<f4': { type: 'float32', size: 4, Array: Float32Array },
  '<f2': { type: 'float16', size: 2, Array: Uint16Array },
  '<i8': { type: 'int64', size: 8, Array: BigInt64Array },
  '<i4': { type: 'int32', size: 4, Array: Int32Array },
  '|u1': { type: 'uint8', size: 1, Array: Uint8Array },
  '|b1': { type: 'bool', size: 1, Array: Uint8Array },
};
const ALIASES = { '<u1': '|u1', '|i1': null, '<b1': '|b1' };
const DESCR_OF_TYPE = Object.fromEntries(Object.entries(DTYPES).map(([d, v]) => [v.type, d]));

function parseHeader(file, text) {
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr || !fortran || !shape) throw new Error(`${file}: malformed .npy header ${JSON.stringify(text.trim())}`);
  if (fortran[1] === 'True') throw new Error(`${file}: Fortran-order arrays are not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0).map((s) => {
    if (!/^\d+$/.test(s)) throw new Error(`${file}: bad shape entry '${s}' in .npy header`);
    return Number(s);
  });
  let d = descr[1];
  if (d in ALIASES && ALIASES[d]) d = ALIASES[d];
  if (!(d in DTYPES)) throw new Error(`${file}: unsupported .npy dtype '${descr[1]}' (supported: ${Object.keys(DTYPES).join(' ')})`);
  return { descr: d, dims };
}

// Returns { type, dims, data } with data a typed array of the element count.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(`${file}: not a .npy file (bad magic)`);
  }
  const major = buf.readUInt8(6);
  let hlen, hstart;
  if (major === 1) { hlen = buf.readUInt16LE(8); hstart = 10; }
  else if (major === 2 || major === 3) {
    if (buf.length < 12) throw new Error(`${file}: truncated .npy header`);
    hlen = buf.readUInt32LE(8); hstart = 12;
  } else throw new Error(`${file}: unsupported .npy format version ${major}`);
  if (hstart + hlen > buf.length) throw new Error(`${file}: truncated .npy header`);
  const { descr, dims } = parseHeader(file, buf.toString(major === 3 ? 'utf8' : 'latin1', hstart, hstart + hlen));
  const dt = DTYPES[descr];
  const count = dims.reduce((a, b) => a * b, 1);
  const start = hstart + hlen;
  const bytes = count * dt.size;
  if (buf.length - start !== bytes) {
    throw new Error(`${file}: data is ${buf.length - start} bytes, shape [${dims}] of ${descr} needs ${bytes}`);
  }
  // Copy into an aligned buffer: the data offset need not be a multiple of the element size.
  const ab = new ArrayBuffer(bytes);
  new Uint8Array(ab).set(buf.subarray(start, start + bytes));
  return { type: dt.type, dims, data: new dt.Array(ab) };
}

function encodeNpy(type, dims, data) {
  const descr = DESCR_OF_TYPE[type];
  if (!descr) throw new Error(`cannot write tensor type '${type}' as .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  let major = 1, pre = 10;
  // Pad with spaces so that the data starts on a 64-byte boundary; end with '\n'.
  let total = pre + header.length + 1;
  if (total + ((64 - (total % 64)) % 64) - pre > 0xffff) { major = 2; pre = 12; total = pre + header.length + 1; }
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(pre);
  head.writeUInt8(0x93, 0);
  head.write('NUMPY', 1, 'latin1');
  head.writeUInt8(major, 6);
  head.writeUInt8(0, 7);
  if (major === 1) head.writeUInt16LE(header.length, 8); else head.writeUInt32LE(header.length, 8);
  let body;
  if (type === 'bool') body = Buffer.from(Uint8Array.from(data, (v) => (v ? 1 : 0)));
  else body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.concat([head, Buffer.from(header, 'latin1'), body]);
}

// Writes atomically: FILE.tmp-<pid> then rename.
function writeNpy(file, type, dims, data) {
  const bytes = encodeNpy(type, dims, data);
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}`);
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, file);
}

module.exports = { readNpy, writeNpy, encodeNpy, DTYPES };
