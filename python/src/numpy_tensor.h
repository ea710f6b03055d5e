// numpy arrays ↔ tailor::Tensor for the Python module: inputs are copied into
// owned tensors, outputs are handed to numpy without a copy.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "tailor/core/tensor.h"

namespace tailor::python {

/// An owned contiguous copy of `array` (C-contiguous, native byte order; the
/// Python layer ensures both). numpy dtypes map to tailor's: float32 f32,
/// float16 f16, float64 f64, int8/uint8/int16/uint16/int32/int64 and bool
/// alike. Call with the GIL held. Throws Error naming `what` for any other
/// dtype (complex, object, strings, ...) or a non-contiguous array.
Tensor tensor_from_array(const pybind11::array& array, const std::string& what);

/// A numpy array viewing `t`'s bytes, no copy: a capsule owning a copy of the
/// Tensor (so its shared Storage) is the array's base, so the bytes stay
/// valid, and unused by anyone else, for as long as numpy holds them. A
/// non-contiguous or misaligned tensor is made contiguous first; bf16 is
/// returned as float32 (numpy has no bfloat16; exact). `writeable` false
/// marks the array read-only (a mapped file's bytes, or a model weight an
/// output aliases). Call with the GIL held.
pybind11::array array_from_tensor(const Tensor& t, bool writeable);

}  // namespace tailor::python
