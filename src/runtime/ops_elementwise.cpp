// Elementwise ops with multidirectional broadcasting (onnx/docs/Operators.md):
// arithmetic, comparison, logic, Where, and the unary activations.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "op_util.h"
#include "runtime/kernels/gemm_partition.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/kernels.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {

Shape broadcast_shapes(const OpContext& ctx, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes " + shape_to_string(a) + " and " + shape_to_string(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> int_values(const OpContext& ctx, const Tensor& t, const char* what) {
  if (t.rank() > 1) ctx.fail(std::string(what) + " must be 1-D, got " + shape_to_string(t.shape()));
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  const Tensor c = t.contiguous();
  if (t.dtype() == DType::i64) {
    if (!v.empty()) std::memcpy(v.data(), c.raw(), v.size() * 8);
  } else if (t.dtype() == DType::i32) {
    const int32_t* p = c.data<int32_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else {
    ctx.fail(std::string(what) + " must be int64 or int32, got " +
             std::string(dtype_name(t.dtype())));
  }
  return v;
}

namespace {

enum class Bin { add, sub, mul, div, pow, max, min, mod };
enum class Cmp { eq, lt, gt, le, ge };
enum class Logic { and_, or_, xor_ };

template <class T>
inline T apply(Bin op, T a, T b) {
  switch (op) {
    case Bin::add:
      return a + b;
    case Bin::sub:
      return a - b;
    case Bin::mul:
      return a * b;
    case Bin::div:
      if constexpr (std::is_integral_v<T>)
        return b == 0 ? T(0) : static_cast<T>(a / b);
      else
        return a / b;
    case Bin::pow:
      return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    case Bin::max:
      return max_nan(a, b);
    case Bin::min:
      return min_nan(a, b);
    case Bin::mod:
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) return 0;
        T m = static_cast<T>(a % b);
        if (m != 0 && ((m < 0) != (b < 0))) m = static_cast<T>(m + b);
        return m;
      } else {
        return std::fmod(a, b);
      }
  }
  return a;
}

template <class T, Bin OP>
void bin_inner(T* o, const T* a, const T* b, int64_t sa, int64_t sb, int64_t n) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = apply(OP, a[i], b[i]);
  } else if (sa == 1) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i) o[i] = apply(OP, a[i], bv);
  } else if (sb == 1) {
    const T av = a[0];
    for (int64_t i = 0; i < n; ++i) o[i] = apply(OP, av, b[i]);
  } else {
    const T v = apply(OP, a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <Bin OP>
void binary_op(OpContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (OP == Bin::pow && a.dtype() == DType::f32 && b.dtype() != DType::f32) {
    // Pow's exponent may have another type (opset 12+): convert it.
    Tensor bf = b.to(DType::f32);
    const Tensor* saved = ctx.inputs[1];
    ctx.inputs[1] = &bf;
    binary_op<OP>(ctx);
    ctx.inputs[1] = saved;
    return;
  }
  if (a.dtype() != b.dtype())
    ctx.fail("input dtypes differ: " + std::string(dtype_name(a.dtype())) + " and " +
             std::string(dtype_name(b.dtype())));
  const Shape shape = broadcast_shapes(ctx, a.shape(), b.shape());
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  Tensor out = ctx.alloc(a.dtype(), shape);
  dispatch_numeric(ctx, a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pa = ac.data<T>();
    const T* pb = bc.data<T>();
    T* po = out.mutable_data<T>();
    if (OP == Bin::pow && std::is_same_v<T, float>) {
      // x^2 and x^0.5 as multiplications / sqrt (exact for these exponents).
      if (bc.numel() == 1 && (pb[0] == T(2) || pb[0] == T(0.5) || pb[0] == T(1) || pb[0] == T(3))) {
        const T e = pb[0];
        const int64_t n = out.numel();
        if (ac.numel() == n) {
          for (int64_t i = 0; i < n; ++i) {
            const T x = pa[i];
            po[i] = e == T(2)   ? x * x
                    : e == T(3) ? x * x * x
                    : e == T(1) ? x
                                : static_cast<T>(std::sqrt(x));
          }
          return;
        }
      }
    }
    broadcast_runs<2>(
        {&ac, &bc}, shape,
        [&](int64_t oo, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st,
            int64_t n) { bin_inner<T, OP>(po + oo, pa + off[0], pb + off[1], st[0], st[1], n); });
  });
  ctx.outputs[0] = std::move(out);
}

/// Max/Min/Sum/Mean with any number of inputs (folded pairwise).
template <Bin OP>
void variadic_op(OpContext& ctx, bool mean) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  Tensor acc = ctx.in(0).contiguous();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    OpContext sub{ctx.node, ctx.opset, {&acc, &ctx.in(i)}, {Tensor()}, ctx.arena, ctx.frame};
    binary_op<OP>(sub);
    acc = std::move(sub.outputs[0]);
  }
  if (mean) {
    if (acc.dtype() != DType::f32) ctx.fail("Mean needs f32");
    Tensor out = ctx.alloc(DType::f32, acc.shape());
    const float inv = 1.0f / static_cast<float>(ctx.num_inputs());
    const float* s = acc.data<float>();
    float* o = out.mutable_data<float>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = s[i] * inv;
    acc = out;
  } else if (ctx.num_inputs() == 1) {
    acc = acc.clone();
  }
  ctx.outputs[0] = std::move(acc);
}

