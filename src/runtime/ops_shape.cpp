// Data-movement and shape ops (onnx/docs/Operators.md): Identity, Dropout,
// Cast, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
// Split, Slice, Gather, Constant, ConstantOfShape, Expand, Pad, Tile, Range.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "op_util.h"
#include "tailor/linalg/parallel.h"
#include "tailor/runtime/op.h"

namespace tailor::runtime {
namespace {

/// Copies the elements of `shape` read at `src` with per-dim element strides
/// `st` (may be 0 or negative) into contiguous `dst`.
void strided_copy(const std::byte* src, std::byte* dst, const Shape& shape,
                  const std::vector<int64_t>& st, size_t es) {
  const int64_t total = shape_numel(shape);
  if (total == 0) return;
  // Coalesce dims whose strides chain.
  std::vector<int64_t> d, s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!d.empty() && s.back() == st[i] * shape[i]) {
      d.back() *= shape[i];
      s.back() = st[i];
    } else {
      d.push_back(shape[i]);
      s.push_back(st[i]);
    }
  }
  if (d.empty()) {
    std::memcpy(dst, src, es);
    return;
  }
  const size_t r = d.size();
  const int64_t len = d[r - 1], sl = s[r - 1];
  const int64_t runs = total / len;
  auto body = [&](int64_t run) {
    int64_t off = 0, rem = run;
    for (size_t k = r - 1; k-- > 0;) {
      off += (rem % d[k]) * s[k];
      rem /= d[k];
    }
    std::byte* o = dst + static_cast<size_t>(run * len) * es;
    const std::byte* p = src + off * static_cast<int64_t>(es);
    if (sl == 1) {
      std::memcpy(o, p, static_cast<size_t>(len) * es);
    } else if (es == 4) {
      auto* o4 = reinterpret_cast<uint32_t*>(o);
      const auto* p4 = reinterpret_cast<const uint32_t*>(p);
      for (int64_t i = 0; i < len; ++i) o4[i] = p4[i * sl];
    } else {
      for (int64_t i = 0; i < len; ++i)
        std::memcpy(o + static_cast<size_t>(i) * es, p + i * sl * static_cast<int64_t>(es), es);
    }
  };
  if (runs > 1 && kernels::detail::worth_threads_elements(total)) {
    linalg::parallel_for(runs, true, [&](int64_t run) { body(run); });
  } else {
    for (int64_t run = 0; run < runs; ++run) body(run);
  }
}

Tensor view_as(const Tensor& x, const Shape& shape) {
  return x.contiguous().reshape(shape);
}

Tensor int64_tensor(OpContext& ctx, const std::vector<int64_t>& v) {
  Tensor t = ctx.alloc(DType::i64, {static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(t.mutable_raw(), v.data(), v.size() * 8);
  return t;
}

/// Axes from attribute `axes` (opset < `input_from`) or from input 1.
std::vector<int64_t> axes_of(OpContext& ctx, const std::vector<int64_t>& attr, bool from_input,
                             size_t input) {
  if (!from_input) return attr;
  if (!ctx.has(input)) return {};
  return int_values(ctx, ctx.in(input), "axes");
}

void transpose(OpContext& ctx, const std::vector<int64_t>& perm_attr) {
  const Tensor& x = ctx.in(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  std::vector<int64_t> perm = perm_attr;
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = r - 1 - i;
  }
  if (static_cast<int64_t>(perm.size()) != r)
    ctx.fail("perm has the wrong length for the input rank");
  std::vector<bool> seen(static_cast<size_t>(r), false);
  Shape shape(static_cast<size_t>(r));
  std::vector<int64_t> st(static_cast<size_t>(r));
  const Tensor xc = x.contiguous();
  for (int64_t i = 0; i < r; ++i) {
    const int64_t p = perm[static_cast<size_t>(i)];
    if (p < 0 || p >= r || seen[static_cast<size_t>(p)]) ctx.fail("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    shape[static_cast<size_t>(i)] = x.dim(static_cast<size_t>(p));
    st[static_cast<size_t>(i)] = xc.strides()[static_cast<size_t>(p)];
  }
  Tensor out = ctx.alloc(x.dtype(), shape);
  strided_copy(xc.raw(), out.mutable_raw(), shape, st, dtype_size(x.dtype()));
  ctx.outputs[0] = std::move(out);
}

void concat(OpContext& ctx, int64_t axis_attr) {
  const Tensor& first = ctx.in(0);
  const int64_t r = static_cast<int64_t>(first.rank());
  const int64_t axis = normalize_axis(ctx, axis_attr, r);
  Shape shape = first.shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.in(i);
    if (t.dtype() != first.dtype()) ctx.fail("input dtypes differ");
    if (static_cast<int64_t>(t.rank()) != r) ctx.fail("input ranks differ");
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && t.dim(static_cast<size_t>(d)) != first.dim(static_cast<size_t>(d)))
        ctx.fail("input " + std::to_string(i) + " has shape " + shape_to_string(t.shape()) +
                 ", incompatible with " + shape_to_string(first.shape()) + " on axis " +
                 std::to_string(axis));
    shape[static_cast<size_t>(axis)] += t.dim(static_cast<size_t>(axis));
  }
  Tensor out = ctx.alloc(first.dtype(), shape);
  const size_t es = dtype_size(first.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < r; ++d) inner *= shape[static_cast<size_t>(d)];
  const int64_t out_row = shape[static_cast<size_t>(axis)] * inner;
  int64_t at = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor t = ctx.in(i).contiguous();
    const int64_t row = t.dim(static_cast<size_t>(axis)) * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out.mutable_raw() + static_cast<size_t>(o * out_row + at) * es,
                  t.raw() + static_cast<size_t>(o * row) * es, static_cast<size_t>(row) * es);
    at += row;
  }
  ctx.outputs[0] = std::move(out);
}

