#include "tailor/profile/profiler.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "tailor/core/checked.h"
#include "tailor/core/error.h"
#include "tailor/core/finite.h"
#include "tailor/core/rng.h"
#include "tailor/core/warning.h"
#include "tailor/graph/weight_forms.h"
#include "tailor/io/safetensors.h"
#include "tailor/linalg/randqb.h"
#include "tailor/linalg/svd.h"
#include "tailor/linalg/threads.h"
#include "tailor/schemes/ggml_blocks.h"
#include "tailor/schemes/registry.h"
#include "tailor/schemes/tucker.h"

namespace tailor {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Whether the scheme list asks for the low-rank family (or is empty: all).
bool wants_lowrank(const ProfileOptions& o) {
  return o.schemes.empty() ||
         std::find(o.schemes.begin(), o.schemes.end(), "lowrank") != o.schemes.end() ||
         std::find(o.schemes.begin(), o.schemes.end(), "lowrank-q") != o.schemes.end();
}

/// Whether the scheme list asks for ggml's block formats (or is empty: all).
bool wants_ggml_blocks(const ProfileOptions& o) {
  return o.schemes.empty() || std::any_of(o.schemes.begin(), o.schemes.end(), [](const auto& s) {
           return schemes::is_ggml_block_label(s);
         });
}

/// The kinds a family name of ProfileOptions::schemes stands for ("mse",
/// "gptq", "lowrank-q", "int+r"); empty for any other item.
std::vector<schemes::SchemeKind> family_kinds(const std::string& item) {
  using K = schemes::SchemeKind;
  if (item == "mse") return {K::quant_mse};
  if (item == "gptq") return {K::quant_gptq};
  if (item == "lowrank-q") return {K::lowrank_quant};
  if (item == "int+r") return {K::quant_lowrank};
  return {};
}

/// The schemes of `o` for a weight of `shape`, applicable ones only, labels unique.
std::vector<schemes::Scheme> select_schemes(const Shape& shape, const ProfileOptions& o,
                                            std::span<const int64_t> ranks) {
  const schemes::SchemeParams& d = o.scheme_defaults;
  std::vector<schemes::Scheme> all;
  if (o.schemes.empty()) {
    all = schemes::applicable_schemes(shape, ranks, d);
  } else {
    for (const std::string& item : o.schemes) {
      if (item == "lowrank") {
        for (int64_t r : ranks) {
          schemes::SchemeParams p = d;
          p.rank = r;
          all.emplace_back(schemes::scheme_traits(schemes::SchemeKind::lowrank), p);
        }
      } else if (item == "int4-g") {
        for (int64_t g : {32, 64, 128}) {
          schemes::SchemeParams p = d;
          p.group = g;
          all.emplace_back(schemes::scheme_traits(schemes::SchemeKind::int4_grouped), p);
        }
      } else if (const auto kinds = family_kinds(item); !kinds.empty()) {
        for (schemes::Scheme& s : schemes::applicable_schemes(shape, ranks, d))
          if (std::find(kinds.begin(), kinds.end(), s.kind()) != kinds.end())
            all.push_back(std::move(s));
      } else {
        all.push_back(schemes::parse_scheme(item, d));
      }
    }
  }
  std::vector<schemes::Scheme> out;
  std::set<std::string> seen;
  for (schemes::Scheme& s : all)
    if (s.applicable(shape) && seen.insert(s.label()).second) out.push_back(std::move(s));
  return out;
}

/// Elements of every stored factor.
int64_t stored_params(const schemes::Encoded& e) {
  int64_t n = 0;
  for (const schemes::Factor& f : e.factors()) n += f.tensor.numel();
  return n;
}

/// Drops the pages of a file-mapped weight from this process's resident set
/// once the layer has its own f32 copy (madvise MADV_DONTNEED on the
/// page-aligned range around its bytes), so that a model larger than RAM is
/// held only a few layers at a time. The mapping is read-only and private: a later read of
/// any byte in the range (a neighbour sharing an edge page, say) faults it
/// back in from the page cache unchanged. Owned (heap) tensors are left alone.
void release_mapped_pages(const Tensor& t) {
  if (!t.is_mapped() || t.nbytes() == 0) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(t.raw());
  const uintptr_t first = begin / page * page;
  const uintptr_t last = (begin + t.nbytes() + page - 1) / page * page;
  ::madvise(reinterpret_cast<void*>(first), last - first,
            MADV_DONTNEED);  // advice: failure is harmless
}

/// Σ d_j·(a_j − b_j)² over one row of `n` (d_j = 1 when `d` is null), in
/// double: four lanes of four partial sums each (AVX2), added in a fixed order,
/// so a row's sum is the same on every run.
double row_sum_sq(const float* a, const float* b, const float* d, size_t n) {
  size_t j = 0;
  double total = 0;
#if defined(__AVX2__) && defined(__FMA__)
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                    _mm256_setzero_pd()};
  for (; j + 16 <= n; j += 16)
    for (int k = 0; k < 4; ++k) {
      const __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(a + j + 4 * k));
      const __m256d y = b ? _mm256_cvtps_pd(_mm_loadu_ps(b + j + 4 * k)) : _mm256_setzero_pd();
      const __m256d diff = _mm256_sub_pd(x, y);
      const __m256d w =
          d ? _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(d + j + 4 * k)), diff) : diff;
      acc[k] = _mm256_fmadd_pd(w, diff, acc[k]);
    }
  const __m256d sum = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, sum);
  total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
  for (; j < n; ++j) {
    const double diff = double(a[j]) - (b ? double(b[j]) : 0.0);
    total += (d ? double(d[j]) : 1.0) * diff * diff;
  }
  return total;
}

