// tailor profile: candidates, low-rank ranks, activation-aware error, byte
// accounting, filters, determinism across threads, and the CLI. Expected values
// come from the definitions (DESIGN.md), computed here independently.
#include "tailor/profile/profiler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/io/safetensors.h"
#include "tailor/linalg/blas.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::expect_error_naming;
using testing::TempDir;

/// Gaussian tensor of `shape` (f32) from `seed`.
Tensor gaussian(Shape shape, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(shape_numel(shape));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_f32(std::move(shape), v);
}

graph::WeightView matrix_weight(const std::string& name, Tensor t) {
  return graph::WeightView{name, std::move(t), WeightLayout::out_in};
}

/// W = U·diag(σ)·Vᵀ [out, in] with orthonormal U [out, k], V [in, k], k = σ.size().
Tensor with_spectrum(int64_t out, int64_t in, const std::vector<double>& sigma, uint64_t seed) {
  const int64_t k = static_cast<int64_t>(sigma.size());
  const Tensor gu = gaussian({out, k}, seed), gv = gaussian({in, k}, seed + 1);
  const linalg::Matrix u =
      linalg::orthonormalize(Eigen::Map<const linalg::Matrix>(gu.data<float>(), out, k));
  const linalg::Matrix v =
      linalg::orthonormalize(Eigen::Map<const linalg::Matrix>(gv.data<float>(), in, k));
  std::vector<float> w(out * in, 0.0f);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = 0; j < in; ++j) {
      double s = 0;
      for (int64_t r = 0; r < k; ++r) s += double(u(o, r)) * sigma[r] * v(j, r);
      w[o * in + j] = static_cast<float>(s);
    }
  return Tensor::from_f32({out, in}, w);
}

const Candidate* find(const LayerProfile& layer, const std::string& label) {
  for (const Candidate& c : layer.candidates)
    if (c.label == label) return &c;
  return nullptr;
}

/// Ŵ of int8 by DESIGN.md: per row s = f16(max|W|/127) (1 if zero),
/// q = clamp(round_half_away(W/s), ±127), Ŵ = q·s. f16 rounding by _Float16.
std::vector<double> int8_reference(const std::vector<float>& w, int64_t out, int64_t in) {
  std::vector<double> w_hat(w.size());
  for (int64_t o = 0; o < out; ++o) {
    float m = 0;
    for (int64_t j = 0; j < in; ++j) m = std::max(m, std::fabs(w[o * in + j]));
    const float s = m == 0 ? 1.0f : static_cast<float>(static_cast<_Float16>(m / 127.0f));
    for (int64_t j = 0; j < in; ++j) {
      const float x = w[o * in + j] / s;
      const float q =
          std::clamp(std::copysign(std::floor(std::fabs(x) + 0.5f), x), -127.0f, 127.0f);
      w_hat[o * in + j] = double(q) * s;
    }
  }
  return w_hat;
}

TEST(ProfileLowRank, EnergyRanksOfAHandBuiltSpectrum) {
  // σ = 8, 7, ..., 1: Σσ² = 204. Cumulative 64, 113, 149, 174, 190, 199, 203, 204:
  // 90% (183.6) at r = 5, 99% (201.96) at r = 7, 99.9% (203.796) at r = 8.
  // Parameter ranks of [96, 80]: 7680/176 = 43.6 → /2 = 21, /4 = 10, /8 = 5.
  const Tensor w = with_spectrum(96, 80, {8, 7, 6, 5, 4, 3, 2, 1}, 11);
  EXPECT_EQ(profile_lowrank_ranks(w, {}), (std::vector<int64_t>{5, 7, 8, 10, 21}));
}