void slice_impl(OpContext& ctx, std::vector<int64_t> starts, std::vector<int64_t> ends,
                std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const Tensor& x = ctx.in(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  if (starts.size() != ends.size()) ctx.fail("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps differ in length");
  const Tensor xc = x.contiguous();
  Shape shape = x.shape();
  std::vector<int64_t> st = xc.strides();
  int64_t offset = 0;
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t a = static_cast<size_t>(normalize_axis(ctx, axes[i], r));
    if (seen[a]) ctx.fail("axis " + std::to_string(a) + " is sliced twice");
    seen[a] = true;
    const int64_t dim = x.dim(a), step = steps[i];
    if (step == 0) ctx.fail("step is 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      // ceil((e - s) / step) without forming e - s + step - 1, which
      // overflows for a step near INT64_MAX.
      count = e > s ? (e - s - 1) / step + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      // |step| in uint64: -INT64_MIN does not fit int64.
      const uint64_t back = 0 - static_cast<uint64_t>(step);
      count = s > e ? static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / back) + 1 : 0;
    }
    shape[a] = count;
    if (count > 0) offset += s * st[a];
    // With two or more elements |step| < dim, so the stride fits; with one
    // the stride is never used (and stride · INT64_MAX would overflow).
    st[a] = count > 1 ? st[a] * step : 0;
  }
  Tensor out = ctx.alloc(x.dtype(), shape);
  const size_t es = dtype_size(x.dtype());
  strided_copy(xc.raw() + offset * static_cast<int64_t>(es), out.mutable_raw(), shape, st, es);
  ctx.outputs[0] = std::move(out);
}

void gather(OpContext& ctx, int64_t axis_attr) {
  const Tensor& data = ctx.in(0);
  const Tensor& idx_t = ctx.in(1);
  const int64_t r = static_cast<int64_t>(data.rank());
  const int64_t axis = normalize_axis(ctx, axis_attr, r);
  std::vector<int64_t> idx;
  {
    const Tensor flat = idx_t.contiguous().reshape({idx_t.numel()});
    idx = int_values(ctx, flat, "indices");
  }
  const int64_t dim = data.dim(static_cast<size_t>(axis));
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim)
      ctx.fail("index " + std::to_string(i) + " is out of range for axis of size " +
               std::to_string(dim));
    if (i < 0) i += dim;
  }
  Shape shape;
  for (int64_t d = 0; d < axis; ++d) shape.push_back(data.dim(static_cast<size_t>(d)));
  for (int64_t d : idx_t.shape()) shape.push_back(d);
  for (int64_t d = axis + 1; d < r; ++d) shape.push_back(data.dim(static_cast<size_t>(d)));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dim(static_cast<size_t>(d));
  for (int64_t d = axis + 1; d < r; ++d) inner *= data.dim(static_cast<size_t>(d));
  const Tensor dc = data.contiguous();
  Tensor out = ctx.alloc(data.dtype(), shape);
  const size_t es = dtype_size(data.dtype());
  const size_t row = static_cast<size_t>(inner) * es;
  const int64_t n = static_cast<int64_t>(idx.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(out.mutable_raw() + static_cast<size_t>(o * n + k) * row,
                  dc.raw() + static_cast<size_t>(o * dim + idx[static_cast<size_t>(k)]) * row, row);
  ctx.outputs[0] = std::move(out);
}