template <Cmp OP>
void compare_op(OpContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (a.dtype() != b.dtype())
    ctx.fail("input dtypes differ: " + std::string(dtype_name(a.dtype())) + " and " +
             std::string(dtype_name(b.dtype())));
  const Shape shape = broadcast_shapes(ctx, a.shape(), b.shape());
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  Tensor out = ctx.alloc(DType::boolean, shape);
  uint8_t* po = reinterpret_cast<uint8_t*>(out.mutable_raw());
  auto cmp = [](auto x, auto y) -> uint8_t {
    switch (OP) {
      case Cmp::eq:
        return x == y;
      case Cmp::lt:
        return x < y;
      case Cmp::gt:
        return x > y;
      case Cmp::le:
        return x <= y;
      case Cmp::ge:
        return x >= y;
    }
    return 0;
  };
  DType dt = a.dtype() == DType::boolean ? DType::u8 : a.dtype();
  dispatch_numeric(ctx, dt, [&](auto zero) {
    using T = decltype(zero);
    const T* pa = reinterpret_cast<const T*>(ac.raw());
    const T* pb = reinterpret_cast<const T*>(bc.raw());
    broadcast_runs<2>({&ac, &bc}, shape,
                      [&](int64_t oo, const std::array<int64_t, 2>& off,
                          const std::array<int64_t, 2>& st, int64_t n) {
                        for (int64_t i = 0; i < n; ++i)
                          po[oo + i] = cmp(pa[off[0] + i * st[0]], pb[off[1] + i * st[1]]);
                      });
  });
  ctx.outputs[0] = std::move(out);
}

template <Logic OP>
void logic_op(OpContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (a.dtype() != DType::boolean || b.dtype() != DType::boolean) ctx.fail("inputs must be bool");
  const Shape shape = broadcast_shapes(ctx, a.shape(), b.shape());
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  Tensor out = ctx.alloc(DType::boolean, shape);
  uint8_t* po = reinterpret_cast<uint8_t*>(out.mutable_raw());
  const auto* pa = reinterpret_cast<const uint8_t*>(ac.raw());
  const auto* pb = reinterpret_cast<const uint8_t*>(bc.raw());
  broadcast_runs<2>(
      {&ac, &bc}, shape,
      [&](int64_t oo, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st,
          int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const bool x = pa[off[0] + i * st[0]] != 0, y = pb[off[1] + i * st[1]] != 0;
          po[oo + i] = OP == Logic::and_ ? (x && y) : OP == Logic::or_ ? (x || y) : (x != y);
        }
      });
  ctx.outputs[0] = std::move(out);
}

void where_op(OpContext& ctx) {
  const Tensor& c = ctx.in(0);
  const Tensor& x = ctx.in(1);
  const Tensor& y = ctx.in(2);
  if (c.dtype() != DType::boolean) ctx.fail("condition must be bool");
  if (x.dtype() != y.dtype()) ctx.fail("X and Y dtypes differ");
  const Shape shape = broadcast_shapes(ctx, broadcast_shapes(ctx, c.shape(), x.shape()), y.shape());
  const Tensor cc = c.contiguous(), xc = x.contiguous(), yc = y.contiguous();
  Tensor out = ctx.alloc(x.dtype(), shape);
  const size_t es = dtype_size(x.dtype());
  const auto* pc = reinterpret_cast<const uint8_t*>(cc.raw());
  const std::byte* px = xc.raw();
  const std::byte* py = yc.raw();
  std::byte* po = out.mutable_raw();
  broadcast_runs<3>({&cc, &xc, &yc}, shape,
                    [&](int64_t oo, const std::array<int64_t, 3>& off,
                        const std::array<int64_t, 3>& st, int64_t n) {
                      for (int64_t i = 0; i < n; ++i) {
                        const bool pick = pc[off[0] + i * st[0]] != 0;
                        const std::byte* src =
                            pick ? px + (off[1] + i * st[1]) * es : py + (off[2] + i * st[2]) * es;
                        std::memcpy(po + (oo + i) * es, src, es);
                      }
                    });
  ctx.outputs[0] = std::move(out);
}

