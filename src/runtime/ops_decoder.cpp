// The ai.tailor ops of decoder graphs (llm/decoder_fusions emits them; the
// contracts are in include/tailor/graph/fused_ops.h): Attention,
// softmax(Q·Kᵀ·scale + mask)·V in one kernel, and RMSNormalization.
#include <algorithm>
#include <cmath>
#include <vector>

#include "op_util.h"
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
    float* yp = y.mutable_data<float>();
    scores_.resize(static_cast<size_t>(t));
    for (int64_t h = 0; h < b * g; ++h) {
      const float* kh = kp + h * t * d;
      const float* vh = vp + h * t * d;
      for (int64_t i = 0; i < r; ++i) {
        const float* qi = qp + (h * r + i) * d;
        float best = -INFINITY;
        for (int64_t j = 0; j < t; ++j) {
          float dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += qi[c] * kh[j * d + c];
          const float s = dot * scale_ + (mask ? mask[i * t + j] : 0.0f);
          scores_[static_cast<size_t>(j)] = s;
          best = std::max(best, s);
        }
        float sum = 0;
        for (int64_t j = 0; j < t; ++j) {
          // A row masked everywhere (best = −inf) gives zeros, not NaN.
          const float e =
              best == -INFINITY ? 0.0f : std::exp(scores_[static_cast<size_t>(j)] - best);
          scores_[static_cast<size_t>(j)] = e;
          sum += e;
        }
        float* yi = yp + (h * r + i) * d;
        std::fill(yi, yi + d, 0.0f);
        const float inv = sum > 0 ? 1.0f / sum : 0.0f;
        for (int64_t j = 0; j < t; ++j) {
          const float a = scores_[static_cast<size_t>(j)] * inv;
          for (int64_t c = 0; c < d; ++c) yi[c] += a * vh[j * d + c];
        }
      }
    }
    ctx.outputs[0] = std::move(y);
  }

 private:
  float scale_;
  std::vector<float> scores_;
};

/// Y = X / sqrt(mean(X², last axis) + epsilon) · scale, the mean in double.
void rms_normalization(OpContext& ctx, float eps) {
  const Tensor x = ctx.in(0).contiguous(), g = ctx.in(1).contiguous();
  if (x.rank() < 1) ctx.fail("X must have rank ≥ 1");
  const int64_t n = x.dim(x.rank() - 1), rows = n > 0 ? x.numel() / n : 0;
  if (g.numel() != n)
    ctx.fail("scale has " + std::to_string(g.numel()) + " elements, the last axis " +
             std::to_string(n));
  const float* xp = f32_ptr(ctx, x, "X");
  const float* gp = f32_ptr(ctx, g, "scale");
  Tensor y = ctx.alloc(DType::f32, x.shape());
  float* yp = y.mutable_data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * n;
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (int64_t j = 0; j < n; ++j) yp[r * n + j] = xr[j] * inv * gp[j];
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_decoder_ops() {
  register_op("ai.tailor", "RMSNormalization", [](const KernelInit& init) {
    if (init.node.attr_int("axis", -1) != -1) init.fail("only axis -1 is supported");
    const float eps = init.node.attr_float("epsilon", 1e-5f);
    return make_kernel([eps](OpContext& ctx) { rms_normalization(ctx, eps); });
  });
  register_op("ai.tailor", "Attention",
              [](const KernelInit& init) { return std::make_unique<AttentionKernel>(init); });
}

}  // namespace tailor::runtime
