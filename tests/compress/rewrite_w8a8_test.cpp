// int8-a8 (W8A8) in compress's rewrites: the standard file rounds each
// reader's input as the runtime's kernels do (graph::emit_w8a8), stores the
// int8 codes, and tailor's compressed pass recognises the form and runs the
// W8A8 kernels with the definition's bits; onnxruntime agrees.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>

#include "ort/ort_runner.h"
#include "rewrite_util.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/verify.h"
#include "tailor/io/onnx.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/kernels.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor {
namespace {

using namespace rewrite_test;

const OneLayer kMatMul{"MatMul", {3, 80}, {80, 24}, WeightLayout::in_out, {}};
const OneLayer kPointwise{"Conv",
                          {2, 40, 5, 7},
                          {24, 40, 1, 1},
                          WeightLayout::conv,
                          {{"kernel_shape", Attribute::of_ints({1, 1})}},
                          24};
const OneLayer kMatMul3d{"MatMul", {2, 3, 80}, {80, 24}, WeightLayout::in_out, {}};
// 40 rows: CompressedLinear runs them through the W8A8 conv kernel.
const OneLayer kMatMulTall{"MatMul", {1, 40, 120}, {120, 200}, WeightLayout::in_out, {}};
// 1100 inputs: past graph::kW8A8ChunkIn, the file sums two masked chunks.
const OneLayer kMatMulWide{"MatMul", {1, 20, 1100}, {1100, 16}, WeightLayout::in_out, {}};
const OneLayer kGemmA8{
    "Gemm", {5, 80}, {24, 80}, WeightLayout::out_in, {{"transB", Attribute::of_int(1)}}, 24};

/// Y [rows, out] = the W8A8 GEMM reference (q8_q8_gemm_ref) on X [rows, in].
std::vector<float> w8a8_gemm(const EncodedLayer& e, const std::vector<float>& x, int64_t rows) {
  const auto view = schemes::w8a8_view(*e.encoded);
  EXPECT_TRUE(view);
  std::vector<float> y(static_cast<size_t>(rows * e.encoded->out()));
  schemes::kernels::PackedGemmArgs a = view->args;
  a.x = x.data(), a.batch = rows, a.y = y.data();
  schemes::kernels::q8_q8_gemm_ref(a);
  return y;
}

/// Largest |a − b| over the largest |b|.
double max_rel(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  double d = 0, m = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    d = std::max(d, std::abs(double(x[i]) - y[i]));
    m = std::max(m, std::abs(double(y[i])));
  }
  return d / m;
}

/// int8-a8's outputs by definition: the W8A8 GEMM reference on the rows of X
/// (a 1×1 conv's rows are its pixels), then the bias in f32.
Tensor w8a8_by_definition(const OneLayer& layer, const EncodedLayer& e, const Tensor& x) {
  const auto view = schemes::w8a8_view(*e.encoded);
  EXPECT_TRUE(view);
  const int64_t out = e.encoded->out(), in = e.encoded->in();
  std::vector<float> xv = x.to_f32_vector();
  const bool conv = layer.op == "Conv";
  const int64_t n = conv ? x.dim(0) : 1, pix = conv ? x.dim(2) * x.dim(3) : x.numel() / in;
  std::vector<float> rows(static_cast<size_t>(pix * in)), y(static_cast<size_t>(pix * out));
  std::vector<float> result;
  const graph::Model m = layer.model(layer.weight());
  const std::vector<float> bias =
      layer.bias ? m.graph.initializers.at("b").to_f32_vector() : std::vector<float>(out, 0.0f);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t j = 0; j < pix; ++j)
      for (int64_t k = 0; k < in; ++k)
        rows[j * in + k] = conv ? xv[(b * in + k) * pix + j] : xv[j * in + k];
    schemes::kernels::PackedGemmArgs a = view->args;
    a.x = rows.data(), a.batch = pix, a.y = y.data();
    schemes::kernels::q8_q8_gemm_ref(a);
    for (int64_t i = 0; i < pix * out; ++i) {
      const int64_t o = conv ? i / pix : i % out, j = conv ? i % pix : i / out;
      result.push_back(y[j * out + o] + (layer.bias ? bias[o] : 0.0f));
    }
  }
  Shape s = x.shape();
  s[conv ? 1 : s.size() - 1] = out;
  return Tensor::from_f32(s, result);
}