/// A float unary op over f32 (f64 through the same function).
template <class F>
void unary_f32(OpContext& ctx, F f) {
  const Tensor& x = ctx.in(0);
  if (x.dtype() != DType::f32) ctx.fail("expects f32, got " + std::string(dtype_name(x.dtype())));
  const Tensor xc = x.contiguous();
  Tensor out = ctx.alloc(DType::f32, x.shape());
  const float* px = xc.data<float>();
  float* po = out.mutable_data<float>();
  const int64_t n = x.numel();
  if (kernels::detail::worth_threads_elements(n)) {
    linalg::parallel_for(n, true, [&](int64_t i) { po[i] = f(px[i]); });
  } else {
    for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
  }
  ctx.outputs[0] = std::move(out);
}

/// A float unary op computed by a vectorised kernel (AVX2, parallel_for over
/// chunks): kernels::apply_activation or kernels::exp/sigmoid/tanh.
template <class F>
void unary_f32_kernel(OpContext& ctx, F kernel) {
  const Tensor& x = ctx.in(0);
  if (x.dtype() != DType::f32) ctx.fail("expects f32, got " + std::string(dtype_name(x.dtype())));
  const Tensor xc = x.contiguous();
  Tensor out = ctx.alloc(DType::f32, x.shape());
  kernel(xc.data<float>(), out.mutable_data<float>(), x.numel());
  ctx.outputs[0] = std::move(out);
}

void activation_op(OpContext& ctx, const kernels::Activation& act) {
  unary_f32_kernel(
      ctx, [&](const float* x, float* y, int64_t n) { kernels::apply_activation(act, x, y, n); });
}

void reg_activation(const char* op, kernels::Activation act) {
  register_op("", op, [act](const KernelInit&) {
    return make_kernel([act](OpContext& ctx) { activation_op(ctx, act); });
  });
}

void reg_vector_unary(const char* op, void (*fn)(const float*, float*, int64_t)) {
  register_op("", op, [fn](const KernelInit&) {
    return make_kernel([fn](OpContext& ctx) { unary_f32_kernel(ctx, fn); });
  });
}

/// Unary ops defined on every numeric type (Neg, Abs).
template <class F>
void unary_numeric(OpContext& ctx, F f) {
  const Tensor& x = ctx.in(0);
  const Tensor xc = x.contiguous();
  Tensor out = ctx.alloc(x.dtype(), x.shape());
  dispatch_numeric(ctx, x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = xc.data<T>();
    T* po = out.mutable_data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = static_cast<T>(f(px[i]));
  });
  ctx.outputs[0] = std::move(out);
}

float scalar_input(const OpContext& ctx, size_t i, float fallback) {
  if (!ctx.has(i)) return fallback;
  const Tensor& t = ctx.in(i);
  if (t.numel() != 1) ctx.fail("input " + std::to_string(i) + " must be a scalar");
  return t.to_f32_vector()[0];
}

void reg_unary(const char* op, float (*f)(float)) {
  register_op("", op, [f](const KernelInit&) {
    return make_kernel([f](OpContext& ctx) { unary_f32(ctx, f); });
  });
}

}  // namespace