Shape reshape_target(const OpContext& ctx, const Shape& in, const std::vector<int64_t>& spec,
                     bool allowzero) {
  Shape out(spec.size());
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        ctx.fail("shape has 0 at position " + std::to_string(i) + " beyond the input rank");
      d = in[i];
    }
    if (d == -1) {
      if (infer >= 0) ctx.fail("shape has more than one -1");
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0) ctx.fail("shape has invalid dimension " + std::to_string(d));
    out[i] = d;
    known *= d;
  }
  const int64_t numel = shape_numel(in);
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      ctx.fail("cannot reshape " + shape_to_string(in) + " with -1 in the target shape");
    out[static_cast<size_t>(infer)] = numel / known;
  }
  if (shape_numel(out) != numel)
    ctx.fail("cannot reshape " + shape_to_string(in) + " to " + shape_to_string(out));
  return out;
}

Tensor tensor_from_constant(const KernelInit& init) {
  const graph::Node& n = init.node;
  if (const auto* a = n.find("value")) {
    if (a->kind != graph::Attribute::Kind::t) init.fail("attribute 'value' is not a tensor");
    return a->t;
  }
  if (const auto* a = n.find("value_float"))
    return Tensor::from_f32({}, std::span<const float>(&a->f, 1));
  if (const auto* a = n.find("value_floats"))
    return Tensor::from_f32({static_cast<int64_t>(a->floats.size())}, a->floats);
  auto ints = [](const std::vector<int64_t>& v, Shape s) {
    Tensor t = Tensor::zeros(DType::i64, std::move(s));
    if (!v.empty()) std::memcpy(t.mutable_raw(), v.data(), v.size() * 8);
    return t;
  };
  if (const auto* a = n.find("value_int")) return ints({a->i}, {});
  if (const auto* a = n.find("value_ints"))
    return ints(a->ints, {static_cast<int64_t>(a->ints.size())});
  init.fail("has no supported value attribute (value, value_float(s), value_int(s))");
}

void pad(OpContext& ctx, const std::string& mode, const std::vector<int64_t>& pads_attr,
         float value_attr, bool from_inputs) {
  const Tensor& x = ctx.in(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  std::vector<int64_t> pads = from_inputs ? int_values(ctx, ctx.in(1), "pads") : pads_attr;
  std::vector<int64_t> axes;
  if (from_inputs && ctx.has(3)) {
    axes = int_values(ctx, ctx.in(3), "axes");
    for (auto& a : axes) a = normalize_axis(ctx, a, r);
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads has " + std::to_string(pads.size()) + " values for " +
             std::to_string(axes.size()) + " axes");
  std::vector<int64_t> before(static_cast<size_t>(r), 0), after(static_cast<size_t>(r), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    before[static_cast<size_t>(axes[i])] = pads[i];
    after[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  if (x.dtype() != DType::f32) ctx.fail("Pad supports f32 only");
  float cval = value_attr;
  if (from_inputs && ctx.has(2) && ctx.in(2).numel() > 0) cval = ctx.in(2).to_f32_vector()[0];
  Shape shape(static_cast<size_t>(r));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (__builtin_add_overflow(x.dim(d), before[d], &shape[d]) ||
        __builtin_add_overflow(shape[d], after[d], &shape[d]))
      ctx.fail("pads overflow the output dimension");
    if (shape[d] < 0) ctx.fail("negative output dimension");
    if (mode == "edge" && x.dim(d) == 0 && shape[d] > 0) ctx.fail("edge padding of an empty axis");
    if (mode == "reflect" && (before[d] >= x.dim(d) || after[d] >= x.dim(d)) &&
        (before[d] > 0 || after[d] > 0))
      ctx.fail("reflect padding needs pads smaller than the dimension");
  }
  const Tensor xc = x.contiguous();
  Tensor out = ctx.alloc(DType::f32, shape);
  const float* px = xc.data<float>();
  float* po = out.mutable_data<float>();
  const std::vector<int64_t> ost = contiguous_strides(shape);
  const std::vector<int64_t>& ist = xc.strides();
  const int64_t total = out.numel();
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, src = 0;
    bool inside = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t c = rem / ost[d] - before[d];
      rem %= ost[d];
      const int64_t n = x.dim(d);
      if (c < 0 || c >= n) {
        if (mode == "constant") {
          inside = false;
          break;
        } else if (mode == "reflect") {
          c = c < 0 ? -c : 2 * (n - 1) - c;
        } else if (mode == "edge") {
          c = c < 0 ? 0 : n - 1;
        } else {
          ctx.fail("mode '" + mode + "' is unsupported");
        }
      }
      src += c * ist[d];
    }
    po[i] = inside ? px[src] : cval;
  }
  ctx.outputs[0] = std::move(out);
}

