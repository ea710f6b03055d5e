// CompressedLinear / CompressedConv against the dense op (Gemm / Conv) run on
// the scheme's decoded weight, for several schemes.
#include <gtest/gtest.h>

#include <cmath>

#include "op_test_util.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/kernels/registry.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

using graph::Attribute;

Tensor randn(Shape s, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_f32(std::move(s), v);
}

void expect_close_rel(const Tensor& a, const Tensor& b, double rel, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  double err = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(x[i]) - y[i]));
    scale = std::max(scale, std::abs(static_cast<double>(y[i])));
  }
  EXPECT_LE(err, rel * scale) << what << ": max abs diff " << err << " of max " << scale;
}

// The op's output at 1 thread, after checking that 2 threads give the same bits.
Tensor run_at_one_and_two_threads(const OneOp& op, const std::string& what) {
  const int before = linalg::threads();
  linalg::set_threads(1);
  const Tensor y1 = op.run1();
  linalg::set_threads(2);
  const Tensor y2 = op.run1();
  linalg::set_threads(before);
  EXPECT_EQ(y1.to_f32_vector(), y2.to_f32_vector()) << what;
  return y1;
}

// Bytes of an arena block of `floats` floats (64-byte aligned).
size_t arena_block(int64_t floats) {
  return static_cast<size_t>((floats * 4 + 63) / 64 * 64);
}

TEST(OpsCompressed, LinearEqualsGemmOnTheDecodedWeight) {
  const int64_t out = 24, in = 64;
  const Tensor w = randn({out, in}, 1);
  const Tensor x = randn({2, 3, in}, 2);
  const Tensor bias = randn({out}, 3);
  for (const char* label : {"int8", "int4-g32", "ternary", "sparse-2:4", "lowrank-r4", "tt"}) {
    std::shared_ptr<const schemes::Encoded> e = schemes::parse_scheme(label).encode(w);
    const Tensor y =
        OneOp{"CompressedLinear", {x, bias}, {{"weight", Attribute::of_encoded(e)}}, 13, 1,
              "ai.tailor"}
            .run1();
    const Tensor dense =
        OneOp{"Gemm", {x.reshape({6, in}), e->decode(), bias}, {{"transB", Attribute::of_int(1)}}}
            .run1();
    expect_close_rel(y, dense.reshape({2, 3, out}), 1e-5, label);
  }
}

TEST(OpsCompressed, ConvEqualsConvOnTheDecodedWeight) {
  const Tensor w = randn({8, 4, 3, 3}, 4);
  const Tensor x = randn({2, 4, 7, 9}, 5);
  const Tensor bias = randn({8}, 6);
  const std::vector<std::pair<std::string, Attribute>> attrs = {
      {"kernel_shape", Attribute::of_ints({3, 3})},
      {"strides", Attribute::of_ints({2, 1})},
      {"pads", Attribute::of_ints({1, 0, 1, 2})},
      {"dilations", Attribute::of_ints({1, 2})}};
  for (const char* label : {"int8", "int4", "lowrank-r3", "tucker", "sparse-2:4"}) {
    std::shared_ptr<const schemes::Encoded> e = schemes::parse_scheme(label).encode(w);
    auto with_weight = attrs;
    with_weight.emplace_back("weight", Attribute::of_encoded(e));
    const Tensor y = OneOp{"CompressedConv", {x, bias}, with_weight, 13, 1, "ai.tailor"}.run1();
    const Tensor dense = OneOp{"Conv", {x, e->decode().reshape({8, 4, 3, 3}), bias}, attrs}.run1();
    // Output: (7 + 2 − 2 − 1)/2 + 1 = 4 rows, (9 + 2 − 4 − 1)/1 + 1 = 7 columns.
    EXPECT_EQ(y.shape(), (Shape{2, 8, 4, 7}));
    expect_close_rel(y, dense, 1e-5, label);
  }
}

