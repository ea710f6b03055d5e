// The ai.tailor ops of decoder graphs (llm/decoder_fusions emits them; the
// contracts are in include/tailor/graph/fused_ops.h): Attention,
// softmax(Q·Kᵀ·scale + mask)·V in one kernel, GroupQueryAttention (a whole
// attention block of a decoder step) and RMSNormalization (optionally with
// the residual Add before it).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "op_util.h"
#include "runtime/kv_cache.h"
#include "tailor/runtime/kernels/registry.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {
namespace {

class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(const KernelInit& init) : scale_(init.node.attr_float("scale", 1.0f)) {}

  void run(OpContext& ctx) override {
    const Tensor q = ctx.in(0).contiguous(), k = ctx.in(1).contiguous(), v = ctx.in(2).contiguous();
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
      ctx.fail("Q, K and V must have rank 4 ([batch, heads, rows, head_dim])");
    const int64_t b = q.dim(0), g = q.dim(1), r = q.dim(2), d = q.dim(3), t = k.dim(2);
    if (k.dim(0) != b || k.dim(1) != g || k.dim(3) != d || v.shape() != k.shape())
      ctx.fail("K " + shape_to_string(k.shape()) + " and V " + shape_to_string(v.shape()) +
               " do not match Q " + shape_to_string(q.shape()));
    const float* mask = nullptr;
    Tensor m;
    if (ctx.has(3)) {
      m = ctx.in(3).contiguous();
      if (m.rank() != 2 || m.dim(0) != r || m.dim(1) != t)
        ctx.fail("mask " + shape_to_string(m.shape()) + " is not [rows, keys] = [" +
                 std::to_string(r) + ", " + std::to_string(t) + "]");
      mask = f32_ptr(ctx, m, "mask");
    }
    const float* qp = f32_ptr(ctx, q, "Q");
    const float* kp = f32_ptr(ctx, k, "K");
    const float* vp = f32_ptr(ctx, v, "V");
    Tensor y = ctx.alloc(DType::f32, q.shape());
    kernels::active_kernels().attention(qp, kp, vp, mask, y.mutable_data<float>(), b * g, r, t, d,
                                        t * d, d, scale_);
    ctx.outputs[0] = std::move(y);
  }

 private:
  float scale_;
};

/// The cache to write positions p … t − 1 of `past` ([1, kv, p, d], f32, any
/// strides) into: the past's own KV cache when `past` is its latest view
/// (positions == filled, so no view sees what is written) with room for t
/// positions and `reuse`; else a new one, room for at least twice t, holding
/// a copy of the past.
std::shared_ptr<KvCacheStorage> cache_for(const OpContext& ctx, const Tensor& past, int64_t t,
                                          bool reuse, const char* what) {
  const int64_t kv = past.dim(1), p = past.dim(2), d = past.dim(3);
  if (const KvCacheStorage* c = kv_cache_of(past); reuse && c && c->filled == p && t <= c->capacity)
    return std::static_pointer_cast<KvCacheStorage>(past.storage());
  auto fresh = std::make_shared<KvCacheStorage>(std::max<int64_t>(2 * t, 16), kv, d);
  if (p > 0) {
    const Tensor src = past.strides()[3] == 1 || d == 1 ? past : past.contiguous();
    const float* sp = f32_ptr(ctx, src, what);
    const int64_t hs = src.strides()[1], js = src.strides()[2];
    float* o = reinterpret_cast<float*>(fresh->mutable_data());
    for (int64_t j = 0; j < p; ++j)
      for (int64_t h = 0; h < kv; ++h) std::copy_n(sp + h * hs + j * js, d, o + (j * kv + h) * d);
  }
  fresh->filled = p;
  return fresh;
}

/// ai.tailor GroupQueryAttention (graph/fused_ops.h): RoPE on the new queries
/// and keys, the keys and values appended to the pasts, attention of each KV
/// head's query group over them, the heads back side by side. The arithmetic
/// is the unfused graph's up to rounding: the table's rope kernel ((t·R)[c]
/// = Σ_e t[e]·R[e, c] as FMAs in e order, exact for the builder's R with one
/// ±1 per column; t·cos + (t·R)·sin with the first product and the sum as
/// one FMA), the Attention kernel (a one-position step unmasked: it sees
/// every key). The presents
/// are views of a KV cache grown in place (runtime/kv_cache.h): a past that
/// is the latest view of its cache gets the new positions written after its
/// own, without a copy.
class GroupQueryAttentionKernel final : public Kernel {
 public:
  explicit GroupQueryAttentionKernel(const KernelInit& init)
      : heads_(init.node.attr_int("num_heads", 0)),
        kv_heads_(init.node.attr_int("kv_num_heads", 0)),
        scale_(init.node.attr_float("scale", 1.0f)),
        causal_(init.node.attr_int("causal", 0) != 0),
        rope_tables_(init.node.attr_int("rope_tables", 0) != 0) {
    if (kv_heads_ <= 0 || heads_ <= 0 || heads_ % kv_heads_ != 0)
      init.fail("num_heads must be a positive multiple of kv_num_heads");
    if (causal_ && init.node.inputs.size() > 8 && !init.node.inputs[8].empty())
      init.fail("causal and a mask input exclude each other");
  }

