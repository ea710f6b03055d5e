#include "tailor/core/tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "tailor/core/error.h"

namespace tailor {

int64_t shape_numel(const Shape& shape) {
  // The product of the nonzero dims must fit too: strides are built from it,
  // even when a zero dim leaves the tensor empty.
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) throw Error("", "negative dimension in shape " + shape_to_string(shape));
    if (d == 0) {
      empty = true;
      continue;
    }
    if (n > std::numeric_limits<int64_t>::max() / d)
      throw Error("", "element count of shape " + shape_to_string(shape) + " overflows");
    n *= d;
  }
  return empty ? 0 : n;
}

/// Bytes of a contiguous tensor of `shape` and `dtype`: shape_numel × element
/// size. Throws Error past 2^63 - 1 bytes, the largest object (a shape of 2^62
/// f32 elements would otherwise wrap to a 0-byte buffer in size_t).
size_t shape_bytes(const Shape& shape, DType dtype) {
  const auto n = static_cast<uint64_t>(shape_numel(shape));
  const size_t es = dtype_size(dtype);
  if (n > static_cast<uint64_t>(std::numeric_limits<ptrdiff_t>::max()) / es)
    throw Error("", "shape " + shape_to_string(shape) + " of " + std::string(dtype_name(dtype)) +
                        " needs more than 2^63 bytes");
  return static_cast<size_t>(n) * es;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return st;
}

namespace {

class OwnedStorage final : public Storage {
 public:
  explicit OwnedStorage(size_t bytes) : size_(bytes) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    data_ = static_cast<std::byte*>(std::aligned_alloc(64, rounded ? rounded : 64));
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, rounded ? rounded : 64);
  }
  ~OwnedStorage() override { std::free(data_); }
  const std::byte* data() const override { return data_; }
  std::byte* mutable_data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  std::byte* data_;
  size_t size_;
};

class MappedStorage final : public Storage {
 public:
  MappedStorage(void* addr, size_t size) : addr_(addr), size_(size) {}
  ~MappedStorage() override {
    if (addr_ && size_) munmap(addr_, size_);
  }
  const std::byte* data() const override { return static_cast<const std::byte*>(addr_); }
  std::byte* mutable_data() override { return nullptr; }
  size_t size() const override { return size_; }

 private:
  void* addr_;
  size_t size_;
};

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t bytes) {
  return std::make_shared<OwnedStorage>(bytes);
}

std::shared_ptr<Storage> Storage::map_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check
  // below refuses it (and devices, sockets) before anything is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(path, std::string("cannot stat: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, "not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* addr = nullptr;
  if (size > 0) {
    addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw Error(path, std::string("cannot map: ") + std::strerror(e));
    }
  }
  ::close(fd);
  return std::make_shared<MappedStorage>(addr, size);
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  const int64_t n = shape_numel(shape);
  Tensor t;
  t.storage_ = Storage::allocate(shape_bytes(shape, dtype));
  t.dtype_ = dtype;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  t.numel_ = n;
  return t;
}

Tensor Tensor::from_f32(Shape shape, std::span<const float> values) {
  Tensor t = zeros(DType::f32, std::move(shape));
  if (static_cast<size_t>(t.numel()) != values.size())
    throw Error("", "from_f32: shape " + shape_to_string(t.shape()) + " holds " +
                        std::to_string(t.numel()) + " elements, got " +
                        std::to_string(values.size()));
  if (!values.empty()) std::memcpy(t.mutable_raw(), values.data(), values.size() * 4);
  return t;
}

Tensor Tensor::view(std::shared_ptr<Storage> storage, size_t offset, DType dtype, Shape shape) {
  const int64_t n = shape_numel(shape);
  const size_t es = dtype_size(dtype);
  if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / es)
    throw Error("", "tensor of shape " + shape_to_string(shape) + " is too large");
  const size_t bytes = static_cast<size_t>(n) * es;
  if (!storage || offset > storage->size() || bytes > storage->size() - offset)
    throw Error("", "tensor view of " + std::to_string(bytes) + " bytes at offset " +
                        std::to_string(offset) + " exceeds storage of " +
                        std::to_string(storage ? storage->size() : 0) + " bytes");
  Tensor t;
  t.storage_ = std::move(storage);
  t.offset_ = offset;
  t.dtype_ = dtype;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  t.numel_ = n;
  return t;
}

bool Tensor::is_contiguous() const {
  if (numel_ <= 1) return true;
  int64_t s = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != s) return false;
    s *= shape_[i];
  }
  return true;
}

bool Tensor::is_aligned() const {
  return reinterpret_cast<uintptr_t>(raw()) % dtype_size(dtype_) == 0;
}

bool Tensor::is_mapped() const {
  return storage_ && storage_->mutable_data() == nullptr;
}

std::byte* Tensor::mutable_raw() {
  if (!storage_) return nullptr;
  std::byte* p = storage_->mutable_data();
  if (!p) throw Error("", "tensor data is read-only (memory-mapped file)");
  return p + offset_;
}

void Tensor::check_access(size_t elem_size, size_t align) const {
  if (elem_size != dtype_size(dtype_))
    throw Error("", "tensor of dtype " + std::string(dtype_name(dtype_)) + " accessed as " +
                        std::to_string(elem_size) + "-byte elements");
  if (reinterpret_cast<uintptr_t>(raw()) % align != 0)
    throw Error("", "tensor data is not aligned for its element type; use contiguous()");
}

Tensor Tensor::to(DType dtype) const {
  Tensor out = zeros(dtype, shape_);
  if (numel_ == 0) return out;
  const size_t es = dtype_size(dtype_);
  if (is_contiguous()) {
    convert_elements(raw(), dtype_, out.mutable_raw(), dtype, static_cast<size_t>(numel_));
    return out;
  }
  // Strided walk, one element at a time, row-major order of the shape.
  std::vector<int64_t> idx(shape_.size(), 0);
  std::byte* dst = out.mutable_raw();
  const size_t ds = dtype_size(dtype);
  for (int64_t i = 0; i < numel_; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * strides_[k];
    convert_elements(raw() + off * static_cast<int64_t>(es), dtype_, dst + i * ds, dtype, 1);
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < shape_[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

Tensor Tensor::clone() const {
  return to(dtype_);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous() && is_aligned()) return *this;
  return clone();
}

Tensor Tensor::reshape(Shape shape) const {
  if (!is_contiguous()) throw Error("", "reshape of a non-contiguous tensor");
  const int64_t n = shape_numel(shape);
  if (n != numel_)
    throw Error("", "cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  Tensor t = *this;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::transpose(size_t a, size_t b) const {
  if (a >= shape_.size() || b >= shape_.size())
    throw Error("", "transpose axes out of range for shape " + shape_to_string(shape_));
  Tensor t = *this;
  std::swap(t.shape_[a], t.shape_[b]);
  std::swap(t.strides_[a], t.strides_[b]);
  return t;
}

std::vector<float> Tensor::to_f32_vector() const {
  Tensor f = to(DType::f32);
  std::vector<float> v(static_cast<size_t>(numel_));
  if (numel_) std::memcpy(v.data(), f.raw(), v.size() * 4);
  return v;
}

}  // namespace tailor