// The packed-code kernel's in-place 1×1 path (int8, int4-g32, ternary; the
// other schemes keep im2row) and the fused activation attribute the fusion
// pass sets: equal to Conv on the decoded weight followed by the activation op.
TEST(OpsCompressed, PointwiseConvWithFusedActivationEqualsConvThenActivation) {
  const Tensor w = randn({13, 20, 1, 1}, 8);
  const Tensor x = randn({2, 20, 5, 7}, 9);
  const Tensor bias = randn({13}, 10);
  const std::vector<std::pair<std::string, Attribute>> attrs = {
      {"kernel_shape", Attribute::of_ints({1, 1})}};
  for (const char* label : {"int8", "int4-g32", "ternary", "lowrank-r3"})
    for (const char* act : {"relu", "hard_swish"}) {
      std::shared_ptr<const schemes::Encoded> e =
          schemes::parse_scheme(label).encode(w.reshape({13, 20}));
      auto fused = attrs;
      fused.emplace_back("weight", Attribute::of_encoded(e));
      // As the fusion pass writes them (graph/fused_ops.h): HardSwish's α = 1/6, β = 0.5.
      fused.emplace_back("activation", Attribute::of_string(act));
      fused.emplace_back("alpha", Attribute::of_float(1.f / 6.f));
      fused.emplace_back("beta", Attribute::of_float(0.5f));
      const Tensor y = OneOp{"CompressedConv", {x, bias}, fused, 13, 1, "ai.tailor"}.run1();
      const Tensor conv =
          OneOp{"Conv", {x, e->decode().reshape({13, 20, 1, 1}), bias}, attrs}.run1();
      const Tensor dense =
          OneOp{std::string(act) == "relu" ? "Relu" : "HardSwish", {conv}, {}, 14}.run1();
      EXPECT_EQ(y.shape(), (Shape{2, 13, 5, 7}));
      expect_close_rel(y, dense, 1e-5, std::string(label) + " " + act);
    }
}

// Packed codes of a 1×1 stride-1 unpadded conv run as the dense Conv runs
// the decoded weight (the table's conv1x1 kernel from 16 pixels on, the
// gemm path under): the dense op's bits on Ŵ, and on the conv1x1 kernel
// qb_conv's bits too on this shape (both sum each output's products in
// ascending order with FMA; OpenBLAS's order is its own; on some convs of
// the detector's and recogniser's files the two differ by rounding), with the fused
// activation, at 1 and 2 threads; Ŵ decoded into a scratch block of the
// run's arena beside the output.
TEST(OpsCompressed, PointwiseConvOnPackedCodesIsTheDenseConvOnTheDecodedWeight) {
  namespace k = runtime::kernels;
  const int64_t c_in = 40, c_out = 27;
  const Tensor w = randn({c_out, c_in, 1, 1}, 14);
  const Tensor bias = randn({c_out}, 15);
  const std::vector<std::pair<std::string, Attribute>> attrs = {
      {"kernel_shape", Attribute::of_ints({1, 1})}};
  for (const char* label : {"int8", "int4-g32", "int3"})
    for (const int64_t side : {int64_t{3}, int64_t{13}}) {
      const std::string what = std::string(label) + " " + std::to_string(side);
      const Tensor x = randn({2, c_in, side, side + 2}, 16);
      std::shared_ptr<const schemes::Encoded> e =
          schemes::parse_scheme(label).encode(w.reshape({c_out, c_in}));
      auto fused = attrs;
      fused.emplace_back("weight", Attribute::of_encoded(e));
      fused.emplace_back("activation", Attribute::of_string("relu"));
      const OneOp op{"CompressedConv", {x, bias}, fused, 13, 1, "ai.tailor"};
      const Tensor y1 = run_at_one_and_two_threads(op, what);
      auto dense_attrs = attrs;
      dense_attrs.emplace_back("activation", Attribute::of_string("relu"));
      const Tensor dense = OneOp{"FusedConv", {x, e->decode().reshape({c_out, c_in, 1, 1}), bias},
                                 dense_attrs, 13,
                                 1,           "ai.tailor"}
                               .run1();
      EXPECT_EQ(y1.to_f32_vector(), dense.to_f32_vector()) << what;
      k::QbConvParams q;
      q.w = schemes::packed_view(*e)->args;
      q.bits = schemes::packed_view(*e)->bits;
      q.conv.n = 2, q.conv.c_in = c_in, q.conv.h = side, q.conv.w = side + 2;
      q.conv.c_out = c_out;
      std::vector<float> qb(static_cast<size_t>(y1.numel()));
      const std::vector<float> xv = x.to_f32_vector(), bv = bias.to_f32_vector();
      k::qb_f32_conv_6x16_avx2(q, xv.data(), bv.data(), qb.data(), k::Activation::relu());
      if (side > 3) {
        EXPECT_EQ(y1.to_f32_vector(), qb) << what << " against qb_conv";
      }
      runtime::Executor ex(op.model());
      ex.run({{"x0", x}, {"x1", bias}});
      EXPECT_EQ(ex.peak_activation_bytes(), arena_block(y1.numel()) + arena_block(c_out * c_in))
          << what;
    }
}