// int8-a8: model.onnx holds int8's codes (no f32 copy), rounds each reader's
// input to integer-valued f32 codes, sums their products exactly in the
// reader and scales after (graph::emit_w8a8); tailor recognises the form and
// runs W8A8 with the definition's bits; the standard graph run op by op and
// onnxruntime compute the same bits.
TEST(CompressRewrite, Int8A8RoundsActivationsInTheFileAndRunsW8A8) {
  testing::TempDir dir;
  int k = 0;
  for (const OneLayer* layer :
       {&kPointwise, &kMatMul, &kMatMul3d, &kMatMulTall, &kGemmA8, &kMatMulWide}) {
    const EncodedLayer e = layer->encode("int8-a8");
    std::vector<compress::LayerRewrite> log;
    const graph::Model std_m = compress::rewrite_standard(layer->model(layer->weight()), {e}, &log);
    EXPECT_EQ(op_counts(std_m)["ReduceMax"], 1) << layer->op;
    EXPECT_EQ(op_counts(std_m)["Neg"], 1) << layer->op;
    EXPECT_EQ(op_counts(std_m)[layer->op], layer == &kMatMulWide ? 2 : 1) << layer->op;
    ASSERT_EQ(log.size(), 1u);
    EXPECT_NE(log[0].form.find("W8A8"), std::string::npos) << log[0].form;
    EXPECT_EQ(log[0].file_bytes, static_cast<int64_t>(e.encoded->bytes())) << layer->op;
    EXPECT_EQ(std_m.graph.initializers.at("W.q").dtype(), DType::i8) << layer->op;
    const graph::Model ours = graph::recognise_compressed_weights(std_m, {});
    ASSERT_EQ(ours.graph.nodes.size(), 1u) << layer->op;
    const graph::Attribute* w = ours.graph.nodes[0].find("weight");
    ASSERT_TRUE(w && w->encoded);
    EXPECT_EQ(w->encoded->label(), "int8-a8");
    const Tensor x = randn(layer->x_shape, 3);
    const Tensor want = w8a8_by_definition(*layer, e, x);
    const Tensor got = run1(ours, x);
    EXPECT_EQ(got.to_f32_vector(), want.to_f32_vector()) << layer->op;
    EXPECT_EQ(run1(std_m, x).to_f32_vector(), want.to_f32_vector()) << layer->op;
    // The rounding shows: weight-only int8 gives other outputs.
    EXPECT_GT(rel_diff(run1(layer->decoded_model(e), x), want), 1e-4) << layer->op;
    if (testing::ort_unavailable().empty()) {
      const std::string path = dir.file("a8_" + std::to_string(k++) + ".onnx");
      graph::write_onnx(std_m, path);
      EXPECT_LT(max_rel(testing::run_ort(path, {{"X", x}}).at("Y"), want), 1e-6) << layer->op;
    }
  }
  // Readers the form cannot take name the weight.
  const OneLayer grouped{
      "Conv",
      {1, 8, 6, 6},
      {4, 4, 3, 3},
      WeightLayout::conv,
      {{"kernel_shape", Attribute::of_ints({3, 3})}, {"group", Attribute::of_int(2)}}};
  std::string why;
  try {
    compress::rewrite_standard(grouped.model(grouped.weight()), {grouped.encode("int8-a8")});
  } catch (const Error& err) {
    why = err.what();
  }
  EXPECT_NE(why.find("W"), std::string::npos) << why;
  EXPECT_NE(why.find("groups 1"), std::string::npos) << why;
}

