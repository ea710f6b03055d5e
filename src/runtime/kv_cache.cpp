// KvCacheStorage and its views (kv_cache.h).
#include "runtime/kv_cache.h"

#include <cstdlib>
#include <new>

namespace tailor::runtime {

KvCacheStorage::KvCacheStorage(int64_t cap, int64_t heads, int64_t d)
    : capacity(cap), kv_heads(heads), head_dim(d) {
  size_ = static_cast<size_t>(cap * heads * d) * sizeof(float);
  data_ = static_cast<std::byte*>(std::aligned_alloc(64, (size_ + 63) / 64 * 64 + 64 * !size_));
  if (!data_) throw std::bad_alloc();
}

KvCacheStorage::~KvCacheStorage() {
  std::free(data_);
}

KvCacheStorage* kv_cache_of(const Tensor& t) {
  auto* c = dynamic_cast<KvCacheStorage*>(t.storage().get());
  if (!c || t.dtype() != DType::f32 || t.offset() != 0 || t.rank() != 4) return nullptr;
  const int64_t h = c->kv_heads, d = c->head_dim, p = t.dim(2);
  const Shape& st = t.strides();
  const bool ok = t.dim(0) == 1 && t.dim(1) == h && t.dim(3) == d && p <= c->filled && st[1] == d &&
                  st[2] == h * d && st[3] == 1;
  return ok ? c : nullptr;
}

Tensor kv_cache_view(const std::shared_ptr<KvCacheStorage>& cache, int64_t positions) {
  return Tensor::view(cache, 0, DType::f32, {1, positions, cache->kv_heads, cache->head_dim})
      .transpose(1, 2);
}

}  // namespace tailor::runtime
