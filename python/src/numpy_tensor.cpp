// numpy arrays ↔ tailor::Tensor (numpy_tensor.h).
#include "numpy_tensor.h"

#include <cstring>
#include <utility>

#include "tailor/core/dtype.h"
#include "tailor/core/error.h"

namespace py = pybind11;

namespace tailor::python {
namespace {

/// numpy's dtype name of a tailor dtype (bf16 has none: converted before).
const char* numpy_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::f64:
      return "float64";
    case DType::i8:
      return "int8";
    case DType::u8:
      return "uint8";
    case DType::i16:
      return "int16";
    case DType::u16:
      return "uint16";
    case DType::i32:
      return "int32";
    case DType::i64:
      return "int64";
    case DType::boolean:
      return "bool";
    case DType::bf16:
      break;
  }
  throw Error("numpy", "no numpy dtype for " + std::string(dtype_name(t)));
}

bool tailor_dtype(const py::dtype& d, DType& out) {
  const char kind = d.kind();
  const ssize_t size = d.itemsize();
  struct Entry {
    char kind;
    ssize_t size;
    DType dtype;
  };
  static constexpr Entry table[] = {
      {'f', 4, DType::f32}, {'f', 2, DType::f16},     {'f', 8, DType::f64}, {'i', 1, DType::i8},
      {'u', 1, DType::u8},  {'i', 2, DType::i16},     {'u', 2, DType::u16}, {'i', 4, DType::i32},
      {'i', 8, DType::i64}, {'b', 1, DType::boolean},
  };
  for (const Entry& e : table)
    if (e.kind == kind && e.size == size) {
      out = e.dtype;
      return true;
    }
  return false;
}

}  // namespace

Tensor tensor_from_array(const py::array& array, const std::string& what) {
  DType dtype{};
  if (!tailor_dtype(array.dtype(), dtype))
    throw Error(what, "numpy dtype " + std::string(py::str(array.dtype())) +
                          " has no tailor dtype (float32, float16, float64, int8-64, uint8, "
                          "uint16, bool)");
  if (!(array.flags() & py::array::c_style)) throw Error(what, "the array is not C-contiguous");
  Shape shape(array.shape(), array.shape() + array.ndim());
  Tensor t = Tensor::zeros(dtype, shape);
  if (t.nbytes() > 0) std::memcpy(t.mutable_raw(), array.data(), t.nbytes());
  return t;
}

py::array array_from_tensor(const Tensor& tensor, bool writeable) {
  Tensor t = tensor.dtype() == DType::bf16 ? tensor.to(DType::f32) : tensor.contiguous();
  std::vector<ssize_t> shape(t.shape().begin(), t.shape().end());
  std::vector<ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(static_cast<ssize_t>(s * dtype_size(t.dtype())));
  auto* owner = new Tensor(t);
  py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  // numpy writes through the pointer only when the array is writeable; a
  // read-only one (mapped storage) never does.
  void* data = const_cast<std::byte*>(owner->raw());
  py::array out(py::dtype(numpy_name(t.dtype())), shape, strides, data, base);
  if (!writeable || t.storage()->mutable_data() == nullptr)
    py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return out;
}

}  // namespace tailor::python