// The W8A8 k×k definition (registry.h Q8Q8ConvParams) written out: the
// image rounded with one scale s = max|x|/127, one exact integer sum over the
// channels and taps per output, then f32(sum)·(s·scale[o]) + bias.
// Single image; strides, pads, dilations given.
std::vector<float> w8a8_kxk_by_definition(const EncodedLayer& e, const Tensor& x,
                                          const std::vector<float>& bias, int64_t kh, int64_t kw,
                                          std::array<int64_t, 2> stride,
                                          std::array<int64_t, 4> pads, std::array<int64_t, 2> dil,
                                          int64_t& oh, int64_t& ow) {
  const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3), out = e.encoded->out();
  const std::vector<float> xv = x.to_f32_vector();
  const Tensor& q = e.encoded->factor("q");
  const std::vector<float> sc = e.encoded->factor("scale").to_f32_vector();
  oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) / stride[0] + 1;
  ow = (w + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) / stride[1] + 1;
  float m = 0;
  for (float v : xv) m = std::max(m, std::abs(v));
  const float s = m / 127.0f;
  std::vector<int64_t> qx(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    const float t = s == 0 ? 0.0f : std::abs(xv[i]) / s;
    const int64_t r = std::min<int64_t>(127, static_cast<int64_t>(std::floor(t + 0.5f)));
    qx[i] = xv[i] < 0 ? -r : r;
  }
  std::vector<float> y(static_cast<size_t>(out * oh * ow));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t sum = 0;
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t iy = oy * stride[0] - pads[0] + ky * dil[0];
              const int64_t ix = ox * stride[1] - pads[1] + kx * dil[1];
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              sum += qx[(ch * h + iy) * w + ix] *
                     int64_t{q.data<int8_t>()[o * c * kh * kw + (ch * kh + ky) * kw + kx]};
            }
        y[(o * oh + oy) * ow + ox] = static_cast<float>(sum) * (s * sc[static_cast<size_t>(o)]) +
                                     (bias.empty() ? 0.0f : bias[o]);
      }
  return y;
}

