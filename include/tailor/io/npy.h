// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the exchange format of
// `tailor run` inputs and outputs and of the onnxruntime reference harness.
// Specification: numpy/lib/format.py ("NPY format"), numpy.org/devdocs/reference/
// generated/numpy.lib.format.html.
#pragma once

#include <string>
#include <string_view>

#include "tailor/core/tensor.h"

namespace tailor {

/// Reads an .npy array into an owned contiguous tensor. Supported element types
/// (little-endian or byte-order free): '<f4' f32, '<f2' f16, '<f8' f64, '|i1' i8,
/// '|u1' u8, '<i2' i16, '<u2' u16, '<i4' i32, '<i8' i64, '|b1' bool. Fortran-
/// ordered arrays are transposed into row-major order. A 0-d array gives shape {}.
///
/// Throws Error naming the file, in one line, for a missing or unreadable file,
/// a bad magic string or version, a header that is not a Python dict literal
/// with 'descr', 'fortran_order' and 'shape', a big-endian or unsupported dtype
/// (object arrays, strings, complex, structured), a negative or overflowing
/// shape, or data shorter or longer than the shape says.
Tensor read_npy(const std::string& path);

/// Parses .npy bytes held in memory (as read_npy; `source` names them in errors).
Tensor parse_npy(std::string_view bytes, const std::string& source);

/// The .npy file (version 1.0, or 2.0 when the header needs it) of `t`, any
/// layout (written row-major), dtypes as read_npy lists; bf16 is refused
/// (NumPy has no such type) with an Error.
std::string npy_bytes(const Tensor& t);

/// Writes `t` to `path` atomically (write_file_atomic): a failure leaves no file.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace tailor
