// Sequential GPTQ against the original's products (compress/sequential_gptq.h):
// a layer after a compressed one is fitted to the ridge target written out
// here from its definition (rows of relu(X·Ŵ1ᵀ) and relu(X·W1ᵀ), solved by
// Gaussian elimination), and a layer with nothing compressed before it is
// plain GPTQ on the original model's Gram.
#include "tailor/compress/sequential_gptq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compress/rewrite_util.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/calibration.h"
#include "tailor/runtime/executor.h"

namespace tailor::compress {
namespace {

using rewrite_test::randn;

graph::Node node(const std::string& op, std::vector<std::string> in, std::string out) {
  graph::Node n;
  n.op_type = op;
  n.name = out;
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  return n;
}

/// X [6, 16] → MatMul(W1 [16, 16]) → Relu → MatMul(W2 [16, 8]) → Y, and
/// X → MatMul(W3 [16, 8]) → Z beside them.
graph::Model model() {
  graph::Model m;
  m.opset = 13;
  m.source = "seq.onnx";
  m.graph.inputs = {"X"};
  m.graph.types["X"] = graph::ValueType{DType::f32, graph::sym_shape_of({6, 16})};
  m.graph.outputs = {"Y", "Z"};
  m.graph.add_initializer("W1", randn({16, 16}, 11));
  m.graph.add_initializer("W2", randn({16, 8}, 12));
  m.graph.add_initializer("W3", randn({16, 8}, 13));
  m.graph.nodes = {node("MatMul", {"X", "W1"}, "A"), node("Relu", {"A"}, "R"),
                   node("MatMul", {"R", "W2"}, "Y"), node("MatMul", {"X", "W3"}, "Z")};
  return m;
}

plan::Plan plan_of(std::vector<std::pair<std::string, std::string>> picks) {
  plan::Plan p;
  for (auto& [layer, label] : picks) {
    plan::PlanChoice c;
    c.layer = layer;
    c.label = label;
    p.choices.push_back(c);
  }
  return p;
}

std::vector<std::map<std::string, Tensor>> feeds() {
  return {{{"X", randn({6, 16}, 21)}}, {{"X", randn({6, 16}, 22)}}, {{"X", randn({6, 16}, 23)}}};
}

EncodedLayer encode_with(const graph::Model& m, const std::string& w, const std::string& label,
                         size_t index, std::shared_ptr<const schemes::Gram> gram) {
  const std::vector<graph::WeightView> ws = graph::weights(m);
  schemes::SchemeParams p;
  p.gram = std::move(gram);
  return encode_layer(*graph::find_weight(ws, w), label, p, 0x7a11, index);
}

std::vector<float> decoded(const EncodedLayer& e) {
  return e.encoded->decode().to_f32_vector();
}

/// Solves A·Y = B (A [n, n], B [n, m], row-major) by Gaussian elimination
/// with partial pivoting.
std::vector<double> solve(std::vector<double> a, std::vector<double> b, int n, int m) {
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[piv * n + c])) piv = r;
    for (int j = 0; j < n; ++j) std::swap(a[c * n + j], a[piv * n + j]);
    for (int j = 0; j < m; ++j) std::swap(b[c * m + j], b[piv * m + j]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r * n + c] / a[c * n + c];
      for (int j = 0; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
      for (int j = 0; j < m; ++j) b[r * m + j] -= f * b[c * m + j];
    }
  }
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < m; ++j) b[r * m + j] /= a[r * n + r];
  return b;
}

/// relu(X·Wᵀ) rows of one feed, W [16, 16] as [out, in]; products rounded to
/// f32 as the runtime's MatMul gives them.
std::vector<double> hidden(const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> a(6 * 16);
  for (int r = 0; r < 6; ++r)
    for (int o = 0; o < 16; ++o) {
      double s = 0;
      for (int i = 0; i < 16; ++i) s += double(x[r * 16 + i]) * double(w[o * 16 + i]);
      a[r * 16 + o] = std::max(0.0, static_cast<double>(static_cast<float>(s)));
    }
  return a;
}