// int8-a8 on convs other than 1×1 stride 1 unpadded: the file rounds each
// image with one scale and runs the Conv, its pads, strides and dilations
// kept, on the integer codes (graph::emit_w8a8; int8 codes stored; channels
// in chunks past 1040 products per sum); tailor recognises it and runs the
// W8A8 k×k kernel with the definition's bits, and so does onnxruntime.
TEST(CompressRewrite, Int8A8KxKConvRoundsEachPixel) {
  struct Case {
    int64_t c, h, w, out, kh, kw;
    std::array<int64_t, 2> stride;
    std::array<int64_t, 4> pads;
    std::array<int64_t, 2> dil;
    bool bias;
  };
  const std::vector<Case> cases{
      {12, 9, 11, 7, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {5, 10, 9, 4, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {8, 6, 6, 4, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {6, 12, 13, 5, 5, 5, {1, 2}, {2, 1, 0, 3}, {2, 1}, true},
      {16, 4, 20, 9, 1, 3, {1, 1}, {0, 1, 0, 1}, {1, 1}, false},
      {120, 7, 8, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, true}};  // 1080 products: 2 chunks
  testing::TempDir dir;
  int k = 0;
  for (const Case& cs : cases) {
    std::vector<std::pair<std::string, Attribute>> attrs{
        {"kernel_shape", Attribute::of_ints({cs.kh, cs.kw})},
        {"strides", Attribute::of_ints({cs.stride[0], cs.stride[1]})},
        {"pads", Attribute::of_ints({cs.pads[0], cs.pads[1], cs.pads[2], cs.pads[3]})},
        {"dilations", Attribute::of_ints({cs.dil[0], cs.dil[1]})}};
    const OneLayer layer{
        "Conv", {1, cs.c, cs.h, cs.w}, {cs.out, cs.c, cs.kh, cs.kw}, WeightLayout::conv,
        attrs,  cs.bias ? cs.out : 0};
    const EncodedLayer e = layer.encode("int8-a8");
    std::vector<compress::LayerRewrite> log;
    const graph::Model std_m = compress::rewrite_standard(layer.model(layer.weight()), {e}, &log);
    EXPECT_EQ(op_counts(std_m)["ReduceMax"], 1);
    EXPECT_EQ(op_counts(std_m)["Conv"], cs.c * cs.kh * cs.kw > 1040 ? 2 : 1);
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].file_bytes, static_cast<int64_t>(e.encoded->bytes()));
    EXPECT_EQ(std_m.graph.initializers.at("W.q").dtype(), DType::i8);
    const graph::Model ours = graph::recognise_compressed_weights(std_m, {});
    ASSERT_EQ(ours.graph.nodes.size(), 1u) << k;
    const graph::Attribute* w = ours.graph.nodes[0].find("weight");
    ASSERT_TRUE(w && w->encoded);
    EXPECT_EQ(w->encoded->label(), "int8-a8");
    const Tensor x = randn(layer.x_shape, 3 + k);
    int64_t oh = 0, ow = 0;
    const std::vector<float> bias =
        cs.bias ? std_m.graph.initializers.at("b").to_f32_vector() : std::vector<float>{};
    const std::vector<float> def =
        w8a8_kxk_by_definition(e, x, bias, cs.kh, cs.kw, cs.stride, cs.pads, cs.dil, oh, ow);
    const Tensor expect = Tensor::from_f32({1, cs.out, oh, ow}, def);
    EXPECT_EQ(run1(ours, x).to_f32_vector(), def) << k;
    EXPECT_EQ(run1(std_m, x).to_f32_vector(), def) << k;
    // The rounding shows: weight-only int8 gives other outputs.
    EXPECT_GT(rel_diff(run1(layer.decoded_model(e), x), expect), 1e-4) << k;
    if (testing::ort_unavailable().empty()) {
      const std::string path = dir.file("kxk_" + std::to_string(k) + ".onnx");
      graph::write_onnx(std_m, path);
      EXPECT_LT(max_rel(testing::run_ort(path, {{"X", x}}).at("Y"), expect), 1e-6) << k;
    }
    ++k;
  }
  EXPECT_TRUE(schemes::parse_scheme("int8-a8").applicable({6, 4, 3, 3}));
  EXPECT_TRUE(schemes::parse_scheme("int8-a8").applicable({6, 4, 1, 1}));
}

// A NaN or ±Inf in X leaves its row (a MatMul's row, a 1×1 conv's pixel) or
// image (a k×k conv) without a scale: the kernels make all of its outputs NaN,
// and the file does the same (max |x| + Σ x·0 is NaN there; onnxruntime's
// ReduceMax alone passed over the NaN and wrote finite numbers). Every other
// row or image keeps the outputs it has without the bad value.
TEST(CompressRewrite, Int8A8NonFiniteInputMakesItsRowOrImageNaN) {
  const OneLayer kxk{
      "Conv",
      {2, 6, 5, 5},
      {4, 6, 3, 3},
      WeightLayout::conv,
      {{"kernel_shape", Attribute::of_ints({3, 3})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}},
      4};
  testing::TempDir dir;
  int k = 0;
  for (const OneLayer* layer : {&kMatMul, &kPointwise, &kxk}) {
    const EncodedLayer e = layer->encode("int8-a8");
    const graph::Model std_m = compress::rewrite_standard(layer->model(layer->weight()), {e});
    const graph::Model ours = graph::recognise_compressed_weights(std_m, {});
    ASSERT_EQ(ours.graph.nodes.size(), 1u) << layer->op;
    const Tensor clean = randn(layer->x_shape, 21);
    const std::vector<float> y_clean = run1(ours, clean).to_f32_vector();
    const bool conv = layer->op == "Conv";
    const int64_t in = conv ? layer->x_shape[1] : layer->x_shape.back();
    for (const float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      // X[1, 2, 3, 4] of a conv (image 1, channel 2, pixel (3, 4)); row 1 of a MatMul.
      std::vector<float> xv = clean.to_f32_vector();
      const int64_t at =
          conv ? ((1 * in + 2) * layer->x_shape[2] + 3) * layer->x_shape[3] + 4 : 1 * in + 7;
      xv[at] = bad;
      const Tensor x = Tensor::from_f32(layer->x_shape, xv);
      // The outputs that lose their scale: NaN in `want`.
      std::vector<float> want = y_clean;
      const int64_t out = e.encoded->out();
      const Shape ys = run1(ours, clean).shape();
      for (size_t i = 0; i < want.size(); ++i) {
        const int64_t j = static_cast<int64_t>(i);
        bool lost;
        if (!conv) {
          lost = j / out == 1;
        } else {
          const int64_t pix = ys[2] * ys[3], image = j / (out * pix), pixel = j % pix;
          lost = image == 1 && (layer == &kxk || pixel == 3 * ys[3] + 4);
        }
        if (lost) want[i] = std::numeric_limits<float>::quiet_NaN();
      }
      auto same = [&](const std::vector<float>& got, double tol, const std::string& who) {
        ASSERT_EQ(got.size(), want.size()) << who;
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << who << " at " << i;
          if (!std::isnan(want[i])) {
            ASSERT_LE(std::abs(double(got[i]) - want[i]), tol * (1 + std::abs(want[i])))
                << who << " at " << i;
          }
        }
      };
      const std::string what = layer->op + (std::isnan(bad) ? " NaN" : " Inf");
      same(run1(ours, x).to_f32_vector(), 0, "tailor " + what);
      same(run1(std_m, x).to_f32_vector(), 0, "tailor on the file " + what);
      if (testing::ort_unavailable().empty()) {
        const std::string path = dir.file("bad_" + std::to_string(k++) + ".onnx");
        graph::write_onnx(std_m, path);
        same(testing::run_ort(path, {{"X", x}}).at("Y").to_f32_vector(), 1e-6,
             "onnxruntime " + what);
      }
    }
  }
}