/// Σ_ij d_j·(A_ij − B_ij)² of [rows, in] matrices (B null: zero; d null: 1).
double sum_sq(const float* a, const float* b, const float* d, size_t rows, size_t in) {
  double total = 0;
  for (size_t i = 0; i < rows; ++i)
    total += row_sum_sq(a + i * in, b ? b + i * in : nullptr, d, in);
  return total;
}

/// ‖W‖_F² and, with importance d, Σ_ij d_j·W_ij²: the denominators of a
/// layer's errors, the same for every candidate.
struct WeightNorms {
  double plain = 0, activation = 0;
};

WeightNorms weight_norms(const Tensor& m, std::span<const float> importance) {
  const size_t rows = static_cast<size_t>(m.dim(0)), in = static_cast<size_t>(m.dim(1));
  WeightNorms n;
  n.plain = sum_sq(m.data<float>(), nullptr, nullptr, rows, in);
  if (!importance.empty())
    n.activation = sum_sq(m.data<float>(), nullptr, importance.data(), rows, in);
  return n;
}

/// rel_error (schemes::rel_error's definition, ‖W − Ŵ‖_F / ‖W‖_F, 0 when
/// ‖W‖ = 0) and, with `importance`, the activation-aware error of
/// activation_rel_error, from one decode of `e` read against `m` [out, in]
/// f32 in place (norms: weight_norms(m, importance)): no f32 copies of W or Ŵ
/// beyond the decoded Ŵ itself.
void measure_errors(const Tensor& m, const WeightNorms& norms, const schemes::Encoded& e,
                    std::span<const float> importance, Candidate& c) {
  const Tensor w_hat = e.decode().contiguous();
  check(w_hat.dtype() == DType::f32 && w_hat.numel() == m.numel(), e.label(),
        fmt::format("decoded {} {} does not match the weight {}", dtype_name(w_hat.dtype()),
                    shape_to_string(w_hat.shape()), shape_to_string(m.shape())));
  const float* a = m.data<float>();
  const float* b = w_hat.data<float>();
  const size_t rows = static_cast<size_t>(m.dim(0)), in = static_cast<size_t>(m.dim(1));
  const double num = sum_sq(a, b, nullptr, rows, in);
  c.rel_error = norms.plain == 0 ? 0.0 : std::sqrt(num / norms.plain);
  if (!importance.empty()) {
    const double num_d = sum_sq(a, b, importance.data(), rows, in);
    c.rel_error_activation = norms.activation > 0 ? std::sqrt(num_d / norms.activation) : 0.0;
  }
  // Weights near the f32 range can decode to ±Inf; such a candidate has no error.
  check(std::isfinite(c.rel_error) && std::isfinite(c.rel_error_activation.value_or(0)), e.label(),
        "the reconstruction error is not finite (weights near the f32 range)");
}