  void run(OpContext& ctx) override {
    Tensor held[9];  // copies of the inputs that are not contiguous
    auto dense = [&](size_t i) -> const Tensor& { return dense_input(ctx, i, held[i]); };
    const Tensor &q = dense(0), &k = dense(1), &v = dense(2);
    const Tensor &pk = ctx.in(3), &pv = ctx.in(4);  // read at their strides
    const Tensor &cos = dense(5), &sin = dense(6), &rot = dense(7);
    if (pk.rank() != 4 || pk.dim(0) != 1 || pk.dim(1) != kv_heads_ || pv.shape() != pk.shape())
      ctx.fail("past key " + shape_to_string(pk.shape()) + " and value " +
               shape_to_string(pv.shape()) + " are not both [1, " + std::to_string(kv_heads_) +
               ", past, head_dim]");
    const int64_t d = pk.dim(3), p = pk.dim(2), kvd = kv_heads_ * d;
    if (q.rank() != 2 || q.dim(1) != heads_ * d)
      ctx.fail("Q " + shape_to_string(q.shape()) + " is not [sequence, " +
               std::to_string(heads_ * d) + "]");
    const int64_t s = q.dim(0), t = p + s, rows = heads_ / kv_heads_ * s;
    if (k.rank() != 2 || k.dim(0) != s || k.dim(1) != kvd || v.shape() != k.shape())
      ctx.fail("K " + shape_to_string(k.shape()) + " and V " + shape_to_string(v.shape()) +
               " are not [" + std::to_string(s) + ", " + std::to_string(kvd) + "]");
    // With rope_tables, cos and sin hold every position: rows P … T − 1 are read.
    const int64_t table_rows = rope_tables_ && cos.rank() == 3 ? cos.dim(0) : s;
    if (cos.rank() != 3 || cos.dim(0) != table_rows || cos.dim(1) != 1 || cos.dim(2) != d ||
        sin.shape() != cos.shape() || rot.rank() != 2 || rot.dim(0) != d || rot.dim(1) != d ||
        (rope_tables_ && table_rows < t))
      ctx.fail("cos " + shape_to_string(cos.shape()) + ", sin " + shape_to_string(sin.shape()) +
               " and R " + shape_to_string(rot.shape()) + " are not [" +
               (rope_tables_ ? "≥ " + std::to_string(t) : std::to_string(s)) + ", 1, " +
               std::to_string(d) + "] and [" + std::to_string(d) + ", " + std::to_string(d) + "]");
    const int64_t first_row = rope_tables_ ? p : 0;
    // Scratch kept between this thread's runs (not the kernel's: CutRuns run
    // one kernel on several threads at once).
    thread_local std::vector<float> queries, context, causal_mask;
    const float* mask = nullptr;
    if (causal_ && s > 1) {
      // The builder's mask: −inf where key j > query position P + i, else 0,
      // the rows of the group's query heads stacked (row h·S + i). One new
      // position (a decode step) sees every key: no mask.
      causal_mask.assign(static_cast<size_t>(rows * t), 0.0f);
      for (int64_t r = 0; r < rows; ++r)
        std::fill(causal_mask.begin() + r * t + p + r % s + 1, causal_mask.begin() + (r + 1) * t,
                  -std::numeric_limits<float>::infinity());
      mask = causal_mask.data();
    } else if (ctx.has(8)) {
      const Tensor& m = dense(8);
      if (m.shape() != Shape{rows, t})
        ctx.fail("mask " + shape_to_string(m.shape()) + " is not [" + std::to_string(rows) + ", " +
                 std::to_string(t) + "]");
      mask = f32_ptr(ctx, m, "mask");
    }
    const float *qp = f32_ptr(ctx, q, "Q"), *kp = f32_ptr(ctx, k, "K"), *vp = f32_ptr(ctx, v, "V");
    const float *cp = f32_ptr(ctx, cos, "cos") + first_row * d,
                *sp = f32_ptr(ctx, sin, "sin") + first_row * d;
    const float* rp = f32_ptr(ctx, rot, "R");
    if (pk.dtype() != DType::f32 || pv.dtype() != DType::f32)
      ctx.fail("past key and value must be f32");
    const std::shared_ptr<KvCacheStorage> ck = cache_for(ctx, pk, t, true, "past key");
    // A value cache that is the key cache (one tensor fed as both pasts) is copied.
    std::shared_ptr<KvCacheStorage> cv = cache_for(ctx, pv, t, true, "past value");
    if (cv == ck) cv = cache_for(ctx, pv, t, false, "past value");
    float *ok = reinterpret_cast<float*>(ck->mutable_data()),
          *ov = reinterpret_cast<float*>(cv->mutable_data());
    const kernels::F32RopeFn rope = kernels::active_kernels().rope;
    for (int64_t i = 0; i < s; ++i) {
      // The KV heads of position i side by side, from K and into the cache.
      rope(kp + i * kvd, d, cp + i * d, sp + i * d, rp, d, kv_heads_, ok + (p + i) * kv_heads_ * d,
           d);
      for (int64_t h = 0; h < kv_heads_; ++h)
        std::copy_n(vp + i * kvd + h * d, d, ov + ((p + i) * kv_heads_ + h) * d);
    }
    ck->filled = cv->filled = t;
    // Queries as [KV, group·S, d]: head h, row i at (h·S + i)·d.
    queries.resize(static_cast<size_t>(heads_ * s * d));
    context.resize(queries.size());
    for (int64_t i = 0; i < s; ++i)
      rope(qp + i * heads_ * d, d, cp + i * d, sp + i * d, rp, d, heads_, queries.data() + i * d,
           s * d);
    kernels::active_kernels().attention(queries.data(), ok, ov, mask, context.data(), kv_heads_,
                                        rows, t, d, /*kv_head_stride=*/d, /*key_stride=*/kvd,
                                        scale_);
    Tensor y = ctx.alloc(DType::f32, {s, heads_ * d});
    float* yp = y.mutable_data<float>();
    for (int64_t h = 0; h < heads_; ++h)
      for (int64_t i = 0; i < s; ++i)
        std::copy_n(context.data() + (h * s + i) * d, d, yp + i * heads_ * d + h * d);
    ctx.outputs[0] = std::move(y);
    ctx.outputs[1] = kv_cache_view(ck, t);
    ctx.outputs[2] = kv_cache_view(cv, t);
  }