// Two chained int8-a8 1×1 convs (biases, a Relu between) and a MatMul on
// their pixels: every layer's rounding reads the previous layer's output, so a
// last-bit difference anywhere would flip later codes. tailor runs the file
// as three W8A8 nodes with the definition's bits (q8_q8_gemm_ref layer after
// layer), onnxruntime computes the same numbers, and the file holds the
// codes and scales, not an f32 copy of the weights.
TEST(CompressRewrite, Int8A8ChainAgreesWithOnnxRuntime) {
  const int64_t c0 = 40, c1 = 24, c2 = 32, c3 = 20, h = 5, w = 7, pix = h * w;
  graph::Model m;
  m.opset = 9;
  m.source = "test";
  m.graph.inputs = {"X"};
  m.graph.types["X"] = graph::ValueType{DType::f32, graph::sym_shape_of({1, c0, h, w})};
  m.graph.outputs = {"Y"};
  const Tensor w1 = randn({c1, c0, 1, 1}, 11), w2 = randn({c2, c1, 1, 1}, 12),
               w3 = randn({c2, c3}, 13), b1 = randn({c1}, 14), b2 = randn({c2}, 15);
  for (const auto& [name, t] : std::vector<std::pair<std::string, Tensor>>{
           {"W1", w1}, {"W2", w2}, {"W3", w3}, {"b1", b1}, {"b2", b2}})
    m.graph.add_initializer(name, t);
  Tensor shape = Tensor::zeros(DType::i64, {3});
  std::copy_n(std::vector<int64_t>{1, c2, pix}.begin(), 3, shape.mutable_data<int64_t>());
  m.graph.add_initializer("shape", shape);
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out,
                  std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    graph::Node n;
    n.name = op + "_" + out;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attributes = std::move(attrs);
    m.graph.nodes.push_back(std::move(n));
  };
  const std::vector<std::pair<std::string, Attribute>> k1{
      {"kernel_shape", Attribute::of_ints({1, 1})}};
  node("Conv", {"X", "W1", "b1"}, "h1", k1);
  node("Relu", {"h1"}, "r1");
  node("Conv", {"r1", "W2", "b2"}, "h2", k1);
  node("Reshape", {"h2", "shape"}, "flat");
  node("Transpose", {"flat"}, "rows", {{"perm", Attribute::of_ints({0, 2, 1})}});
  node("MatMul", {"rows", "W3"}, "Y");
  auto encode = [](const std::string& name, const Tensor& t, WeightLayout layout) {
    EncodedLayer e;
    e.name = name;
    e.layout = layout;
    e.stored_shape = t.shape();
    const Tensor view = layout == WeightLayout::in_out ? t.transpose(0, 1).contiguous() : t;
    e.encoded = schemes::parse_scheme("int8-a8").encode(view);
    return e;
  };
  const std::vector<EncodedLayer> layers{encode("W1", w1, WeightLayout::conv),
                                         encode("W2", w2, WeightLayout::conv),
                                         encode("W3", w3, WeightLayout::in_out)};
  std::vector<compress::LayerRewrite> log;
  const graph::Model std_m = compress::rewrite_standard(m, layers, &log);

  // The definition, layer after layer on the pixels as rows.
  const Tensor x = randn({1, c0, h, w}, 16);
  const std::vector<float> xv = x.to_f32_vector();
  std::vector<float> rows(static_cast<size_t>(pix * c0));
  for (int64_t p = 0; p < pix; ++p)
    for (int64_t c = 0; c < c0; ++c) rows[p * c0 + c] = xv[c * pix + p];
  std::vector<float> y1 = w8a8_gemm(layers[0], rows, pix);
  const std::vector<float> bv1 = b1.to_f32_vector(), bv2 = b2.to_f32_vector();
  for (int64_t i = 0; i < pix * c1; ++i) y1[i] = std::max(y1[i] + bv1[i % c1], 0.0f);
  std::vector<float> y2 = w8a8_gemm(layers[1], y1, pix);
  for (int64_t i = 0; i < pix * c2; ++i) y2[i] += bv2[i % c2];
  const Tensor want = Tensor::from_f32({1, pix, c3}, w8a8_gemm(layers[2], y2, pix));

  // tailor: three W8A8 nodes, the definition's bits.
  const graph::Model ours = graph::recognise_compressed_weights(std_m, {});
  int a8 = 0;
  for (const auto& n : ours.graph.nodes)
    if (const graph::Attribute* a = n.find("weight"); a && a->encoded)
      a8 += a->encoded->label() == "int8-a8";
  EXPECT_EQ(a8, 3);
  EXPECT_EQ(op_counts(ours)["ReduceMax"], 0);
  EXPECT_EQ(run1(ours, x).to_f32_vector(), want.to_f32_vector());
  EXPECT_EQ(run1(std_m, x).to_f32_vector(), want.to_f32_vector());

  // The file: codes i8 and scales f16 as stored, beside the biases and the
  // form's few small constants (shapes, 127, 0.5, ...).
  ASSERT_EQ(log.size(), 3u);
  int64_t stored = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(log[i].file_bytes, static_cast<int64_t>(layers[i].encoded->bytes()));
    stored += log[i].file_bytes;
  }
  EXPECT_EQ(stored, c1 * c0 + c2 * c1 + c3 * c2 + 2 * (c1 + c2 + c3));
  int64_t held = 0;
  for (const auto& [name, t] : std_m.graph.initializers) held += t.nbytes();
  const int64_t biases = 4 * (c1 + c2), small = 512;
  EXPECT_GE(held, stored + biases);
  EXPECT_LT(held, stored + biases + small);
  testing::TempDir dir;
  const std::string path = dir.file("chain.onnx");
  graph::write_onnx(std_m, path);
  EXPECT_LT(static_cast<int64_t>(std::filesystem::file_size(path)), held + 8192);

  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_LT(max_rel(testing::run_ort(path, {{"X", x}}).at("Y"), want), 1e-4);
}

}  // namespace
}  // namespace tailor
