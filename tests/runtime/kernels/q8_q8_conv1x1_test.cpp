// The W8A8 1×1 conv (q8_q8_conv1x1_ref, _8x16_avx2, _8x16_avx512vnni) on
// shapes that hit every tail: c_in not a multiple of 4, c_out not a multiple
// of the 8-row panel, pixel counts under, at and past the 16-pixel block,
// several images; codes over the whole int8 range (−128 included). Checks:
// (1) the reference against the schemes' W8A8 GEMM reference
// (schemes::kernels::q8_q8_gemm_ref, an independent implementation of the
// same definition) on the transposed image, bit for bit; (2) both optimised
// kernels against the reference bit for bit (exact integer sums, the same f32
// epilogue); (3) a column holding NaN or ∞ gives NaN for its pixel only, a
// zero column gives the bias; (4) values on the codes' rounding boundaries
// give the reference's codes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/kernels/kernel_compare.h"
#include "tailor/core/dtype.h"
#include "tailor/linalg/threads.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct Case {
  int64_t n, c_in, c_out, pixels;
};

const Case kCases[] = {
    {1, 7, 11, 9},     // c_in past a quad, c_out past a panel, under one block
    {2, 12, 13, 16},   // one whole block, two images
    {1, 300, 8, 17},   // one panel, a block and one pixel
    {1, 64, 24, 100},  // several blocks
    {1, 1, 1, 1},      // one of each
    {3, 33, 5, 40},    // three images, tails everywhere
    {2, 20, 9, 301},   // work items of 128 pixels: two whole, one of 45 (a tail block)
    {1, 24, 16, 50},   // the most inputs the VNNI kernel quantizes from registers
};

std::vector<float> run(const KernelTable& t, Q8Q8Conv1x1Fn fn, const Case& c, const Weights& w,
                       const std::vector<float>& x, const float* bias, const Activation& act) {
  std::vector<uint8_t> packed(static_cast<size_t>(t.q8q8_conv1x1_pack(w.args, nullptr)));
  t.q8q8_conv1x1_pack(w.args, packed.data());
  Q8Q8Conv1x1Params p;
  p.n = c.n, p.c_in = c.c_in, p.c_out = c.c_out, p.pixels = c.pixels, p.packed = packed.data();
  std::vector<float> y(static_cast<size_t>(c.n * c.c_out * c.pixels), -7.0f);
  fn(p, x.data(), bias, y.data(), act);
  return y;
}

// The optimised kernels of this CPU: the avx2 table's and, where the CPU has
// it, the VNNI one (the table holds one of the two).
std::vector<std::pair<const char*, Q8Q8Conv1x1Fn>> kernels_here() {
  std::vector<std::pair<const char*, Q8Q8Conv1x1Fn>> k{{"avx2", q8_q8_conv1x1_8x16_avx2}};
  if (cpu_features().avx512vnni && cpu_features().avx512vl)
    k.emplace_back("avx512vnni", q8_q8_conv1x1_8x16_avx512vnni);
  return k;
}

class Q8Q8Conv1x1 : public KernelVsRef {};

TEST_F(Q8Q8Conv1x1, ReferenceIsTheW8A8GemmOnPixelRows) {
  uint64_t seed = 11;
  for (const Case& c : kCases) {
    const Weights w = weights(c.c_out, c.c_in, ++seed);
    const std::vector<float> x = uniform(c.n * c.c_in * c.pixels, ++seed, -3.0, 2.0);
    const std::vector<float> y =
        run(ref(), ref().q8q8_conv1x1, c, w, x, nullptr, Activation::none());
    for (int64_t b = 0; b < c.n; ++b) {
      std::vector<float> rows(static_cast<size_t>(c.pixels * c.c_in));
      std::vector<float> g(static_cast<size_t>(c.pixels * c.c_out));
      for (int64_t k = 0; k < c.c_in; ++k)
        for (int64_t j = 0; j < c.pixels; ++j)
          rows[j * c.c_in + k] = x[(b * c.c_in + k) * c.pixels + j];
      schemes::kernels::PackedGemmArgs a = w.args;
      a.x = rows.data(), a.batch = c.pixels, a.y = g.data();
      schemes::kernels::q8_q8_gemm_ref(a);
      for (int64_t o = 0; o < c.c_out; ++o)
        for (int64_t j = 0; j < c.pixels; ++j)
          ASSERT_EQ(y[(b * c.c_out + o) * c.pixels + j], g[j * c.c_out + o])
              << "case c_in " << c.c_in << " image " << b << " o " << o << " pixel " << j;
    }
  }
}

TEST_F(Q8Q8Conv1x1, OptimisedKernelsGiveTheReferenceBits) {
  uint64_t seed = 101;
  for (const Case& c : kCases)
    for (const Activation& act : {Activation::none(), Activation::relu()})
      for (bool with_bias : {false, true}) {
        const Weights w = weights(c.c_out, c.c_in, ++seed);
        const std::vector<float> x = uniform(c.n * c.c_in * c.pixels, ++seed, -2.0, 3.0);
        const std::vector<float> bias = uniform(c.c_out, ++seed);
        const float* b = with_bias ? bias.data() : nullptr;
        const std::vector<float> want = run(ref(), ref().q8q8_conv1x1, c, w, x, b, act);
        for (const auto& [name, fn] : kernels_here())
          expect_same(run(opt(), fn, c, w, x, b, act), want,
                      std::string(name) + " c_in " + std::to_string(c.c_in) + " c_out " +
                          std::to_string(c.c_out) + " pixels " + std::to_string(c.pixels));
      }
}

