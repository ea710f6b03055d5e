// Reductions and softmax (onnx/docs/Operators.md): ReduceMean/Sum/Max/Min/
// Prod/SumSquare/L2, Softmax, LogSoftmax, ArgMax/ArgMin.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_util.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {
namespace {

enum class Red { mean, sum, max, min, prod, sum_square, l2 };

void reduce(OpContext& ctx, Red op, std::vector<int64_t> axes, bool keepdims, bool noop_empty) {
  const Tensor& x = ctx.in(0);
  if (x.dtype() != DType::f32) ctx.fail("expects f32, got " + std::string(dtype_name(x.dtype())));
  const int64_t r = static_cast<int64_t>(x.rank());
  if (axes.empty() && noop_empty) {
    ctx.outputs[0] = x;
    return;
  }
  std::vector<bool> red(static_cast<size_t>(r), axes.empty());
  for (int64_t a : axes) red[static_cast<size_t>(normalize_axis(ctx, a, r))] = true;
  Shape out_shape, kept_shape, red_shape;
  std::vector<int64_t> kept_st, red_st;
  const Tensor xc = x.contiguous();
  for (int64_t d = 0; d < r; ++d) {
    const size_t k = static_cast<size_t>(d);
    if (red[k]) {
      if (keepdims) out_shape.push_back(1);
      red_shape.push_back(x.dim(k));
      red_st.push_back(xc.strides()[k]);
    } else {
      out_shape.push_back(x.dim(k));
      kept_shape.push_back(x.dim(k));
      kept_st.push_back(xc.strides()[k]);
    }
  }
  const int64_t n_out = shape_numel(kept_shape), n_red = shape_numel(red_shape);
  Tensor out = ctx.alloc(DType::f32, out_shape);
  const float* px = xc.data<float>();
  float* po = out.mutable_data<float>();
  // Reduced elements' offsets, once.
  std::vector<int64_t> roff(static_cast<size_t>(n_red));
  for (int64_t j = 0; j < n_red; ++j) {
    int64_t rem = j, off = 0;
    for (size_t d = red_shape.size(); d-- > 0;) {
      off += (rem % red_shape[d]) * red_st[d];
      rem /= red_shape[d];
    }
    roff[static_cast<size_t>(j)] = off;
  }
  const bool contiguous_tail = !red_st.empty() && red_st.back() == 1 && [&] {
    for (size_t j = 1; j < roff.size(); ++j)
      if (roff[j] != roff[j - 1] + 1) return false;
    return true;
  }();
  linalg::parallel_for(n_out, kernels::detail::worth_threads_elements(n_out * n_red),
                       [&](int64_t i) {
                         int64_t rem = i, base = 0;
                         for (size_t d = kept_shape.size(); d-- > 0;) {
                           base += (rem % kept_shape[d]) * kept_st[d];
                           rem /= kept_shape[d];
                         }
                         double acc = op == Red::max    ? -std::numeric_limits<double>::infinity()
                                      : op == Red::min  ? std::numeric_limits<double>::infinity()
                                      : op == Red::prod ? 1.0
                                                        : 0.0;
                         if (contiguous_tail && (op == Red::sum || op == Red::mean)) {
                           float s = 0;
                           const float* p = px + base;
                           for (int64_t j = 0; j < n_red; ++j) s += p[j];
                           acc = s;
                         } else {
                           for (int64_t j = 0; j < n_red; ++j) {
                             const double v = px[base + roff[static_cast<size_t>(j)]];
                             switch (op) {
                               case Red::mean:
                               case Red::sum:
                                 acc += v;
                                 break;
                               case Red::max:  // NaN stays NaN (std::max drops it)
                                 if (v > acc || std::isnan(v)) acc = v;
                                 break;
                               case Red::min:
                                 if (v < acc || std::isnan(v)) acc = v;
                                 break;
                               case Red::prod:
                                 acc *= v;
                                 break;
                               case Red::sum_square:
                               case Red::l2:
                                 acc += v * v;
                                 break;
                             }
                           }
                         }
                         if (op == Red::mean) acc /= static_cast<double>(n_red);
                         if (op == Red::l2) acc = std::sqrt(acc);
                         po[i] = static_cast<float>(acc);
                       });
  ctx.outputs[0] = std::move(out);
}

void reg_reduce(const char* name, Red op) {
  register_op("", name, [op, name](const KernelInit& init) {
    // ReduceSum takes axes as an input from opset 13; the others from 18.
    const bool from_input = std::string(name) == "ReduceSum" ? init.opset >= 13 : init.opset >= 18;
    const std::vector<int64_t> attr = init.node.attr_ints("axes", {});
    const bool keepdims = init.node.attr_int("keepdims", 1) != 0;
    const bool noop = init.node.attr_int("noop_with_empty_axes", 0) != 0;
    return make_kernel([=](OpContext& ctx) {
      std::vector<int64_t> axes = attr;
      if (from_input && ctx.has(1)) axes = int_values(ctx, ctx.in(1), "axes");
      reduce(ctx, op, axes, keepdims, noop && from_input);
    });
  });
}

/// Softmax/LogSoftmax over [outer, n, inner] rows.
void softmax(OpContext& ctx, int64_t axis_attr, bool coerce_2d, bool log) {
  const Tensor& x = ctx.in(0);
  if (x.dtype() != DType::f32) ctx.fail("expects f32");
  const int64_t r = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx, axis_attr, r);
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t s = x.dim(static_cast<size_t>(d));
    if (d < axis)
      outer *= s;
    else if (coerce_2d || d == axis)
      n *= s;
    else
      inner *= s;
  }
  const Tensor xc = x.contiguous();
  Tensor out = ctx.alloc(DType::f32, x.shape());
  const float* px = xc.data<float>();
  float* po = out.mutable_data<float>();
  if (!log) {  // the vectorised kernel (same max-subtracted definition)
    kernels::softmax(px, po, outer, n, inner);
    ctx.outputs[0] = std::move(out);
    return;
  }
  linalg::parallel_for(outer, kernels::detail::worth_threads_elements(x.numel(), 3),
                       [&](int64_t o) {
                         for (int64_t i = 0; i < inner; ++i) {
                           const float* p = px + o * n * inner + i;
                           float* q = po + o * n * inner + i;
                           float m = -INFINITY;
                           for (int64_t k = 0; k < n; ++k) m = std::max(m, p[k * inner]);
                           double sum = 0;
                           for (int64_t k = 0; k < n; ++k) {
                             const float e = std::exp(p[k * inner] - m);
                             q[k * inner] = e;
                             sum += e;
                           }
                           if (log) {
                             const float ls = static_cast<float>(std::log(sum));
                             for (int64_t k = 0; k < n; ++k) q[k * inner] = p[k * inner] - m - ls;
                           } else {
                             const float inv = static_cast<float>(1.0 / sum);
                             for (int64_t k = 0; k < n; ++k) q[k * inner] *= inv;
                           }
                         }
                       });
  ctx.outputs[0] = std::move(out);
}