/// The one candidate of a layer kept dense: W as f32, exact.
Candidate dense_candidate(int64_t out, int64_t in) {
  Candidate c;
  c.label = "dense";
  c.bytes = 4 * out * in;
  c.macs = out * in;
  c.params = out * in;
  return c;
}

/// Redraws the progress line: "profile [#####     ] 12/47 layers  3.1 s  ETA 9.0 s".
void draw_progress(size_t done, size_t total, double elapsed) {
  constexpr int kWidth = 30;
  const int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  const double eta = done ? elapsed * static_cast<double>(total - done) / done : 0;
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, ' ');
  std::fprintf(stderr, "\rprofile [%s] %zu/%zu layers  %.1f s  ETA %.1f s ", bar.c_str(), done,
               total, elapsed, eta);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

namespace {

/// Shares of ‖W‖_F² the energy ranks must hold.
constexpr double kEnergyLevels[] = {0.9, 0.99, 0.999};

/// The low-rank ranks of W and one truncated SVD of W holding at least
/// max(ranks) triplets, from which every low-rank candidate is cut.
struct LowRankPlan {
  std::vector<int64_t> ranks;
  linalg::Svd svd;
  /// Whether svd.u and svd.vt are linalg::svd_exact's U and Vᵀ of W
  /// (truncated), which tucker's mode-0 factor (and mode-1 of a 1×1 conv
  /// kernel) reuses (schemes::encode_tucker_reusing).
  bool exact_u = false;
  /// Wall time of the SVDs (seconds).
  double svd_seconds = 0;
};

/// Ranks of `levels` found in σ² (non-increasing) against `total`: the smallest
/// r with Σ_{i≤r} σ_i² ≥ level·total, or 0 when none up to `limit`.
std::vector<int64_t> energy_ranks(const std::vector<double>& s2, double total, int64_t limit) {
  std::vector<int64_t> found(std::size(kEnergyLevels), 0);
  double captured = 0;
  for (int64_t r = 1; r <= std::min<int64_t>(limit, s2.size()); ++r) {
    captured += s2[r - 1];
    for (size_t l = 0; l < found.size(); ++l)
      if (!found[l] && captured >= kEnergyLevels[l] * total) found[l] = r;
  }
  return found;
}

/// Layers whose smaller side is at most this take the exact SVD at once: there
/// the blocked QB's first sketch (≥ 64 + oversampling columns) already costs a
/// large share of gesdd, and a flat spectrum sends it to gesdd anyway.
constexpr int64_t kPlanExactMaxDim = 512;

/// `total` = ‖W‖_F² (weight_norms).
LowRankPlan plan_lowrank(const Tensor& w, const linalg::SvdOptions& svd, double total) {
  if (w.shape().size() != 2 || w.dtype() != DType::f32)
    throw Error("lowrank ranks", fmt::format("expected an f32 matrix, found {} {}",
                                             dtype_name(w.dtype()), shape_to_string(w.shape())));
  const auto t0 = Clock::now();
  const int64_t out = w.dim(0), in = w.dim(1);
  // Largest R with R·(out + in) < out·in (fewer bytes than dense), R ≤ min(out, in).
  const int64_t kmax = std::min(std::min(out, in), (out * in - 1) / (out + in));
  LowRankPlan plan;
  if (kmax < 1) return plan;
  for (int64_t p : {2, 4, 8}) {
    const int64_t r = std::max<int64_t>(1, out * in / (p * (out + in)));
    if (r <= kmax) plan.ranks.push_back(r);
  }
  const int64_t need = plan.ranks.empty() ? 0 : plan.ranks.front();  // the 1/2 rank, the largest
  const Tensor c = w.contiguous();
  const float* data = c.data<float>();
  // A large layer keeps only the singular vectors of its smaller side (the
  // candidates form the other from W) and is never copied.
  const bool large = out * in >= svd.gram_min_elements;
  const linalg::SvdSides side = out <= in ? linalg::SvdSides::left : linalg::SvdSides::right;
  std::vector<int64_t> found(std::size(kEnergyLevels), 0);
  // Rank-`rank` SVD of W: gesdd (or randomized) on a copy for a small layer,
  // the Gram matrix of the smaller side for a large one (linalg::svd_gram).
  const auto truncated = [&](int64_t rank, std::vector<double>* s2) {
    if (large) return linalg::svd_gram(data, out, in, rank, side, s2);
    linalg::Svd r =
        linalg::svd_truncated(Eigen::Map<const linalg::Matrix>(data, out, in), rank, svd);
    if (s2) {
      s2->clear();
      for (int64_t i = 0; i < r.s.size(); ++i) s2->push_back(double(r.s(i)) * r.s(i));
    }
    return r;
  };
  // One exact SVD gives every σ and every factor: used for small layers, and
  // when the blocked search below would grow its basis past a third of the
  // smaller side (a flat spectrum), where a sketch costs more than gesdd.
  const int64_t exact_beyond = std::min(out, in) / 3;
  const auto exact = [&] {
    std::vector<double> s2;
    plan.svd = truncated(kmax, &s2);
    plan.exact_u = !large && linalg::svd_prefers_exact(out, in, kmax, svd);
    found = energy_ranks(s2, total, kmax);
  };
  if (total > 0 && (std::min(out, in) <= std::max<int64_t>(svd.exact_max_dim, kPlanExactMaxDim) ||
                    std::max<int64_t>(need + svd.oversampling, 64) > exact_beyond)) {
    exact();
  } else if (total > 0) {
    // Large layer: grow a blocked randomized QB (linalg/randqb.h) until every
    // energy level is found or shown out of reach, never past kmax.
    linalg::BlockedQb qb(data, out, in, svd);
    bool too_flat = false;
    qb.grow(std::min(kmax, std::max<int64_t>(need + svd.oversampling, 64)));
    while (true) {
      const int64_t k = qb.rank();
      const std::vector<double> s2 = qb.squared_singular_values();
      // A level counts once reached `oversampling` components before the
      // basis edge, where σ̂ is still accurate (or at the last rank there is).
      const int64_t settled = k >= kmax ? kmax : std::max<int64_t>(0, k - svd.oversampling);
      found = energy_ranks(s2, total, settled);
      if (k >= kmax) break;
      const auto first_missing = std::find(found.begin(), found.end(), 0);
      if (first_missing == found.end() && k >= need) break;
      // Out of reach (an estimate): even kmax − r more components as large as
      // σ̂_r, r = settled (every σ_i, i > r, is ≤ σ_r), would not lift the
      // settled energy to the lowest missing level.
      if (first_missing != found.end() && settled >= 1) {
        const double level = kEnergyLevels[first_missing - found.begin()] * total;
        double head = 0;
        for (int64_t i = 0; i < settled; ++i) head += s2[i];
        const double best = head + std::min(double(kmax - settled) * s2[settled - 1], total - head);
        if (best < level) break;
      }
      const int64_t step = std::min(kmax - k, std::max<int64_t>(64, k / 4));
      if (k + step > exact_beyond) {
        too_flat = true;
        break;
      }
      qb.grow(step);
    }
    if (too_flat) {
      exact();
    } else {
      const int64_t top =
          std::max<int64_t>({need, *std::max_element(found.begin(), found.end()), int64_t(1)});
      plan.svd = qb.svd(std::min(top, qb.rank()), large ? side : linalg::SvdSides::both);
    }
  }
  for (int64_t r : found)
    if (r) plan.ranks.push_back(r);
  std::sort(plan.ranks.begin(), plan.ranks.end());
  plan.ranks.erase(std::unique(plan.ranks.begin(), plan.ranks.end()), plan.ranks.end());
  if (!plan.ranks.empty() && plan.svd.s.size() < plan.ranks.back()) {
    plan.svd = truncated(plan.ranks.back(), nullptr);
    plan.exact_u = false;
  }
  plan.svd_seconds = seconds_since(t0);
  return plan;
}

/// `layer` with a candidate per selected scheme, measured on m = W [out, in]
/// (w: W as encoded, conv kernels in their own shape).
LayerProfile measure(LayerProfile layer, const Tensor& m, const Tensor& w, const ProfileOptions& o,
                     std::span<const float> importance) {
  const WeightNorms norms = weight_norms(m, importance);
  LowRankPlan plan;
  if (wants_lowrank(o)) plan = plan_lowrank(m, o.scheme_defaults.svd, norms.plain);
  if (wants_ggml_blocks(o))
    if (std::string note = schemes::ggml_block_note(w.shape()); !note.empty())
      layer.notes.push_back(std::move(note));
  for (const schemes::Scheme& s : select_schemes(w.shape(), o, plan.ranks)) {
    const auto t0 = Clock::now();
    // Low-rank candidates are cut from the one shared SVD (its time counted in each).
    const bool shared =
        s.kind() == schemes::SchemeKind::lowrank && s.params().rank <= plan.svd.s.size();
    // Tucker's mode-0 (and a 1×1 kernel's mode-1) factor is the same exact SVD's U (V)
    // where it would take that SVD.
    const bool tucker_u = s.kind() == schemes::SchemeKind::tucker && plan.exact_u;
    const std::unique_ptr<schemes::Encoded> e =
        shared     ? schemes::lowrank_from_svd(plan.svd, s.params().rank, m)
        : tucker_u ? schemes::encode_tucker_reusing(w, s.params(), plan.svd.u, plan.svd.vt)
                   : s.encode(w);
    Candidate c;
    c.encode_seconds = seconds_since(t0) + (shared ? plan.svd_seconds : 0.0);
    c.label = e->label();
    measure_errors(m, norms, *e, importance, c);
    c.bytes = static_cast<int64_t>(e->bytes());
    c.macs = e->macs(1);
    c.params = stored_params(*e);
    layer.candidates.push_back(std::move(c));
  }
  return layer;
}

}  // namespace