std::unique_ptr<Kernel> identity_kernel(const KernelInit&) {
  return make_kernel([](OpContext& ctx) {
    ctx.outputs[0] = ctx.in(0);
    if (ctx.outputs.size() > 1) {  // Dropout's mask: all true in inference
      Tensor m = ctx.alloc(DType::boolean, ctx.in(0).shape());
      std::memset(m.mutable_raw(), 1, m.nbytes());
      ctx.outputs[1] = std::move(m);
    }
  });
}

std::unique_ptr<Kernel> cast_kernel(const KernelInit& init) {
  const int64_t to = init.node.attr_int("to", 0);
  // ONNX TensorProto.DataType numbers.
  static const std::pair<int64_t, DType> map[] = {
      {1, DType::f32},  {2, DType::u8},   {3, DType::i8},   {4, DType::u16},
      {5, DType::i16},  {6, DType::i32},  {7, DType::i64},  {9, DType::boolean},
      {10, DType::f16}, {11, DType::f64}, {16, DType::bf16}};
  std::optional<DType> dt;
  for (const auto& [k, v] : map)
    if (k == to) dt = v;
  if (!dt) init.fail("cast to ONNX data type " + std::to_string(to) + " is unsupported");
  const DType target = *dt;
  return make_kernel([target](OpContext& ctx) {
    const Tensor& x = ctx.in(0);
    if (x.dtype() == target) {
      ctx.outputs[0] = x;
      return;
    }
    const Tensor xc = x.contiguous();
    Tensor out = ctx.alloc(target, x.shape());
    convert_elements(xc.raw(), x.dtype(), out.mutable_raw(), target,
                     static_cast<size_t>(x.numel()));
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> shape_kernel(const KernelInit& init) {
  const int64_t start = init.node.attr_int("start", 0);
  const bool has_end = init.node.find("end") != nullptr;
  const int64_t end = init.node.attr_int("end", 0);
  return make_kernel([=](OpContext& ctx) {
    const Shape& s = ctx.in(0).shape();
    const int64_t r = static_cast<int64_t>(s.size());
    int64_t a = start < 0 ? start + r : start, b = has_end ? (end < 0 ? end + r : end) : r;
    a = std::clamp<int64_t>(a, 0, r);
    b = std::clamp<int64_t>(b, 0, r);
    ctx.outputs[0] =
        int64_tensor(ctx, std::vector<int64_t>(s.begin() + a, s.begin() + std::max(a, b)));
  });
}

std::unique_ptr<Kernel> size_kernel(const KernelInit&) {
  return make_kernel([](OpContext& ctx) {
    Tensor t = ctx.alloc(DType::i64, {});
    *t.mutable_data<int64_t>() = ctx.in(0).numel();
    ctx.outputs[0] = std::move(t);
  });
}

std::unique_ptr<Kernel> reshape_kernel(const KernelInit& init) {
  const bool allowzero = init.node.attr_int("allowzero", 0) != 0;
  if (init.opset < 5) init.fail("Reshape-1 (shape attribute) is unsupported");
  return make_kernel([allowzero](OpContext& ctx) {
    const Tensor& x = ctx.in(0);
    const Shape target =
        reshape_target(ctx, x.shape(), int_values(ctx, ctx.in(1), "shape"), allowzero);
    ctx.outputs[0] = view_as(x, target);
  });
}

std::unique_ptr<Kernel> flatten_kernel(const KernelInit& init) {
  const int64_t axis_attr = init.node.attr_int("axis", 1);
  return make_kernel([axis_attr](OpContext& ctx) {
    const Tensor& x = ctx.in(0);
    const int64_t r = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_attr < 0 ? axis_attr + r : axis_attr;
    if (axis < 0 || axis > r) ctx.fail("axis out of range");
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<size_t>(d));
    ctx.outputs[0] = view_as(x, {outer, outer == 0 ? 0 : x.numel() / outer});
  });
}

std::unique_ptr<Kernel> squeeze_kernel(const KernelInit& init) {
  const bool from_input = init.opset >= 13;
  const std::vector<int64_t> attr = init.node.attr_ints("axes", {});
  return make_kernel([=](OpContext& ctx) {
    const Tensor& x = ctx.in(0);
    const int64_t r = static_cast<int64_t>(x.rank());
    std::vector<int64_t> axes = axes_of(ctx, attr, from_input, 1);
    std::vector<bool> drop(static_cast<size_t>(r), false);
    if (axes.empty()) {
      for (int64_t d = 0; d < r; ++d)
        drop[static_cast<size_t>(d)] = x.dim(static_cast<size_t>(d)) == 1;
    }
    for (int64_t a : axes) {
      const int64_t n = normalize_axis(ctx, a, r);
      if (x.dim(static_cast<size_t>(n)) != 1)
        ctx.fail("cannot squeeze axis " + std::to_string(n) + " of size " +
                 std::to_string(x.dim(static_cast<size_t>(n))));
      drop[static_cast<size_t>(n)] = true;
    }
    Shape s;
    for (int64_t d = 0; d < r; ++d)
      if (!drop[static_cast<size_t>(d)]) s.push_back(x.dim(static_cast<size_t>(d)));
    ctx.outputs[0] = view_as(x, s);
  });
}

std::unique_ptr<Kernel> unsqueeze_kernel(const KernelInit& init) {
  const bool from_input = init.opset >= 13;
  const std::vector<int64_t> attr = init.node.attr_ints("axes", {});
  return make_kernel([=](OpContext& ctx) {
    const Tensor& x = ctx.in(0);
    std::vector<int64_t> axes = axes_of(ctx, attr, from_input, 1);
    const int64_t r = static_cast<int64_t>(x.rank() + axes.size());
    std::vector<bool> ins(static_cast<size_t>(r), false);
    for (int64_t a : axes) {
      const int64_t n = normalize_axis(ctx, a, r);
      if (ins[static_cast<size_t>(n)]) ctx.fail("axis repeated");
      ins[static_cast<size_t>(n)] = true;
    }
    Shape s;
    size_t k = 0;
    for (int64_t d = 0; d < r; ++d) s.push_back(ins[static_cast<size_t>(d)] ? 1 : x.dim(k++));
    ctx.outputs[0] = view_as(x, s);
  });
}

std::unique_ptr<Kernel> transpose_kernel(const KernelInit& init) {
  const std::vector<int64_t> perm = init.node.attr_ints("perm", {});
  return make_kernel([perm](OpContext& ctx) { transpose(ctx, perm); });
}

std::unique_ptr<Kernel> concat_kernel(const KernelInit& init) {
  if (!init.node.find("axis")) init.fail("attribute 'axis' is required");
  const int64_t axis = init.node.attr_int("axis", 0);
  return make_kernel([axis](OpContext& ctx) { concat(ctx, axis); });
}

std::unique_ptr<Kernel> split_kernel(const KernelInit& init) {
  const int64_t axis_attr = init.node.attr_int("axis", 0);
  const bool from_input = init.opset >= 13;
  const std::vector<int64_t> split_attr = init.node.attr_ints("split", {});
  return make_kernel([=](OpContext& ctx) {
    const Tensor& x = ctx.in(0);
    const int64_t r = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(ctx, axis_attr, r);
    std::vector<int64_t> split =
        from_input ? (ctx.has(1) ? int_values(ctx, ctx.in(1), "split") : std::vector<int64_t>{})
                   : split_attr;
    const int64_t n = static_cast<int64_t>(ctx.outputs.size());
    const int64_t dim = x.dim(static_cast<size_t>(axis));
    if (split.empty()) {
      const int64_t part = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i) split.push_back(std::min(part, dim - part * i));
    }
    if (static_cast<int64_t>(split.size()) != n)
      ctx.fail("split has " + std::to_string(split.size()) + " parts for " + std::to_string(n) +
               " outputs");
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      // A negative part was sliced as [at, at + part) with the end wrapped
      // from the back: silently wrong outputs.
      const int64_t part = split[static_cast<size_t>(i)];
      if (part < 0 || part > dim - at)
        ctx.fail("split part " + std::to_string(i) + " is " + std::to_string(part) +
                 ", the axis has " + std::to_string(dim - at) + " left of " + std::to_string(dim));
      OpContext sub{ctx.node, ctx.opset, {&x}, {Tensor()}, ctx.arena, ctx.frame};
      slice_impl(sub, {at}, {at + split[static_cast<size_t>(i)]}, {axis}, {1});
      at += split[static_cast<size_t>(i)];
      ctx.outputs[static_cast<size_t>(i)] = std::move(sub.outputs[0]);
    }
    if (at != dim)
      ctx.fail("split sizes sum to " + std::to_string(at) + ", axis has " + std::to_string(dim));
  });
}