// Packed codes of a 3×3 stride-1 conv whose output plane is at least the
// table's winograd_min_plane a side (16, or 8 with the AVX-512 products) run
// Winograd F(4×4, 3×3) on Ŵ transformed per call: the Winograd kernel's bits
// on the decoded weight, within its bound of the direct conv (f32_conv_ref),
// at 1 and 2 threads alike; the transformed and decoded weights are a scratch
// block of the run's arena, live beside the output (the op holds only the
// codes). A 6×9 output keeps the codes' direct kernel (the output alone).
TEST(OpsCompressed, Conv3x3OnPackedCodesRunsWinogradOnTheDecodedWeight) {
  namespace k = runtime::kernels;
  const int64_t c_in = 12, c_out = 10;
  const Tensor w = randn({c_out, c_in, 3, 3}, 11);
  const Tensor bias = randn({c_out}, 12);
  const std::vector<std::pair<std::string, Attribute>> attrs = {
      {"kernel_shape", Attribute::of_ints({3, 3})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}};
  for (const char* label : {"int8", "int4-g32", "int4"})
    for (const int64_t side : {int64_t{19}, int64_t{6}}) {
      const std::string what = std::string(label) + " " + std::to_string(side);
      const Tensor x = randn({2, c_in, side, side + 3}, 13);
      std::shared_ptr<const schemes::Encoded> e =
          schemes::parse_scheme(label).encode(w.reshape({c_out, c_in * 9}));
      auto with_weight = attrs;
      with_weight.emplace_back("weight", Attribute::of_encoded(e));
      const OneOp op{"CompressedConv", {x, bias}, with_weight, 13, 1, "ai.tailor"};
      const Tensor y1 = run_at_one_and_two_threads(op, what);
      runtime::Executor ex(op.model());
      ex.run({{"x0", x}, {"x1", bias}});

      k::Conv2dParams p;
      p.n = 2, p.c_in = c_in, p.h = side, p.w = side + 3, p.c_out = c_out, p.kh = p.kw = 3;
      p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
      const std::vector<float> wd = e->decode().to_f32_vector(), xv = x.to_f32_vector(),
                               bv = bias.to_f32_vector();
      std::vector<float> direct(static_cast<size_t>(2 * c_out * p.out_h() * p.out_w()));
      k::f32_conv_ref(p, xv.data(), wd.data(), bv.data(), direct.data(), {});
      expect_close_rel(y1, Tensor::from_f32(y1.shape(), direct), 1e-4, what);
      if (side < k::active_kernels().winograd_min_plane) {
        EXPECT_EQ(ex.peak_activation_bytes(), arena_block(y1.numel())) << what;
        continue;
      }
      std::vector<float> u(
          static_cast<size_t>(k::f32_conv_winograd_f43_pack(p, wd.data(), nullptr)));
      k::f32_conv_winograd_f43_pack(p, wd.data(), u.data());
      std::vector<float> wino(direct.size());
      k::active_kernels().conv_winograd(p, xv.data(), u.data(), bv.data(), wino.data(), {});
      EXPECT_EQ(y1.to_f32_vector(), wino) << what;
      EXPECT_EQ(
          ex.peak_activation_bytes(),
          arena_block(y1.numel()) + arena_block(static_cast<int64_t>(u.size()) + c_out * c_in * 9))
          << what;
    }
}