// Work items are fixed by the shape, so 1 and 2 threads give the same bits
// (a product large enough to run on threads: 2·48·40·1000 multiply-adds).
TEST_F(Q8Q8Conv1x1, SameBitsAtOneAndTwoThreads) {
  const Case c{2, 48, 40, 1000};
  const Weights w = weights(c.c_out, c.c_in, 21);
  const std::vector<float> x = uniform(c.n * c.c_in * c.pixels, 22, -2.0, 3.0);
  const std::vector<float> bias = uniform(c.c_out, 23);
  const int before = linalg::threads();
  for (const auto& [name, fn] : kernels_here()) {
    linalg::set_threads(1);
    const std::vector<float> y1 = run(opt(), fn, c, w, x, bias.data(), Activation::relu());
    linalg::set_threads(2);
    const std::vector<float> y2 = run(opt(), fn, c, w, x, bias.data(), Activation::relu());
    EXPECT_EQ(y1, y2) << name;
  }
  linalg::set_threads(before);
}

// Values on and next to the rounding boundaries, column by column (pixel j
// by j mod 5): largest magnitude 127 (scale exactly 1) or 63.5 (scale 0.5)
// with the rest multiples of 0.25 (x/s on half-integers, rounded away from
// zero) or one ulp beside them; an odd largest magnitude with the rest
// half-integer multiples of the column's scale (x/s within rounding of a
// half-integer); tiny (a subnormal scale) and tinier (scale 0). The VNNI
// kernel's division-free codes must fall back to the reference's operations
// there.
TEST_F(Q8Q8Conv1x1, CodesOnRoundingBoundariesAreTheReferences) {
  // 13 and 29 inputs: the VNNI kernel holds up to 24 in registers, more in a copy.
  for (const Case& c : {Case{1, 13, 10, 70}, Case{1, 29, 10, 70}}) {
    const Weights w = weights(c.c_out, c.c_in, 51);
    Rng rng(52);
    std::vector<float> x(static_cast<size_t>(c.c_in * c.pixels));
    for (int64_t j = 0; j < c.pixels; ++j) {
      const int64_t kind = j % 5;
      const float top = kind == 0   ? 127.0f
                        : kind == 1 ? 63.5f
                        : kind == 2 ? static_cast<float>(rng.uniform(0.01, 50.0))
                        : kind == 3 ? 3e-38f
                                    : 1e-44f;
      const float s = top / 127.0f;
      for (int64_t k = 0; k < c.c_in; ++k) {
        float v;
        if (kind <= 1)
          v = static_cast<float>(std::floor(rng.uniform(-4 * top, 4 * top + 1))) / 4;
        else if (kind == 2)
          v = static_cast<float>(std::floor(rng.uniform(-254, 255))) / 2 * s;
        else
          v = static_cast<float>(rng.uniform(-1, 1)) * top;
        if (kind <= 2 && rng.uniform(0, 1) < 0.3)
          v = std::nextafter(v, rng.uniform(0, 1) < 0.5 ? -1e9f : 1e9f);
        x[k * c.pixels + j] = std::clamp(v, -top, top);
      }
      x[(j % c.c_in) * c.pixels + j] = j % 2 ? top : -top;
    }
    const std::vector<float> bias = uniform(c.c_out, 53);
    const std::vector<float> want =
        run(ref(), ref().q8q8_conv1x1, c, w, x, bias.data(), Activation::none());
    for (const auto& [name, fn] : kernels_here())
      expect_same(run(opt(), fn, c, w, x, bias.data(), Activation::none()), want,
                  std::string(name) + " c_in " + std::to_string(c.c_in));
  }
}

TEST_F(Q8Q8Conv1x1, NonFiniteColumnGivesNaNForItsPixelOnly) {
  const Case c{1, 9, 10, 20};
  const Weights w = weights(c.c_out, c.c_in, 5);
  std::vector<float> x = uniform(c.c_in * c.pixels, 6);
  for (int64_t k = 0; k < c.c_in; ++k) x[k * c.pixels + 7] = 0.0f;  // a zero column
  x[4 * c.pixels + 3] = std::numeric_limits<float>::quiet_NaN();
  x[2 * c.pixels + 18] = std::numeric_limits<float>::infinity();
  const std::vector<float> bias = uniform(c.c_out, 7);
  std::vector<std::pair<const char*, Q8Q8Conv1x1Fn>> all{{"ref", ref().q8q8_conv1x1}};
  for (const auto& k : kernels_here()) all.push_back(k);
  for (const auto& [name, fn] : all) {
    const KernelTable& t = std::string(name) == "ref" ? ref() : opt();
    const std::vector<float> y = run(t, fn, c, w, x, bias.data(), Activation::none());
    for (int64_t o = 0; o < c.c_out; ++o)
      for (int64_t j = 0; j < c.pixels; ++j) {
        const float v = y[o * c.pixels + j];
        if (j == 3 || j == 18)
          EXPECT_TRUE(std::isnan(v)) << name << " o " << o << " pixel " << j;
        else if (j == 7)
          EXPECT_EQ(v, bias[o]) << name << " o " << o;
        else
          EXPECT_TRUE(std::isfinite(v)) << name << " o " << o << " pixel " << j;
      }
  }
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
