// Tensor: a typed, shaped, strided view of bytes held by an owned buffer or a
// memory-mapped file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tailor/core/dtype.h"

namespace tailor {

/// Shape of a tensor, outermost dimension first (row-major order). Counts elements.
using Shape = std::vector<int64_t>;

/// Number of elements of `shape` (1 for a scalar, shape {}). Throws Error when a
/// dimension is negative or the product of the nonzero dimensions overflows
/// int64 (so strides of any accepted shape fit, empty tensors included).
int64_t shape_numel(const Shape& shape);
/// "[3, 4, 5]".
std::string shape_to_string(const Shape& shape);
/// Bytes of a contiguous tensor of `shape` and `dtype` (numel · element size).
/// Throws Error when the count passes 2^63 bytes (an element count that fits
/// int64 can still overflow once multiplied by the element size).
size_t shape_bytes(const Shape& shape, DType dtype);

/// A block of bytes a tensor views: either owned (heap, 64-byte aligned) or a
/// read-only memory mapping of a file. Shared by the tensors that view it, so a
/// mapped file stays mapped while any tensor refers to it.
class Storage {
 public:
  virtual ~Storage() = default;
  virtual const std::byte* data() const = 0;
  /// Writable pointer; nullptr for read-only (mapped) storage.
  virtual std::byte* mutable_data() = 0;
  /// Size in bytes.
  virtual size_t size() const = 0;

  /// Zero-initialised owned storage of `bytes` bytes (aligned to 64).
  static std::shared_ptr<Storage> allocate(size_t bytes);
  /// Maps `path` read-only in full. Throws Error naming the file when it cannot
  /// be opened or mapped, or is not a regular file (a FIFO, device or folder is
  /// refused without blocking). An empty file gives empty storage.
  static std::shared_ptr<Storage> map_file(const std::string& path);
};

/// A tensor: dtype, shape, strides (in elements, row-major when contiguous) and
/// a byte offset into shared Storage. Copying a Tensor copies the view, not the
/// data. Data of a tensor whose storage is a file mapping is read-only.
class Tensor {
 public:
  Tensor() = default;

  /// New contiguous owned tensor, zero-filled.
  static Tensor zeros(DType dtype, Shape shape);
  /// New owned tensor holding a copy of `values` (f32), with the given shape.
  /// Throws Error when the element counts differ.
  static Tensor from_f32(Shape shape, std::span<const float> values);
  /// View of `storage` at byte `offset`, contiguous. Throws Error when the view
  /// would reach past the end of the storage.
  static Tensor view(std::shared_ptr<Storage> storage, size_t offset, DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return numel_; }
  /// Bytes of the elements (numel · dtype size), not of the underlying storage.
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return storage_ != nullptr; }
  bool is_contiguous() const;
  /// True when the data pointer is aligned for the element type.
  bool is_aligned() const;
  bool is_mapped() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t offset() const { return offset_; }

  /// Pointer to the first element.
  const std::byte* raw() const { return storage_ ? storage_->data() + offset_ : nullptr; }
  /// Writable pointer; throws Error for read-only storage.
  std::byte* mutable_raw();

  /// Typed pointer. Requires sizeof(T) == dtype size and alignment (see
  /// is_aligned); throws Error otherwise.
  template <class T>
  const T* data() const {
    check_access(sizeof(T), alignof(T));
    return reinterpret_cast<const T*>(raw());
  }
  template <class T>
  T* mutable_data() {
    check_access(sizeof(T), alignof(T));
    return reinterpret_cast<T*>(mutable_raw());
  }

  /// Contiguous, aligned, owned copy converted to `dtype` (see convert_elements).
  Tensor to(DType dtype) const;
  /// Contiguous owned copy (same dtype).
  Tensor clone() const;
  /// This tensor if contiguous and aligned, otherwise a contiguous owned copy.
  Tensor contiguous() const;
  /// Same data, new shape with the same element count; requires contiguity.
  /// Throws Error otherwise.
  Tensor reshape(Shape shape) const;
  /// View with dimensions `a` and `b` exchanged (strides permuted, no copy).
  Tensor transpose(size_t a, size_t b) const;

  /// All elements as f32 in row-major order of the shape (copying, converting).
  std::vector<float> to_f32_vector() const;

 private:
  void check_access(size_t elem_size, size_t align) const;

  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
  DType dtype_ = DType::f32;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t numel_ = 0;
};

/// Row-major strides (in elements) of a contiguous tensor of `shape`.
std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace tailor
