// Encoded weights from their stored factors (registry.h: encoded_from_factors).
#include <fmt/format.h>

#include "catalog.h"
#include "packing.h"
#include "quantized.h"
#include "tailor/core/error.h"
#include "tailor/schemes/kernels.h"
#include "tailor/schemes/registry.h"

namespace tailor::schemes {
namespace {

/// The factor `name` of `factors`, checked against `dtype` and `shape` (an
/// empty shape checks the dtype only).
Tensor take(const std::vector<Factor>& factors, const std::string& label, const std::string& name,
            DType dtype, const Shape& shape) {
  for (const Factor& f : factors)
    if (f.name == name) {
      if (f.tensor.dtype() != dtype || (!shape.empty() && f.tensor.shape() != shape))
        throw Error(label, fmt::format("factor '{}' is {} {}, expected {} {}", name,
                                       dtype_name(f.tensor.dtype()),
                                       shape_to_string(f.tensor.shape()), dtype_name(dtype),
                                       shape.empty() ? "(any shape)" : shape_to_string(shape)));
      return f.tensor.contiguous();
    }
  throw Error(label, "factor '" + name + "' is missing");
}

}  // namespace

std::unique_ptr<Encoded> encoded_from_factors(std::string_view label_view, int64_t out, int64_t in,
                                              std::vector<Factor> factors) {
  const std::string label(label_view);
  if (out < 1 || in < 1) throw Error(label, fmt::format("bad weight shape [{}, {}]", out, in));
  const Scheme scheme = parse_scheme(label);
  const SchemeKind kind = scheme.kind();
  const auto u8_stream = [&](const std::string& name, int64_t count, int bits) {
    const Tensor t = take(factors, label, name, DType::u8, {});
    if (t.nbytes() != detail::packed_bytes(count, bits))
      throw Error(label, fmt::format("factor '{}' holds {} bytes, expected {}", name, t.nbytes(),
                                     detail::packed_bytes(count, bits)));
    return t;
  };
  switch (kind) {
    case SchemeKind::int8:
    case SchemeKind::int8_a8:
    case SchemeKind::int4:
    case SchemeKind::int3:
    case SchemeKind::ternary:
    case SchemeKind::int4_grouped:
    case SchemeKind::q8_0:
    case SchemeKind::q4_0: {
      const bool ggml = kind == SchemeKind::q8_0 || kind == SchemeKind::q4_0;
      if (ggml && in % 32 != 0)
        throw Error(label, fmt::format("row length {} is not a multiple of 32", in));
      const bool a8 = kind == SchemeKind::int8_a8;
      const int bits = kind == SchemeKind::int8 || a8 || kind == SchemeKind::q8_0 ? 8
                       : kind == SchemeKind::int3                                 ? 3
                       : kind == SchemeKind::ternary                              ? 2
                                                                                  : 4;
      const int64_t group = ggml                               ? 32
                            : kind == SchemeKind::int4_grouped ? scheme.params().group
                                                               : in;
      const int64_t ng = (in + group - 1) / group;
      Tensor q = bits == 8 ? take(factors, label, "q", DType::i8, {out, in})
                           : u8_stream("q", out * in, bits);
      Tensor s = take(factors, label, "scale", DType::f16,
                      kind == SchemeKind::int4_grouped || ggml ? Shape{out, ng} : Shape{out});
      return std::make_unique<detail::QuantizedWeight>(label, out, in, bits, group, std::move(q),
                                                       std::move(s), a8);
    }
    case SchemeKind::sparse_2_4: {
      const int64_t kept = kernels::sparse24_kept_per_row(in);
      Tensor v = take(factors, label, "values", DType::f32, {out, kept});
      Tensor idx = u8_stream("indices", out * kept, 2);
      return detail::sparse24_from_factors(out, in, std::move(v), std::move(idx));
    }
    case SchemeKind::lowrank: {
      const int64_t r = scheme.params().rank;
      return detail::lowrank_from_factors(label, take(factors, label, "A", DType::f32, {out, r}),
                                          take(factors, label, "B", DType::f32, {r, in}));
    }
    case SchemeKind::monarch: {
      int64_t m = 1;
      while (m * m < in) ++m;
      if (m * m != in || out != in)
        throw Error(label, fmt::format("[{}, {}] is not square with a square side", out, in));
      return detail::monarch_from_factors(m, take(factors, label, "L", DType::f32, {m, m, m}),
                                          take(factors, label, "R", DType::f32, {m, m, m}));
    }
    case SchemeKind::tt: {
      std::vector<Factor> cores;
      int64_t bond = 1, po = 1, pi = 1;
      for (size_t k = 1; k <= factors.size(); ++k) {
        const std::string name = "G" + std::to_string(k);
        const Tensor g = take(factors, label, name, DType::f32, {});
        if (g.rank() != 4 || g.dim(0) != bond)
          throw Error(label, fmt::format("core '{}' {} does not continue bond {}", name,
                                         shape_to_string(g.shape()), bond));
        bond = g.dim(3);
        po *= g.dim(1);
        pi *= g.dim(2);
        cores.push_back({name, g});
      }
      if (cores.empty() || bond != 1 || po != out || pi != in)
        throw Error(label, fmt::format("cores give [{}, {}] ending in bond {}, expected [{}, {}]",
                                       po, pi, bond, out, in));
      return detail::tt_from_factors(std::move(cores));
    }
    case SchemeKind::tucker: {
      const Tensor core = take(factors, label, "core", DType::f32, {});
      if (core.rank() != 3) throw Error(label, "factor 'core' must be rank 3");
      const Tensor u0 = take(factors, label, "U0", DType::f32, {out, core.dim(0)});
      const Tensor u1 = take(factors, label, "U1", DType::f32, {});
      std::vector<Factor> kept{{"core", core}, {"U0", u0}, {"U1", u1}};
      int64_t d2 = core.dim(2);
      const bool mode2 = std::any_of(factors.begin(), factors.end(),
                                     [](const Factor& f) { return f.name == "U2"; });
      if (mode2) {
        const Tensor u2 = take(factors, label, "U2", DType::f32, {});
        if (u2.rank() != 2 || u2.dim(1) != core.dim(2))
          throw Error(label, "factor 'U2' does not match the core");
        d2 = u2.dim(0);
        kept.push_back({"U2", u2});
      }
      if (u1.rank() != 2 || u1.dim(1) != core.dim(1) || u1.dim(0) * d2 != in)
        throw Error(label, fmt::format("factor 'U1' {} does not give in = {}",
                                       shape_to_string(u1.shape()), in));
      return detail::tucker_from_factors(std::move(kept));
    }
    case SchemeKind::dense:
      break;
  }
  throw Error(label, "has no stored factors to build a weight from");
}

}  // namespace tailor::schemes