// kernel_variant "w8a8" (the tuner's decision for compressed layers): an
// int8 weight-only weight runs the W8A8 kernels of int8-a8, which encodes the
// same codes and scales from the same dense weight, so the outputs are
// int8-a8's bit for bit: a 1×1 conv (q8q8_conv1x1), a padded strided 3×3
// (q8q8_conv), a linear of 32 rows (the conv1x1 kernel) and of 3 (the
// scheme's W8A8 GEMM). Without the attribute the int8 weight keeps its own
// kernel, whose outputs differ (the activations unrounded).
TEST(OpsCompressed, W8A8VariantOfAnInt8WeightIsTheInt8A8Kernel) {
  struct Case {
    std::string op;
    Shape w_shape, x_shape;
    std::vector<std::pair<std::string, Attribute>> attrs;
  };
  const std::vector<Case> cases = {{"CompressedConv",
                                    {16, 24, 1, 1},
                                    {1, 24, 9, 11},
                                    {{"kernel_shape", Attribute::of_ints({1, 1})}}},
                                   {"CompressedConv",
                                    {12, 8, 3, 3},
                                    {2, 8, 10, 7},
                                    {{"kernel_shape", Attribute::of_ints({3, 3})},
                                     {"strides", Attribute::of_ints({2, 1})},
                                     {"pads", Attribute::of_ints({1, 1, 0, 1})}}},
                                   {"CompressedLinear", {20, 40}, {32, 40}, {}},
                                   {"CompressedLinear", {20, 40}, {3, 40}, {}}};
  uint64_t seed = 30;
  for (const Case& c : cases) {
    const std::string what = c.op + " x " + shape_to_string(c.x_shape);
    const Tensor w = randn(c.w_shape, seed++);
    const Tensor x = randn(c.x_shape, seed++);
    const Tensor bias = randn({c.w_shape[0]}, seed++);
    const Tensor w2 = w.reshape({c.w_shape[0], shape_numel(c.w_shape) / c.w_shape[0]});
    std::shared_ptr<const schemes::Encoded> q8 = schemes::parse_scheme("int8").encode(w2);
    std::shared_ptr<const schemes::Encoded> a8 = schemes::parse_scheme("int8-a8").encode(w2);
    ASSERT_EQ(q8->factor("q").to_f32_vector(), a8->factor("q").to_f32_vector()) << what;
    ASSERT_EQ(q8->factor("scale").to_f32_vector(), a8->factor("scale").to_f32_vector()) << what;
    auto run = [&](std::shared_ptr<const schemes::Encoded> e, const char* variant) {
      auto attrs = c.attrs;
      attrs.emplace_back("weight", Attribute::of_encoded(std::move(e)));
      if (variant) attrs.emplace_back("kernel_variant", Attribute::of_string(variant));
      return OneOp{c.op, {x, bias}, attrs, 13, 1, "ai.tailor"}.run1();
    };
    const Tensor variant = run(q8, "w8a8");
    const Tensor int8_a8 = run(a8, nullptr);
    const Tensor weight_only = run(q8, nullptr);
    EXPECT_EQ(variant.to_f32_vector(), int8_a8.to_f32_vector()) << what;
    EXPECT_EQ(run(a8, "auto").to_f32_vector(), int8_a8.to_f32_vector()) << what;
    EXPECT_NE(weight_only.to_f32_vector(), int8_a8.to_f32_vector()) << what;
  }
}

TEST(OpsCompressed, W8A8VariantNeedsPerChannelInt8Codes) {
  const Tensor w = randn({8, 64}, 40);
  const Tensor x = randn({4, 64}, 41);
  auto load = [&](const char* label, const char* variant) {
    std::shared_ptr<const schemes::Encoded> e = schemes::parse_scheme(label).encode(w);
    OneOp op{
        "CompressedLinear",
        {x},
        {{"weight", Attribute::of_encoded(e)}, {"kernel_variant", Attribute::of_string(variant)}},
        13,
        1,
        "ai.tailor"};
    runtime::Executor ex(op.model());
  };
  for (const char* label : {"int4", "int4-g32", "q8_0", "lowrank-r4"})
    expect_error_naming([&] { load(label, "w8a8"); }, "CompressedLinear", "per-channel int8 codes");
  expect_error_naming([&] { load("int8", "fast"); }, "CompressedLinear", "kernel_variant");
  EXPECT_NO_THROW(load("int8-mse", "w8a8"));
}

TEST(OpsCompressed, WithoutAWeightIsALoadTimeError) {
  OneOp op{"CompressedLinear", {randn({2, 4}, 7)}, {}, 13, 1, "ai.tailor"};
  expect_error_naming([&] { runtime::Executor ex(op.model()); }, "CompressedLinear", "weight");
}

}  // namespace
}  // namespace tailor::testing