std::unique_ptr<Kernel> slice_kernel(const KernelInit& init) {
  const bool from_input = init.opset >= 10;
  const auto starts = init.node.attr_ints("starts", {});
  const auto ends = init.node.attr_ints("ends", {});
  const auto axes = init.node.attr_ints("axes", {});
  return make_kernel([=](OpContext& ctx) {
    if (!from_input) return slice_impl(ctx, starts, ends, axes, {});
    auto opt = [&](size_t i, const char* what) {
      return ctx.has(i) ? int_values(ctx, ctx.in(i), what) : std::vector<int64_t>{};
    };
    slice_impl(ctx, opt(1, "starts"), opt(2, "ends"), opt(3, "axes"), opt(4, "steps"));
  });
}

std::unique_ptr<Kernel> gather_kernel(const KernelInit& init) {
  const int64_t axis = init.node.attr_int("axis", 0);
  return make_kernel([axis](OpContext& ctx) { gather(ctx, axis); });
}

std::unique_ptr<Kernel> constant_kernel(const KernelInit& init) {
  Tensor t = tensor_from_constant(init);
  return make_kernel([t](OpContext& ctx) { ctx.outputs[0] = t; });
}

std::unique_ptr<Kernel> constant_of_shape_kernel(const KernelInit& init) {
  Tensor value = Tensor::zeros(DType::f32, {1});
  if (const auto* a = init.node.find("value")) {
    if (a->kind != graph::Attribute::Kind::t || a->t.numel() != 1)
      init.fail("attribute 'value' must be a one-element tensor");
    value = a->t.contiguous();
  }
  return make_kernel([value](OpContext& ctx) {
    Shape s = int_values(ctx, ctx.in(0), "shape");
    for (int64_t d : s)
      if (d < 0) ctx.fail("negative dimension in shape");
    Tensor out = ctx.alloc(value.dtype(), s);
    const size_t es = dtype_size(value.dtype());
    for (int64_t i = 0; i < out.numel(); ++i)
      std::memcpy(out.mutable_raw() + static_cast<size_t>(i) * es, value.raw(), es);
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> expand_kernel(const KernelInit&) {
  return make_kernel([](OpContext& ctx) {
    const Tensor& x = ctx.in(0);
    const Shape shape = broadcast_shapes(ctx, x.shape(), int_values(ctx, ctx.in(1), "shape"));
    const Tensor xc = x.contiguous();
    std::vector<int64_t> st(shape.size(), 0);
    const size_t off = shape.size() - x.rank();
    for (size_t d = 0; d < x.rank(); ++d) st[d + off] = x.dim(d) == 1 ? 0 : xc.strides()[d];
    Tensor out = ctx.alloc(x.dtype(), shape);
    strided_copy(xc.raw(), out.mutable_raw(), shape, st, dtype_size(x.dtype()));
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> tile_kernel(const KernelInit&) {
  return make_kernel([](OpContext& ctx) {
    const Tensor& x = ctx.in(0);
    const std::vector<int64_t> rep = int_values(ctx, ctx.in(1), "repeats");
    if (rep.size() != x.rank()) ctx.fail("repeats has the wrong length for the input rank");
    // View x as [r0, d0, r1, d1, ...] with stride 0 on the repeat dims.
    const Tensor xc = x.contiguous();
    Shape big, shape;
    std::vector<int64_t> st;
    for (size_t d = 0; d < x.rank(); ++d) {
      if (rep[d] < 0) ctx.fail("negative repeat");
      big.push_back(rep[d]);
      big.push_back(x.dim(d));
      st.push_back(0);
      st.push_back(xc.strides()[d]);
    }
    shape_numel(big);  // throws before a product rep · dim can overflow
    for (size_t d = 0; d < x.rank(); ++d) shape.push_back(rep[d] * x.dim(d));
    Tensor out = ctx.alloc(x.dtype(), shape);
    strided_copy(xc.raw(), out.mutable_raw(), big, st, dtype_size(x.dtype()));
    ctx.outputs[0] = std::move(out);
  });
}

std::unique_ptr<Kernel> range_kernel(const KernelInit&) {
  return make_kernel([](OpContext& ctx) {
    const Tensor& s = ctx.in(0);
    dispatch_numeric(ctx, s.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T start = ctx.in(0).contiguous().template data<T>()[0];
      const T limit = ctx.in(1).contiguous().template data<T>()[0];
      const T delta = ctx.in(2).contiguous().template data<T>()[0];
      if (delta == 0) ctx.fail("delta is 0");
      const double n = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                                 static_cast<double>(delta));
      // n is NaN or ±inf for an infinite limit, start or delta; a double
      // outside int64 has no int64 (the cast would be undefined).
      if (std::isnan(n) || n >= 0x1p63)
        ctx.fail("element count " + std::to_string(n) + " is not a finite int64");
      const int64_t count = n <= 0 ? 0 : static_cast<int64_t>(n);
      Tensor out = ctx.alloc(s.dtype(), {count});
      T* o = out.template mutable_data<T>();
      for (int64_t i = 0; i < count; ++i) o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
      ctx.outputs[0] = std::move(out);
    });
  });
}

std::unique_ptr<Kernel> pad_kernel(const KernelInit& init) {
  const std::string mode = init.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    init.fail("mode '" + mode + "' is unsupported (constant, reflect, edge)");
  const bool from_inputs = init.opset >= 11;
  const auto pads = init.node.attr_ints("pads", {});
  const float value = init.node.attr_float("value", 0.0f);
  return make_kernel([=](OpContext& ctx) { pad(ctx, mode, pads, value, from_inputs); });
}

/// The shape ops' kernels, one factory each.
const std::pair<const char*, std::unique_ptr<Kernel> (*)(const KernelInit&)> kShapeKernels[] = {
    {"Identity", identity_kernel},   {"Dropout", identity_kernel},
    {"Cast", cast_kernel},           {"Shape", shape_kernel},
    {"Size", size_kernel},           {"Reshape", reshape_kernel},
    {"Flatten", flatten_kernel},     {"Squeeze", squeeze_kernel},
    {"Unsqueeze", unsqueeze_kernel}, {"Transpose", transpose_kernel},
    {"Concat", concat_kernel},       {"Split", split_kernel},
    {"Slice", slice_kernel},         {"Gather", gather_kernel},
    {"Constant", constant_kernel},   {"ConstantOfShape", constant_of_shape_kernel},
    {"Expand", expand_kernel},       {"Tile", tile_kernel},
    {"Range", range_kernel},         {"Pad", pad_kernel},
};

}  // namespace

void register_shape_ops() {
  for (const auto& [op, factory] : kShapeKernels) register_op("", op, factory);
}

}  // namespace tailor::runtime