void argext(OpContext& ctx, int64_t axis_attr, bool keepdims, bool last, bool is_max) {
  const Tensor& x = ctx.in(0);
  if (x.dtype() != DType::f32) ctx.fail("expects f32");
  const int64_t r = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(ctx, axis_attr, r);
  int64_t outer = 1, n = x.dim(static_cast<size_t>(axis)), inner = 1;
  Shape shape;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t s = x.dim(static_cast<size_t>(d));
    if (d < axis) outer *= s;
    if (d > axis) inner *= s;
    if (d != axis)
      shape.push_back(s);
    else if (keepdims)
      shape.push_back(1);
  }
  const Tensor xc = x.contiguous();
  Tensor out = ctx.alloc(DType::i64, shape);
  const float* px = xc.data<float>();
  int64_t* po = out.mutable_data<int64_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      float bv = px[o * n * inner + i];
      for (int64_t k = 1; k < n; ++k) {
        const float v = px[(o * n + k) * inner + i];
        const bool better = is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
        if (better) bv = v, best = k;
      }
      po[o * inner + i] = best;
    }
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void register_reduce_ops() {
  reg_reduce("ReduceMean", Red::mean);
  reg_reduce("ReduceSum", Red::sum);
  reg_reduce("ReduceMax", Red::max);
  reg_reduce("ReduceMin", Red::min);
  reg_reduce("ReduceProd", Red::prod);
  reg_reduce("ReduceSumSquare", Red::sum_square);
  reg_reduce("ReduceL2", Red::l2);
  for (const bool log : {false, true}) {
    register_op("", log ? "LogSoftmax" : "Softmax", [log](const KernelInit& init) {
      // Before opset 13 the input is coerced to 2-D at `axis` (default 1);
      // from 13 the op runs along the one axis (default -1).
      const bool coerce = init.opset < 13;
      const int64_t axis = init.node.attr_int("axis", coerce ? 1 : -1);
      return make_kernel([=](OpContext& ctx) { softmax(ctx, axis, coerce, log); });
    });
  }
  for (const bool is_max : {true, false}) {
    register_op("", is_max ? "ArgMax" : "ArgMin", [is_max](const KernelInit& init) {
      const int64_t axis = init.node.attr_int("axis", 0);
      const bool keepdims = init.node.attr_int("keepdims", 1) != 0;
      const bool last = init.node.attr_int("select_last_index", 0) != 0;
      return make_kernel([=](OpContext& ctx) { argext(ctx, axis, keepdims, last, is_max); });
    });
  }
}

}  // namespace tailor::runtime