TEST(SequentialGptq, ALayerAfterACompressedOneFitsTheOriginalProducts) {
  const graph::Model m = model();
  const plan::Plan p = plan_of({{"W1", "int4-gptq"}, {"W2", "int4-gptq"}, {"W3", "int8"}});
  const std::vector<EncodedLayer> got = encode_plan_sequential(m, m, p, {}, 0x7a11, 1, feeds());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].name, "W1");  // encode_plan's order: the plan's
  EXPECT_EQ(got[1].name, "W2");
  EXPECT_EQ(got[2].name, "W3");

  // W1: nothing compressed before it, so GPTQ of W1 on the original Gram of X.
  const auto original = runtime::gram(m, feeds());
  const EncodedLayer w1 = encode_with(m, "W1", "int4-gptq", 0,
                                      std::make_shared<const schemes::Gram>(original.at("W1")));
  EXPECT_EQ(decoded(got[0]), decoded(w1));
  // W3 rounds to nearest: no Gram.
  EXPECT_EQ(decoded(got[2]), decoded(encode_with(m, "W3", "int8", 2, nullptr)));

  // W2 sees X̃ = relu(X·Ŵ1ᵀ) where the original sees X = relu(X·W1ᵀ). By
  // definition: H̃ = Σ x̃x̃ᵀ, C = Σ x̃xᵀ, and the ridge target
  // W2'ᵀ = W2ᵀ + α(H̃ + λI)⁻¹(C − H̃)W2ᵀ, λ = 0.01 · mean diag H̃ (α = 1 and
  // the encoder's kAsymmetricAlpha).
  const std::vector<float> w1hat = decoded(w1);
  const std::vector<float> w1f =
      m.graph.initializers.at("W1").transpose(0, 1).contiguous().to_f32_vector();  // [out, in]
  std::vector<double> h(16 * 16, 0.0), c(16 * 16, 0.0);
  for (const auto& f : feeds()) {
    const std::vector<float> x = f.at("X").to_f32_vector();
    const std::vector<double> xt = hidden(x, w1hat), xo = hidden(x, w1f);
    for (int r = 0; r < 6; ++r)
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
          h[i * 16 + j] += xt[r * 16 + i] * xt[r * 16 + j];
          c[i * 16 + j] += xt[r * 16 + i] * xo[r * 16 + j];
        }
  }
  const std::vector<float> w2 = m.graph.initializers.at("W2").to_f32_vector();  // W2ᵀ [16, 8]
  double mean_diag = 0;
  for (int i = 0; i < 16; ++i) mean_diag += h[i * 16 + i] / 16;
  std::vector<double> rhs(16 * 8, 0.0), hd = h;
  for (int i = 0; i < 16; ++i) {
    hd[i * 16 + i] += 0.01 * mean_diag;
    for (int o = 0; o < 8; ++o)
      for (int j = 0; j < 16; ++j)
        rhs[i * 8 + o] += (c[i * 16 + j] - h[i * 16 + j]) * w2[j * 8 + o];
  }
  const std::vector<double> y = solve(hd, rhs, 16, 8);
  schemes::Gram hg{16, 18, h};
  const std::vector<graph::WeightView> ws = graph::weights(m);
  for (const double alpha : {1.0, kAsymmetricAlpha}) {
    const std::vector<float> target =
        asymmetric_target(*graph::find_weight(ws, "W2"), hg, c, 0.01, alpha).to_f32_vector();
    ASSERT_EQ(target.size(), 16u * 8u);
    for (int k = 0; k < 16 * 8; ++k) {
      const double want = w2[k] + alpha * y[k];
      EXPECT_NEAR(target[k], want, 1e-4 * (1 + std::abs(want))) << k << " alpha " << alpha;
    }
  }

  // Its codes: GPTQ of that target against H̃, the Grams taken here by
  // runtime::gram over the rows [X̃ | X] (the sums the encoder accumulates).
  graph::Model wide;
  wide.opset = 13;
  wide.source = "wide.onnx";
  wide.graph.inputs = {"J"};
  wide.graph.types["J"] = graph::ValueType{DType::f32, graph::sym_shape_of({6, 32})};
  wide.graph.outputs = {"Y"};
  wide.graph.add_initializer("V", randn({32, 1}, 3));
  wide.graph.nodes = {node("MatMul", {"J", "V"}, "Y")};
  graph::Model compressed = m;
  compressed.graph.add_initializer(
      "W1", Tensor::from_f32({16, 16}, w1hat).transpose(0, 1).contiguous());  // stored [in, out]
  compressed.graph.outputs.push_back("R");
  graph::Model plain = m;
  plain.graph.outputs.push_back("R");
  runtime::Executor run_c(compressed), run_o(plain);
  std::vector<std::map<std::string, Tensor>> joined;
  for (const auto& f : feeds()) {
    const std::vector<float> a = run_c.run(f).at("R").to_f32_vector();
    const std::vector<float> b = run_o.run(f).at("R").to_f32_vector();
    std::vector<float> j(6 * 32);
    for (int r = 0; r < 6; ++r)
      for (int i = 0; i < 16; ++i) {
        j[r * 32 + i] = a[r * 16 + i];
        j[r * 32 + 16 + i] = b[r * 16 + i];
      }
    joined.push_back({{"J", Tensor::from_f32({6, 32}, j)}});
  }
  const schemes::Gram g = runtime::gram(wide, joined).at("V");
  auto hr = std::make_shared<schemes::Gram>(schemes::Gram{16, g.rows, {}});
  std::vector<double> cr(16 * 16);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      hr->h.push_back(g.h[i * 32 + j]);
      cr[i * 16 + j] = g.h[i * 32 + 16 + j];
    }
  EXPECT_EQ(hr->rows, 18);
  graph::WeightView v2 = *graph::find_weight(ws, "W2");
  v2.tensor = asymmetric_target(v2, *hr, cr, 0.01, kAsymmetricAlpha);
  schemes::SchemeParams params;
  params.gram = hr;
  EXPECT_EQ(decoded(got[1]), decoded(encode_layer(v2, "int4-gptq", params, 0x7a11, 1)));

  // What it is for: on these rows it reproduces the original products
  // X·W2ᵀ from X̃ better than GPTQ fitted to the original's Gram alone.
  const EncodedLayer parallel = encode_with(
      m, "W2", "int4-gptq", 1, std::make_shared<const schemes::Gram>(original.at("W2")));
  auto miss = [&](const std::vector<float>& q) {  // Σ ‖x·W2ᵀ − x̃·Q̂ᵀ‖², Q̂ [8, 16]
    double e = 0;
    for (const auto& f : feeds()) {
      const std::vector<float> x = f.at("X").to_f32_vector();
      const std::vector<double> xt = hidden(x, w1hat), xo = hidden(x, w1f);
      for (int r = 0; r < 6; ++r)
        for (int o = 0; o < 8; ++o) {
          double want = 0, have = 0;
          for (int i = 0; i < 16; ++i) {
            want += xo[r * 16 + i] * w2[i * 8 + o];
            have += xt[r * 16 + i] * q[o * 16 + i];
          }
          e += (want - have) * (want - have);
        }
    }
    return e;
  };
  EXPECT_LT(miss(decoded(got[1])), miss(decoded(parallel)));

  // Fitted per layer (GptqFit::per_layer), every layer is GPTQ on the
  // original's own Gram, W2 included.
  const std::vector<EncodedLayer> per_layer =
      encode_plan_sequential(m, m, p, {}, 0x7a11, 1, feeds(), std::nullopt, GptqFit::per_layer);
  ASSERT_EQ(per_layer.size(), 3u);
  EXPECT_EQ(decoded(per_layer[0]), decoded(w1));
  EXPECT_EQ(decoded(per_layer[1]), decoded(parallel));
  EXPECT_EQ(decoded(per_layer[2]), decoded(got[2]));
}