TEST(ProfileLowRank, EnergyRanksOfAGeometricSpectrum) {
  // σ_i = 0.85^i, i < 60, on [200, 150]; the levels computed by a plain cumulative sum.
  std::vector<double> sigma;
  for (int i = 0; i < 60; ++i) sigma.push_back(std::pow(0.85, i));
  double total = 0;
  for (double s : sigma) total += s * s;
  std::vector<int64_t> expected = {200 * 150 / (2 * 350), 200 * 150 / (4 * 350),
                                   200 * 150 / (8 * 350)};
  for (double level : {0.9, 0.99, 0.999}) {
    double c = 0;
    for (size_t r = 0; r < sigma.size(); ++r) {
      c += sigma[r] * sigma[r];
      if (c >= level * total) {
        expected.push_back(static_cast<int64_t>(r + 1));
        break;
      }
    }
  }
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
  EXPECT_EQ(profile_lowrank_ranks(with_spectrum(200, 150, sigma, 5), {}), expected);
}

/// Energy and parameter ranks of an [out, in] layer with singular values
/// `sigma` by definition (DESIGN.md / profiler.h): smallest r with
/// Σ_{i≤r} σ_i² ≥ level·Σσ², kept when r ≤ kmax; ⌊p·out·in/(out + in)⌋.
std::vector<int64_t> ranks_by_definition(int64_t out, int64_t in,
                                         const std::vector<double>& sigma) {
  const int64_t kmax = std::min(std::min(out, in), (out * in - 1) / (out + in));
  std::vector<int64_t> ranks;
  for (int64_t p : {2, 4, 8}) {
    const int64_t r = std::max<int64_t>(1, out * in / (p * (out + in)));
    if (r <= kmax) ranks.push_back(r);
  }
  double total = 0;
  for (double s : sigma) total += s * s;
  for (double level : {0.9, 0.99, 0.999}) {
    double c = 0;
    for (size_t r = 0; r < sigma.size() && int64_t(r) < kmax; ++r) {
      c += sigma[r] * sigma[r];
      if (c >= level * total) {
        ranks.push_back(static_cast<int64_t>(r + 1));
        break;
      }
    }
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

TEST(ProfileLowRank, BlockedEstimateEqualsGesddAndTheDefinition) {
  // [400, 300]: kmax = 119999/700 = 171, parameter ranks 85, 42, 21. The
  // blocked QB (forced by exact_max_dim = 0) and gesdd (the default for this
  // size) must both give the ranks computed from σ.
  linalg::SvdOptions blocked;
  blocked.exact_max_dim = 0;
  const std::vector<std::vector<double>> spectra = [] {
    std::vector<double> fast, slow, knee, flat(300, 1.0);
    for (int i = 0; i < 300; ++i) {
      fast.push_back(std::pow(0.9, i));    // all three levels reached early
      slow.push_back(std::pow(0.985, i));  // 90% and 99% reached, 99.9% beyond kmax
      knee.push_back(i < 30 ? 10.0 - 0.2 * i : 0.3 * std::pow(0.99, i));
    }
    return std::vector<std::vector<double>>{fast, slow, knee, flat};  // flat: no energy rank
  }();
  for (size_t t = 0; t < spectra.size(); ++t) {
    const Tensor w = with_spectrum(400, 300, spectra[t], 40 + t);
    const std::vector<int64_t> expected = ranks_by_definition(400, 300, spectra[t]);
    EXPECT_EQ(profile_lowrank_ranks(w, blocked), expected) << "spectrum " << t;
    EXPECT_EQ(profile_lowrank_ranks(w, {}), expected) << "spectrum " << t;
  }
}

TEST(ProfileLowRank, BlockedLowRankCandidatesAreNearTheOptimum) {
  // Rank-r error of the candidate cut from the blocked QB is within 1% of the
  // Eckart–Young error sqrt(Σ_{i>r} σ_i²) / ‖σ‖.
  std::vector<double> sigma;
  for (int i = 0; i < 300; ++i) sigma.push_back(std::pow(0.97, i));
  ProfileOptions o;
  o.schemes = {"lowrank"};
  o.scheme_defaults.svd.exact_max_dim = 0;
  const LayerProfile p = profile_layer(matrix_weight("fc", with_spectrum(400, 300, sigma, 8)), o);
  double total = 0;
  for (double s : sigma) total += s * s;
  ASSERT_FALSE(p.candidates.empty());
  for (const Candidate& c : p.candidates) {
    const int64_t r = std::stoll(c.label.substr(std::string("lowrank-r").size()));
    double tail = 0;
    for (size_t i = r; i < sigma.size(); ++i) tail += sigma[i] * sigma[i];
    EXPECT_LT(c.rel_error, 1.01 * std::sqrt(tail / total) + 1e-6) << c.label;
    EXPECT_GE(c.rel_error, std::sqrt(tail / total) * (1 - 1e-3)) << c.label;
  }
}

TEST(ProfileLowRank, ExactRankEightLayerIsRecoveredAtTheTopEnergyRank) {
  const Tensor w = with_spectrum(96, 80, {8, 7, 6, 5, 4, 3, 2, 1}, 11);
  ProfileOptions o;
  o.schemes = {"lowrank"};
  const LayerProfile p = profile_layer(matrix_weight("fc", w), o);
  const Candidate* r8 = find(p, "lowrank-r8");
  ASSERT_NE(r8, nullptr);
  EXPECT_LT(r8->rel_error, 1e-5);
  EXPECT_EQ(r8->bytes, 4 * 8 * (96 + 80));
  EXPECT_EQ(r8->macs, 8 * (96 + 80));
  EXPECT_EQ(r8->params, 8 * (96 + 80));
  // Rank 5 keeps σ = 8..4: error sqrt((9 + 4 + 1) / 204).
  const Candidate* r5 = find(p, "lowrank-r5");
  ASSERT_NE(r5, nullptr);
  EXPECT_NEAR(r5->rel_error, std::sqrt(14.0 / 204.0), 1e-4);
  for (const Candidate& c : p.candidates) EXPECT_LT(c.bytes, 4 * 96 * 80) << c.label;
}

TEST(ProfileLowRank, CandidateCutFromASharedSvdEqualsTheEncoder) {
  const Tensor w = gaussian({40, 30}, 21);
  const linalg::Svd svd = linalg::svd_truncated(
      Eigen::Map<const linalg::Matrix>(w.data<float>(), 40, 30), 20, linalg::SvdOptions{});
  const auto cut = schemes::lowrank_from_svd(svd, 5);
  const auto direct = schemes::parse_scheme("lowrank-r5").encode(w);
  EXPECT_EQ(cut->label(), "lowrank-r5");
  EXPECT_EQ(cut->bytes(), direct->bytes());
  EXPECT_EQ(cut->macs(1), direct->macs(1));
  EXPECT_NEAR(schemes::rel_error(w, *cut), schemes::rel_error(w, *direct), 1e-6);
  EXPECT_THROW(schemes::lowrank_from_svd(svd, 0), Error);
  EXPECT_THROW(schemes::lowrank_from_svd(svd, 21), Error);
}

TEST(ProfileLowRank, CandidateCutFromOneSideEqualsTheTwoSidedCut) {
  // A one-sided SVD (U only for a wide W, Vᵀ only for a tall one) forms the
  // other factor from W; the product is the same rank-5 truncation.
  for (auto [out, in] : {std::pair<int64_t, int64_t>{30, 40}, {40, 30}}) {
    const Tensor w = gaussian({out, in}, 22);
    const linalg::Svd both = linalg::svd_gram(w.data<float>(), out, in, 12);
    const linalg::SvdSides side = out <= in ? linalg::SvdSides::left : linalg::SvdSides::right;
    const linalg::Svd one = linalg::svd_gram(w.data<float>(), out, in, 12, side);
    const auto a = schemes::lowrank_from_svd(both, 5), b = schemes::lowrank_from_svd(one, 5, w);
    EXPECT_EQ(b->label(), "lowrank-r5");
    EXPECT_EQ(b->bytes(), a->bytes());
    EXPECT_EQ(b->factor("A").shape(), (Shape{out, 5}));
    EXPECT_NEAR(schemes::rel_error(w, *b), schemes::rel_error(w, *a), 1e-6);
    EXPECT_THROW(schemes::lowrank_from_svd(one, 13, w), Error);
    EXPECT_THROW(schemes::lowrank_from_svd(one, 5, gaussian({out + 1, in + 1}, 1)), Error);
  }
}

TEST(ProfileLayer, GramPathGivesTheGesddPathsCandidates) {
  // Layers at or above gram_min_elements take every SVD (low-rank plan,
  // tucker's modes, tt's unfoldings) from Gram matrices; forcing that route on
  // small layers must give the same candidates, with errors equal to the
  // gesdd route's (both near-optimal truncations of the same spectrum).
  std::vector<double> sigma;
  for (int i = 0; i < 64; ++i) sigma.push_back(std::pow(0.93, i));
  for (auto [out, in] : {std::pair<int64_t, int64_t>{64, 144}, {144, 64}}) {
    const graph::WeightView w = matrix_weight("fc", with_spectrum(out, in, sigma, 31));
    ProfileOptions o;
    o.schemes = {"lowrank", "tucker", "tt"};
    const LayerProfile ref = profile_layer(w, o);
    o.scheme_defaults.svd.gram_min_elements = 0;
    const LayerProfile gram = profile_layer(w, o);
    ASSERT_EQ(gram.candidates.size(), ref.candidates.size());
    EXPECT_GT(ref.candidates.size(), 4u);
    for (size_t i = 0; i < ref.candidates.size(); ++i) {
      EXPECT_EQ(gram.candidates[i].label, ref.candidates[i].label);
      EXPECT_EQ(gram.candidates[i].bytes, ref.candidates[i].bytes);
      EXPECT_NEAR(gram.candidates[i].rel_error, ref.candidates[i].rel_error,
                  1e-4 * ref.candidates[i].rel_error + 1e-6)
          << out << "x" << in << " " << ref.candidates[i].label;
    }
  }
}

TEST(ProfileLowRank, OneSidedBlockedCandidatesAreNearTheOptimum) {
  // The blocked QB keeping only the smaller side (a large layer's route,
  // forced here by gram_min_elements = 0): ranks by the definition, errors
  // within 1% of Eckart–Young.
  std::vector<double> sigma;
  for (int i = 0; i < 300; ++i) sigma.push_back(std::pow(0.97, i));
  for (auto [out, in] : {std::pair<int64_t, int64_t>{400, 300}, {300, 400}}) {
    ProfileOptions o;
    o.schemes = {"lowrank"};
    o.scheme_defaults.svd.exact_max_dim = 0;
    o.scheme_defaults.svd.gram_min_elements = 0;
    const Tensor t = with_spectrum(out, in, sigma, 8);
    EXPECT_EQ(profile_lowrank_ranks(t, o.scheme_defaults.svd), ranks_by_definition(out, in, sigma));
    const LayerProfile p = profile_layer(matrix_weight("fc", t), o);
    double total = 0;
    for (double s : sigma) total += s * s;
    ASSERT_FALSE(p.candidates.empty());
    for (const Candidate& c : p.candidates) {
      const int64_t r = std::stoll(c.label.substr(std::string("lowrank-r").size()));
      double tail = 0;
      for (size_t i = r; i < sigma.size(); ++i) tail += sigma[i] * sigma[i];
      EXPECT_LT(c.rel_error, 1.01 * std::sqrt(tail / total) + 1e-6) << c.label;
      EXPECT_GE(c.rel_error, std::sqrt(tail / total) * (1 - 1e-3)) << c.label;
    }
  }
}

TEST(ProfileLayer, Int8ErrorMatchesTheDefinition) {
  const int64_t out = 5, in = 7;
  const Tensor w = gaussian({out, in}, 3);
  ProfileOptions o;
  o.schemes = {"int8", "dense"};
  const LayerProfile p = profile_layer(matrix_weight("tiny", w), o);
  ASSERT_EQ(p.candidates.size(), 2u);
  const Candidate& c = p.candidates[0];
  EXPECT_EQ(c.label, "int8");
  const std::vector<float> v = w.to_f32_vector();
  const std::vector<double> w_hat = int8_reference(v, out, in);
  double num = 0, den = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    num += (v[i] - w_hat[i]) * (v[i] - w_hat[i]);
    den += double(v[i]) * v[i];
  }
  EXPECT_NEAR(c.rel_error, std::sqrt(num / den), 1e-9);
  EXPECT_EQ(c.bytes, out * in + 2 * out);
  EXPECT_EQ(c.macs, out * in);
  EXPECT_FALSE(c.rel_error_activation.has_value());
  EXPECT_EQ(p.candidates[1].label, "dense");
  EXPECT_EQ(p.candidates[1].rel_error, 0.0);
  EXPECT_EQ(p.dense_bytes, 4 * out * in);
}

TEST(ProfileLayer, ConvKernelIsProfiledOnItsOutInView) {
  // [16, 8, 3, 3] viewed [16, 72]; tucker sees the kernel shape (Tucker-2).
  const graph::WeightView conv{"conv.weight", gaussian({16, 8, 3, 3}, 5), WeightLayout::conv};
  ProfileOptions o;
  o.schemes = {"int8", "tucker", "lowrank"};
  const LayerProfile p = profile_layer(conv, o);
  EXPECT_EQ(p.shape_out_in, (std::vector<int64_t>{16, 72}));
  EXPECT_EQ(p.numel, 16 * 72);
  ASSERT_NE(find(p, "int8"), nullptr);
  EXPECT_EQ(find(p, "int8")->bytes, 16 * 72 + 2 * 16);
  EXPECT_NE(find(p, "tucker"), nullptr);
  EXPECT_NE(find(p, "lowrank-r" + std::to_string(16 * 72 / (2 * 88))), nullptr);
  for (const Candidate& c : p.candidates) {
    EXPECT_TRUE(std::isfinite(c.rel_error)) << c.label;
    EXPECT_GT(c.bytes, 0) << c.label;
  }
}

TEST(ProfileLayer, ActivationAwareErrorMatchesTheHandFormula) {
  const int64_t out = 4, in = 6;
  const Tensor w = gaussian({out, in}, 9);
  const std::vector<float> d = {0.5f, 2.0f, 0.0f, 1.25f, 3.0f, 0.1f};
  ProfileOptions o;
  o.schemes = {"int8"};
  const LayerProfile p = profile_layer(matrix_weight("tiny", w), o, 0, d);
  ASSERT_TRUE(p.candidates[0].rel_error_activation.has_value());
  const std::vector<float> v = w.to_f32_vector();
  const std::vector<double> w_hat = int8_reference(v, out, in);
  double num = 0, den = 0;
  for (int64_t o2 = 0; o2 < out; ++o2)
    for (int64_t j = 0; j < in; ++j) {
      const double x = v[o2 * in + j], e = x - w_hat[o2 * in + j];
      num += d[j] * e * e;
      den += d[j] * x * x;
    }
  EXPECT_NEAR(*p.candidates[0].rel_error_activation, std::sqrt(num / den), 1e-9);
  EXPECT_THROW(profile_layer(matrix_weight("tiny", w), o, 0, std::vector<float>(5, 1.0f)), Error);
}

/// A small model: a [64, 64] f32 and a [128, 64] f16 matrix (profiled), a
/// [32, 16] matrix under 4096 elements and a [64] bias (fixed).
std::string small_model(const TempDir& dir) {
  const std::string path = dir.file("small.safetensors");
  write_safetensors(path, {{"a.weight", gaussian({64, 64}, 1)},
                           {"b.weight", gaussian({32, 16}, 2)},
                           {"bias", gaussian({64}, 3)},
                           {"c.weight", gaussian({128, 64}, 4).to(DType::f16)}});
  return path;
}

std::vector<std::string> names(const ModelProfile& p) {
  std::vector<std::string> out;
  for (const LayerProfile& l : p.layers) out.push_back(l.name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ProfileModel, FixedAndDenseBytesCountEveryWeightAsF32) {
  TempDir dir;
  ProfileOptions o;
  o.schemes = {"int8", "int4"};
  const ModelProfile p = profile_model(read_safetensors(small_model(dir)), o);
  EXPECT_EQ(p.dense_bytes, 4 * (64 * 64 + 32 * 16 + 64 + 128 * 64));
  EXPECT_EQ(p.fixed_bytes, 4 * (32 * 16 + 64));
  EXPECT_EQ(names(p), (std::vector<std::string>{"a.weight", "c.weight"}));
  for (const LayerProfile& l : p.layers) {
    EXPECT_EQ(l.dense_bytes, 4 * l.numel);
    ASSERT_EQ(l.candidates.size(), 2u);
  }
}

// int8-a8 rounds its reader's input: offered on a group-1 k×k Conv and a
// MatMul, not on a depthwise Conv nor a ConvTranspose (whose kernels have
// the same rank and look alike by shape), nor on a weight read twice where
// one reader is not a weight input, nor on an f16 weight.
TEST(ProfileModel, Int8A8OnlyWhereEveryReaderRoundsItsInput) {
  graph::Model m;
  m.opset = 13;
  m.source = "test";
  m.graph.inputs = {"X"};
  m.graph.outputs = {"Y", "Z"};
  m.graph.add_initializer("conv", gaussian({8, 8, 3, 3}, 1));
  m.graph.add_initializer("dw", gaussian({8, 1, 3, 3}, 2));
  m.graph.add_initializer("up", gaussian({8, 8, 2, 2}, 3));
  m.graph.add_initializer("mm", gaussian({8, 16}, 4));
  m.graph.add_initializer("twice", gaussian({16, 16}, 5));
  m.graph.add_initializer("half", gaussian({16, 16}, 6).to(DType::f16));
  // Past the W8A8 form's limits: a 1-D conv, 33×33 = 1089 > 1040 taps, and
  // 7282·9 = 65538 > 65535 inputs; 7281·9 = 65529 is within.
  m.graph.add_initializer("c1d", gaussian({8, 8, 3}, 7));
  m.graph.add_initializer("wide", gaussian({2, 2, 33, 33}, 8));
  m.graph.add_initializer("many", gaussian({2, 7282, 3, 3}, 9));
  m.graph.add_initializer("most", gaussian({2, 7281, 3, 3}, 10));
  // Matrices of 65536 > 65535 inputs: [in, out] read by MatMul, [out, in] by
  // Gemm with transB.
  m.graph.add_initializer("mmwide", gaussian({65536, 2}, 11));
  m.graph.add_initializer("gemmwide", gaussian({2, 65536}, 12));
  m.graph.outputs.insert(m.graph.outputs.end(), {"o1", "o2", "o3", "o4", "o5", "o6"});
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out,
                  std::vector<std::pair<std::string, graph::Attribute>> attrs = {}) {
    graph::Node n;
    n.name = out;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attributes = std::move(attrs);
    m.graph.nodes.push_back(std::move(n));
  };
  const auto k3 = graph::Attribute::of_ints({3, 3});
  node("Conv", {"X", "conv"}, "a", {{"kernel_shape", k3}});
  node("Conv", {"a", "dw"}, "b", {{"kernel_shape", k3}, {"group", graph::Attribute::of_int(8)}});
  node("ConvTranspose", {"b", "up"}, "c",
       {{"kernel_shape", graph::Attribute::of_ints({2, 2})},
        {"strides", graph::Attribute::of_ints({2, 2})}});
  node("MatMul", {"c", "mm"}, "Y");
  node("MatMul", {"Y", "twice"}, "d");
  node("Add", {"d", "twice"}, "e");
  node("MatMul", {"e", "half"}, "Z");
  node("Conv", {"X", "c1d"}, "o1", {{"kernel_shape", graph::Attribute::of_ints({3})}});
  node("Conv", {"X", "wide"}, "o2", {{"kernel_shape", graph::Attribute::of_ints({33, 33})}});
  node("Conv", {"X", "many"}, "o3", {{"kernel_shape", k3}});
  node("Conv", {"X", "most"}, "o4", {{"kernel_shape", k3}});
  node("MatMul", {"X", "mmwide"}, "o5");
  node("Gemm", {"X", "gemmwide"}, "o6", {{"transB", graph::Attribute::of_int(1)}});
  ProfileOptions o;
  o.schemes = {"int8", "int8-a8"};
  o.min_params = 0;
  const ModelProfile p = profile_model(m, o);
  std::map<std::string, bool> a8;
  for (const LayerProfile& l : p.layers) a8[l.name] = find(l, "int8-a8") != nullptr;
  EXPECT_EQ(a8, (std::map<std::string, bool>{{"conv", true},
                                             {"dw", false},
                                             {"up", false},
                                             {"mm", true},
                                             {"twice", false},
                                             {"half", false},
                                             {"c1d", false},
                                             {"wide", false},
                                             {"many", false},
                                             {"most", true},
                                             {"mmwide", false},
                                             {"gemmwide", false}}));
  for (const LayerProfile& l : p.layers) EXPECT_NE(find(l, "int8"), nullptr) << l.name;
}

TEST(ProfileModel, MinParamsAndRegexFilter) {
  TempDir dir;
  const graph::Model m = read_safetensors(small_model(dir));
  ProfileOptions o;
  o.schemes = {"int8"};
  o.min_params = 8192;
  ModelProfile p = profile_model(m, o);
  EXPECT_EQ(names(p), (std::vector<std::string>{"c.weight"}));
  EXPECT_EQ(p.fixed_bytes, 4 * (64 * 64 + 32 * 16 + 64));
  o.min_params = 1;
  o.layer_regex = "^(a|b)\\.";
  p = profile_model(m, o);
  EXPECT_EQ(names(p), (std::vector<std::string>{"a.weight", "b.weight"}));
  EXPECT_EQ(p.fixed_bytes, 4 * (64 + 128 * 64));
  o.layer_regex = "(";
  EXPECT_THROW(profile_model(m, o), Error);
  o.layer_regex = "^nomatch$";  // names no weight: refused, not a 0-layer profile
  EXPECT_THROW(profile_model(m, o), Error);
  o.layer_regex = "^a\\.";  // names one weight: profiled
  EXPECT_EQ(names(profile_model(m, o)), (std::vector<std::string>{"a.weight"}));
  o.layer_regex.clear();
  o.schemes = {"int9"};
  EXPECT_THROW(profile_model(m, o), Error);
}

TEST(ProfileModel, SameProfileOnOneAndTwoThreads) {
  TempDir dir;
  const graph::Model m = read_safetensors(small_model(dir));
  ProfileOptions o;
  o.schemes = {"int8", "int4-g", "ternary", "lowrank", "tucker", "tt"};
  o.min_params = 1;
  auto json = [&](int threads) {
    o.threads = threads;
    ModelProfile p = profile_model(m, o);
    for (LayerProfile& l : p.layers)
      for (Candidate& c : l.candidates) c.encode_seconds = 0;
    return profile_to_json(p);
  };
  const std::string one = json(1);
  EXPECT_EQ(one, json(2));
  EXPECT_NE(one.find("lowrank-r"), std::string::npos);
}

TEST(ProfileModel, CalibrationVectorsAreValidatedAndUsed) {
  TempDir dir;
  const graph::Model m = read_safetensors(small_model(dir));
  ProfileOptions o;
  o.schemes = {"int8"};
  o.calib = dir.file("calib.safetensors");
  std::vector<float> ones(64, 1.0f);
  write_safetensors(o.calib, {{"a.weight", Tensor::from_f32({64}, ones)}});
  expect_error_naming([&] { profile_model(m, o); }, o.calib, "c.weight");
  write_safetensors(o.calib, {{"a.weight", Tensor::from_f32({64}, ones)},
                              {"c.weight", Tensor::from_f32({63}, std::vector<float>(63, 1.0f))}});
  expect_error_naming([&] { profile_model(m, o); }, o.calib, "c.weight");
  write_safetensors(o.calib, {{"a.weight", Tensor::from_f32({64}, ones)},
                              {"c.weight", Tensor::from_f32({64}, ones)}});
  const ModelProfile p = profile_model(m, o);
  // Uniform importance: the activation-aware error is the plain relative error.
  for (const LayerProfile& l : p.layers) {
    ASSERT_TRUE(l.candidates[0].rel_error_activation.has_value());
    EXPECT_NEAR(*l.candidates[0].rel_error_activation, l.candidates[0].rel_error, 1e-9);
  }
}

constexpr const char* kRec = "ch_PP-OCRv4_rec_infer.onnx";

TEST(ProfileCli, ProfilesTheRecogniser) {
  const std::string model = testing::model_path(kRec);
  if (!std::filesystem::exists(model))
    FAIL() << model << " absent: run scripts/fetch-models.sh (make test does)";
  const testing::CommandResult inspect = testing::run_cli("inspect --json '" + model + "'");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  const nlohmann::json j = nlohmann::json::parse(inspect.output);
  size_t expected = 0;
  for (const auto& t : j["tensors"])
    if (!t["out_in"].is_null() && t["numel"].get<int64_t>() >= 4096) ++expected;
  EXPECT_EQ(j["totals"]["matrices"].get<int>(), 47);
  ASSERT_GT(expected, 0u);

  TempDir dir;
  const std::string out = dir.file("x.json");
  const testing::CommandResult r =
      testing::run_cli("profile '" + model + "' --schemes int8,int4,lowrank -o '" + out + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const ModelProfile p = read_profile(out);
  EXPECT_EQ(p.layers.size(), expected);
  EXPECT_NE(r.output.find("marked total"), std::string::npos);
  for (const LayerProfile& l : p.layers) {
    EXPECT_NE(find(l, "int8"), nullptr) << l.name;
    EXPECT_NE(find(l, "int4"), nullptr) << l.name;
  }
}

TEST(ProfileCli, BadInputExitsTwo) {
  TempDir dir;
  const std::string out = dir.file("x.json");
  EXPECT_EQ(
      testing::run_cli("profile '" + dir.file("absent.onnx") + "' -o '" + out + "'").exit_code, 2);
  const std::string model = dir.file("small.safetensors");
  write_safetensors(model, {{"a.weight", gaussian({64, 64}, 1)}});
  EXPECT_EQ(testing::run_cli("profile '" + model + "' --schemes int9 -o '" + out + "'").exit_code,
            2);
  EXPECT_EQ(testing::run_cli("profile '" + model + "' --layers '(' -o '" + out + "'").exit_code, 2);
  const testing::CommandResult none =
      testing::run_cli("profile '" + model + "' --layers nomatch --shard 0/2 -o '" + out + "'");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("matches none of the 1 weight names"), std::string::npos)
      << none.output;
  EXPECT_EQ(testing::run_cli("profile '" + model + "' --calib '" + dir.file("none") + "' -o '" +
                             out + "'")
                .exit_code,
            2);
  EXPECT_FALSE(std::filesystem::exists(out));
  const testing::CommandResult ok =
      testing::run_cli("profile '" + model + "' --schemes int8,dense -o '" + out + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(read_profile(out).layers.size(), 1u);
}

TEST(ProfileCli, ProgressBarOnlyOnATerminal) {
  TempDir dir;
  const std::string model = small_model(dir), out = dir.file("x.json");
  const std::string args = "profile '" + model + "' --schemes int8 -o '" + out + "'";
  const testing::CommandResult piped = testing::run_cli(args);
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_EQ(piped.output.find("ETA"), std::string::npos) << piped.output;
  // util-linux `script` gives the command a pseudo-terminal.
  if (std::system("command -v script > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "script (util-linux) not found: terminal case skipped";
  const std::string cmd = "script -qec \"" + std::string(TAILOR_CLI) + " " + args + "\" /dev/null";
  std::string tty;
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  for (int ch; (ch = std::fgetc(p)) != EOF;) tty += static_cast<char>(ch);
  ASSERT_EQ(::pclose(p), 0) << tty;
  EXPECT_NE(tty.find("2/2 layers"), std::string::npos) << tty;
  EXPECT_NE(tty.find("ETA"), std::string::npos) << tty;
}

}  // namespace
}  // namespace tailor