std::vector<int64_t> profile_lowrank_ranks(const Tensor& w, const linalg::SvdOptions& svd) {
  if (w.shape().size() != 2 || w.dtype() != DType::f32)
    throw Error("lowrank ranks", fmt::format("expected an f32 matrix, found {} {}",
                                             dtype_name(w.dtype()), shape_to_string(w.shape())));
  const Tensor c = w.contiguous();
  return plan_lowrank(c, svd, weight_norms(c, {}).plain).ranks;
}

double activation_rel_error(const Tensor& w, const Tensor& w_hat, std::span<const float> d) {
  if (w.shape().size() != 2 || w.shape() != w_hat.shape() ||
      static_cast<int64_t>(d.size()) != w.dim(1))
    throw Error("activation error",
                fmt::format("shapes differ: W {}, Ŵ {}, importance [{}]",
                            shape_to_string(w.shape()), shape_to_string(w_hat.shape()), d.size()));
  const std::vector<float> a = w.to_f32_vector(), b = w_hat.to_f32_vector();
  const size_t in = d.size();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double dj = d[i % in], diff = double(a[i]) - double(b[i]);
    num += dj * diff * diff;
    den += dj * double(a[i]) * a[i];
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

/// int8-a8 rounds its reader's input, so it is a candidate only where the
/// weight is stored as f32 (an f16 graph's readers run in f16) and every
/// node reading it reads it as its weight and graph::emit_w8a8 takes that
/// node (a Conv of groups 1, a MatMul, a Gemm): its candidates are dropped
/// from the other layers (a depthwise or transposed conv, ISNet's f16 ones).
/// A model without nodes (a bare weight file) has no readers to judge: kept.
void drop_w8a8_without_reader(const graph::Graph& g, const std::vector<graph::WeightView>& weights,
                              ModelProfile& profile) {
  if (g.nodes.empty()) return;
  std::map<std::string, bool> ok;
  std::map<std::string, Shape> shape;
  for (const graph::WeightView& w : weights) {
    if (w.tensor.dtype() != DType::f32) ok[w.name] = false;
    shape[w.name] = w.tensor.shape();
  }
  for (const graph::Node& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto [it, fresh] = ok.emplace(n.inputs[i], true);
      const auto s = shape.find(n.inputs[i]);
      it->second = it->second && i == 1 && s != shape.end() && graph::w8a8_reader(n, s->second);
    }
  for (LayerProfile& l : profile.layers) {
    const auto it = ok.find(l.name);
    if (it != ok.end() && it->second) continue;
    std::erase_if(l.candidates, [](const Candidate& c) { return c.label == "int8-a8"; });
    if (l.candidates.empty())
      l.candidates = {dense_candidate(l.shape_out_in[0], l.shape_out_in[1])};
  }
}

LayerProfile profile_layer(const graph::WeightView& weight, const ProfileOptions& options,
                           uint64_t index, std::span<const float> importance) {
  if (weight.layout == WeightLayout::none)
    throw Error(weight.name, "no [out, in] view: not a layer to profile");
  const Tensor m = weight.out_in();     // [out, in] f32, a copy of this layer only
  release_mapped_pages(weight.tensor);  // the copy is all this layer reads from now on
  const int64_t out = m.dim(0), in = m.dim(1);
  if (!importance.empty() && static_cast<int64_t>(importance.size()) != in)
    throw Error(weight.name,
                fmt::format("importance vector has {} elements, the layer has {} inputs",
                            importance.size(), in));
  // Conv kernels keep their shape so that tucker can use its Tucker-2 form.
  const Tensor w = weight.layout == WeightLayout::conv ? m.reshape(weight.tensor.shape()) : m;

  ProfileOptions o = options;
  o.scheme_defaults.svd.seed = Rng(options.seed).split(index).next_u64();
  if (const auto g = options.grams.find(weight.name); g != options.grams.end())
    o.scheme_defaults.gram = g->second;
  LayerProfile layer;
  layer.name = weight.name;
  layer.shape_out_in = {out, in};
  layer.numel = out * in;
  layer.dense_bytes = 4 * layer.numel;
  // Values the encoders cannot take keep the layer dense; the run goes on.
  auto keep_dense = [&](const std::string& why) {
    warn(weight.name, "kept dense: " + why);
    layer.candidates = {dense_candidate(out, in)};
    layer.kept_dense = why;
    return layer;
  };
  if (const NonFinite bad = find_non_finite(m); bad.count > 0)
    return keep_dense(fmt::format(
        "{} non-finite weight{} (the first at row {}, column {} of the "
        "[out, in] view: {})",
        bad.count, bad.count == 1 ? "" : "s", bad.first / in, bad.first % in, bad.first_value));
  LayerProfile measured;
  try {
    measured = measure(layer, m, w, o, importance);
  } catch (const Error& e) {
    // A scale past f16's range, an SVD of values near the f32 range: the
    // first scheme that fails names the problem.
    return keep_dense(e.what());
  } catch (const std::bad_alloc&) {
    throw Error(weight.name, "out of memory");
  }
  if (measured.candidates.empty())
    throw Error(weight.name, fmt::format("no selected scheme applies to shape {}",
                                         shape_to_string(weight.tensor.shape())));
  return measured;
}

bool is_profiled(const graph::WeightView& weight, const ProfileOptions& options) {
  if (weight.layout == WeightLayout::none || weight.tensor.numel() < options.min_params)
    return false;
  if (options.layer_regex.empty()) return true;
  return std::regex_search(weight.name, std::regex(options.layer_regex, std::regex::ECMAScript));
}

ModelProfile profile_model(const graph::Model& model, const ProfileOptions& options) {
  return profile_model(model, options, LayerSelection{});
}

ModelProfile profile_model(const graph::Model& model, const ProfileOptions& options,
                           const LayerSelection& selection) {
  try {
    std::regex check(options.layer_regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error("--layers", fmt::format("invalid regex \"{}\": {}", options.layer_regex, e.what()));
  }
  if (options.min_params < 0)
    throw Error("--min-params", fmt::format("must be >= 0, found {}", options.min_params));
  for (const std::string& item : options.schemes)
    if (item != "lowrank" && item != "int4-g" && family_kinds(item).empty())
      schemes::parse_scheme(item, options.scheme_defaults);

  ModelProfile profile;
  profile.model = model.source;
  const std::vector<graph::WeightView> weights = graph::weights(model);
  if (!options.layer_regex.empty()) {
    // A pattern that names no weight at all is a mistake, not a 0-layer profile.
    const std::regex re(options.layer_regex, std::regex::ECMAScript);
    int64_t named = 0;
    bool any = false;
    for (const graph::WeightView& w : weights) {
      if (w.layout == WeightLayout::none) continue;
      ++named;
      any = any || std::regex_search(w.name, re);
    }
    if (!any)
      throw Error("--layers", fmt::format("\"{}\" matches none of the {} weight names of {}",
                                          options.layer_regex, named, model.source));
  }
  std::vector<const graph::WeightView*> layers;
  for (const graph::WeightView& w : weights) {
    const int64_t bytes = checked_mul<int64_t>(4, w.tensor.numel(), w.name, "its f32 bytes");
    profile.dense_bytes =
        checked_add(profile.dense_bytes, bytes, model.source, "the model's dense bytes");
    if (is_profiled(w, options))
      layers.push_back(&w);
    else
      profile.fixed_bytes = bytes + profile.fixed_bytes;  // ≤ dense_bytes
  }

  std::vector<std::vector<float>> importance(layers.size());
  if (!options.calib.empty()) {
    const graph::Model calib = read_safetensors(options.calib);
    for (size_t i = 0; i < layers.size(); ++i) {
      const graph::WeightView& w = *layers[i];
      const auto it = calib.graph.initializers.find(w.name);
      const int64_t in = w.out_in_shape()[1];
      if (it == calib.graph.initializers.end())
        throw Error(options.calib, fmt::format("no calibration vector for layer {}", w.name));
      const Tensor& c = it->second;
      if (c.dtype() != DType::f32 || c.shape() != Shape{in})
        throw Error(options.calib,
                    fmt::format("layer {}: expected an f32 vector of length {} (its inputs), found "
                                "{} {}",
                                w.name, in, dtype_name(c.dtype()), shape_to_string(c.shape())));
      importance[i] = c.to_f32_vector();
      for (float v : importance[i])
        if (!std::isfinite(v) || v < 0)
          throw Error(options.calib, fmt::format("layer {}: mean x² must be finite and >= 0, "
                                                 "found {}",
                                                 w.name, v));
    }
  }

  std::vector<size_t> selected;
  if (selection.only) {
    selected = *selection.only;
    for (size_t k = 0; k < selected.size(); ++k)
      if (selected[k] >= layers.size() || (k > 0 && selected[k] <= selected[k - 1]))
        throw Error("profile", fmt::format("layer index {} is not one of the {} profiled layers "
                                           "in ascending order",
                                           selected[k], layers.size()));
  } else {
    selected.resize(layers.size());
    for (size_t i = 0; i < selected.size(); ++i) selected[i] = i;
  }
  profile.layers.resize(selected.size());
  const size_t workers = std::clamp<size_t>(linalg::resolve_threads(options.threads), 1,
                                            std::max<size_t>(1, selected.size()));
  const bool progress = options.progress && ::isatty(STDERR_FILENO);
  const auto t0 = Clock::now();
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    // One layer per worker: the pool is the --threads bound, so a worker's own
    // OpenMP regions (scheme kernels) stay on it.
    const linalg::ThreadLimit serial(1);
    for (size_t k; !failed && (k = next++) < selected.size();) {
      const size_t i = selected[k];
      try {
        std::optional<LayerProfile> hit;
        if (selection.lookup) hit = selection.lookup(i, *layers[i]);
        if (hit) {
          profile.layers[k] = std::move(*hit);
        } else {
          profile.layers[k] = profile_layer(*layers[i], options, i, importance[i]);
          if (selection.done) {
            std::lock_guard lock(mu);
            selection.done(i, *layers[i], profile.layers[k]);
          }
        }
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
        return;
      }
      const size_t n = ++done;
      if (progress || options.on_layer) {
        std::lock_guard lock(mu);
        if (progress) draw_progress(n, selected.size(), seconds_since(t0));
        if (options.on_layer) options.on_layer(n, selected.size());
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  drop_w8a8_without_reader(model.graph, weights, profile);
  return profile;
}

}  // namespace tailor
