// The KV cache that ai.tailor GroupQueryAttention grows in place: its present
// key and value outputs are views [1, kv_heads, positions, head_dim] of a
// position-major buffer [capacity, kv_heads, head_dim] (strides
// [positions·kv_heads·head_dim, head_dim, kv_heads·head_dim, 1]). Fed back as
// the next step's past, the new positions are written after the old ones in
// the same buffer instead of copying the past into a new present.
#pragma once

#include <cstdint>
#include <memory>

#include "tailor/core/tensor.h"

namespace tailor::runtime {

/// A position-major f32 buffer of `capacity` positions of kv_heads·head_dim
/// values. `filled` counts the positions written; every view of it covers
/// at most those, so writing position `filled` or later changes no view.
class KvCacheStorage final : public Storage {
 public:
  KvCacheStorage(int64_t capacity, int64_t kv_heads, int64_t head_dim);
  ~KvCacheStorage() override;
  const std::byte* data() const override { return data_; }
  std::byte* mutable_data() override { return data_; }
  size_t size() const override { return size_; }

  const int64_t capacity, kv_heads, head_dim;
  int64_t filled = 0;

 private:
  std::byte* data_;
  size_t size_;
};

/// The KvCacheStorage `t` views when `t` is one of its present views (f32,
/// the layout above, offset 0; any positions ≤ filled), else null.
KvCacheStorage* kv_cache_of(const Tensor& t);

/// The view [1, kv_heads, positions, head_dim] of the first `positions` positions of `cache`.
Tensor kv_cache_view(const std::shared_ptr<KvCacheStorage>& cache, int64_t positions);

}  // namespace tailor::runtime