void register_elementwise_ops() {
  register_op("", "Add", [](const KernelInit&) { return make_kernel(binary_op<Bin::add>); });
  register_op("", "Sub", [](const KernelInit&) { return make_kernel(binary_op<Bin::sub>); });
  register_op("", "Mul", [](const KernelInit&) { return make_kernel(binary_op<Bin::mul>); });
  register_op("", "Div", [](const KernelInit&) { return make_kernel(binary_op<Bin::div>); });
  register_op("", "Pow", [](const KernelInit&) { return make_kernel(binary_op<Bin::pow>); });
  register_op("", "Mod", [](const KernelInit& init) {
    if (init.node.attr_int("fmod", 0) == 0) {
      // Integer Mod (sign of the divisor) is what binary_op implements for ints;
      // for floats ONNX requires fmod = 1.
    }
    return make_kernel(binary_op<Bin::mod>);
  });
  register_op("", "Max", [](const KernelInit&) {
    return make_kernel([](OpContext& c) { variadic_op<Bin::max>(c, false); });
  });
  register_op("", "Min", [](const KernelInit&) {
    return make_kernel([](OpContext& c) { variadic_op<Bin::min>(c, false); });
  });
  register_op("", "Sum", [](const KernelInit&) {
    return make_kernel([](OpContext& c) { variadic_op<Bin::add>(c, false); });
  });
  register_op("", "Mean", [](const KernelInit&) {
    return make_kernel([](OpContext& c) { variadic_op<Bin::add>(c, true); });
  });
  register_op("", "Equal", [](const KernelInit&) { return make_kernel(compare_op<Cmp::eq>); });
  register_op("", "Less", [](const KernelInit&) { return make_kernel(compare_op<Cmp::lt>); });
  register_op("", "Greater", [](const KernelInit&) { return make_kernel(compare_op<Cmp::gt>); });
  register_op("", "LessOrEqual",
              [](const KernelInit&) { return make_kernel(compare_op<Cmp::le>); });
  register_op("", "GreaterOrEqual",
              [](const KernelInit&) { return make_kernel(compare_op<Cmp::ge>); });
  register_op("", "And", [](const KernelInit&) { return make_kernel(logic_op<Logic::and_>); });
  register_op("", "Or", [](const KernelInit&) { return make_kernel(logic_op<Logic::or_>); });
  register_op("", "Xor", [](const KernelInit&) { return make_kernel(logic_op<Logic::xor_>); });
  register_op("", "Where", [](const KernelInit&) { return make_kernel(where_op); });
  register_op("", "Not", [](const KernelInit&) {
    return make_kernel([](OpContext& ctx) {
      const Tensor& x = ctx.in(0);
      if (x.dtype() != DType::boolean) ctx.fail("input must be bool");
      const Tensor xc = x.contiguous();
      Tensor out = ctx.alloc(DType::boolean, x.shape());
      const auto* p = reinterpret_cast<const uint8_t*>(xc.raw());
      auto* o = reinterpret_cast<uint8_t*>(out.mutable_raw());
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = p[i] ? 0 : 1;
      ctx.outputs[0] = std::move(out);
    });
  });
  register_op("", "Neg", [](const KernelInit&) {
    return make_kernel([](OpContext& c) { unary_numeric(c, [](auto v) { return -v; }); });
  });
  register_op("", "Abs", [](const KernelInit&) {
    return make_kernel(
        [](OpContext& c) { unary_numeric(c, [](auto v) { return v < 0 ? -v : v; }); });
  });
  reg_unary("Sqrt", [](float x) { return std::sqrt(x); });
  reg_vector_unary("Exp", kernels::exp);
  reg_unary("Log", [](float x) { return std::log(x); });
  reg_vector_unary("Tanh", kernels::tanh);
  reg_unary("Erf", [](float x) { return std::erf(x); });
  reg_unary("Floor", [](float x) { return std::floor(x); });
  reg_unary("Ceil", [](float x) { return std::ceil(x); });
  reg_unary("Round", [](float x) { return std::nearbyint(x); });
  reg_unary("Reciprocal", [](float x) { return 1.0f / x; });
  reg_activation("Relu", kernels::Activation::relu());
  reg_vector_unary("Sigmoid", kernels::sigmoid);
  reg_unary("Softplus", [](float x) { return x > 20 ? x : std::log1p(std::exp(x)); });
  // HardSwish: x·max(0, min(1, x/6 + 1/2)) (opset 14).
  reg_activation("HardSwish", kernels::Activation::hard_swish());
  register_op("", "HardSigmoid", [](const KernelInit& init) {
    const float alpha = init.node.attr_float("alpha", 0.2f);
    const float beta = init.node.attr_float("beta", 0.5f);
    return make_kernel([alpha, beta](OpContext& c) {
      activation_op(c, kernels::Activation::hard_sigmoid(alpha, beta));
    });
  });
  register_op("", "LeakyRelu", [](const KernelInit& init) {
    const float alpha = init.node.attr_float("alpha", 0.01f);
    return make_kernel(
        [alpha](OpContext& c) { activation_op(c, kernels::Activation::leaky_relu(alpha)); });
  });
  register_op("", "Elu", [](const KernelInit& init) {
    const float alpha = init.node.attr_float("alpha", 1.0f);
    return make_kernel([alpha](OpContext& c) {
      unary_f32(c, [=](float x) { return x >= 0 ? x : alpha * (std::exp(x) - 1.0f); });
    });
  });
  // Clip: bounds as attributes min/max before opset 11, as optional inputs from
  // 11; an absent bound is the lowest / largest finite float (the ONNX
  // default), so ±inf become ∓FLT_MAX as in onnxruntime.
  register_op("", "Clip", [](const KernelInit& init) {
    constexpr float kLowest = std::numeric_limits<float>::lowest();
    constexpr float kMax = std::numeric_limits<float>::max();
    const bool attrs = init.opset < 11;
    const float amin = init.node.attr_float("min", kLowest);
    const float amax = init.node.attr_float("max", kMax);
    return make_kernel([=](OpContext& c) {
      const float lo = attrs ? amin : scalar_input(c, 1, kLowest);
      const float hi = attrs ? amax : scalar_input(c, 2, kMax);
      activation_op(c, kernels::Activation::clip(lo, hi));
    });
  });
}

}  // namespace tailor::runtime