TEST(SequentialGptq, DoesNotDependOnTheThreadCount) {
  const graph::Model m = model();
  const plan::Plan p = plan_of({{"W1", "int4-gptq"}, {"W2", "int3-gptq"}, {"W3", "int4-g32-gptq"}});
  const int before = linalg::threads();
  linalg::set_threads(1);
  const std::vector<EncodedLayer> one = encode_plan_sequential(m, m, p, {}, 0x7a11, 1, feeds());
  linalg::set_threads(2);
  const std::vector<EncodedLayer> two = encode_plan_sequential(m, m, p, {}, 0x7a11, 2, feeds());
  linalg::set_threads(before);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].name, two[i].name);
    EXPECT_EQ(decoded(one[i]), decoded(two[i])) << one[i].name;
  }
}

TEST(SequentialGptq, RefusesNonFiniteActivationsAndNoInputs) {
  const graph::Model m = model();
  const plan::Plan p = plan_of({{"W1", "int4-gptq"}, {"W2", "int4-gptq"}, {"W3", "dense"}});
  std::vector<std::map<std::string, Tensor>> bad = feeds();
  std::vector<float> x = bad[1].at("X").to_f32_vector();
  x[5] = std::numeric_limits<float>::quiet_NaN();
  bad[1]["X"] = Tensor::from_f32({6, 16}, x);
  EXPECT_THROW(encode_plan_sequential(m, m, p, {}, 0x7a11, 1, bad), Error);
  EXPECT_THROW(encode_plan_sequential(m, m, p, {}, 0x7a11, 1, {}), Error);
  // Without a -gptq choice no input is needed.
  EXPECT_EQ(encode_plan_sequential(m, m, plan_of({{"W3", "int8"}}), {}, 0x7a11, 1, {}).size(), 1u);
}

}  // namespace
}  // namespace tailor::compress