 private:
  int64_t heads_, kv_heads_;
  float scale_;
  bool causal_, rope_tables_;
};

/// Y = X / sqrt(mean(X², last axis) + epsilon) · scale, the mean in double;
/// with a third input `skip`, X is first replaced by the sum X + skip (f32,
/// as the Add it replaces), given back as a second output.
void rms_normalization(OpContext& ctx, float eps) {
  Tensor held[3], sum;  // copies of the inputs that are not contiguous; X + skip
  const Tensor* x = &dense_input(ctx, 0, held[0]);
  const Tensor& g = dense_input(ctx, 1, held[1]);
  if (x->rank() < 1) ctx.fail("X must have rank ≥ 1");
  const int64_t n = x->dim(x->rank() - 1), rows = n > 0 ? x->numel() / n : 0;
  if (g.numel() != n)
    ctx.fail("scale has " + std::to_string(g.numel()) + " elements, the last axis " +
             std::to_string(n));
  if (ctx.has(2)) {
    const Tensor& skip = dense_input(ctx, 2, held[2]);
    if (skip.shape() != x->shape())
      ctx.fail("skip " + shape_to_string(skip.shape()) + " is not X's shape " +
               shape_to_string(x->shape()));
    const float *a = f32_ptr(ctx, *x, "X"), *b = f32_ptr(ctx, skip, "skip");
    sum = ctx.alloc(DType::f32, x->shape());
    float* sp = sum.mutable_data<float>();
    for (int64_t i = 0; i < x->numel(); ++i) sp[i] = a[i] + b[i];
    x = &sum;
  }
  const float* xp = f32_ptr(ctx, *x, "X");
  const float* gp = f32_ptr(ctx, g, "scale");
  Tensor y = ctx.alloc(DType::f32, x->shape());
  float* yp = y.mutable_data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * n;
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (int64_t j = 0; j < n; ++j) yp[r * n + j] = xr[j] * inv * gp[j];
  }
  ctx.outputs[0] = std::move(y);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = ctx.has(2) ? std::move(sum) : *x;
}

}  // namespace

void register_decoder_ops() {
  register_op("ai.tailor", "RMSNormalization", [](const KernelInit& init) {
    if (init.node.attr_int("axis", -1) != -1) init.fail("only axis -1 is supported");
    const bool skip = init.node.inputs.size() > 2 && !init.node.inputs[2].empty();
    if (init.node.outputs.size() > 1 && !skip)
      init.fail("a second output (the sum X + skip) needs the skip input");
    const float eps = init.node.attr_float("epsilon", 1e-5f);
    return make_kernel([eps](OpContext& ctx) { rms_normalization(ctx, eps); });
  });
  register_op("ai.tailor", "GroupQueryAttention", [](const KernelInit& init) {
    return std::make_unique<GroupQueryAttentionKernel>(init);
  });
  register_op("ai.tailor", "Attention",
              [](const KernelInit& init) { return std::make_unique<AttentionKernel>(init); });
}

}  // namespace tailor::runtime
