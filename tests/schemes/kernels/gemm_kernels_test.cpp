// Every AVX2 kernel against its scalar reference (XNNPACK habit: tests mirror
// kernels one to one), on random codes over shapes that start rows and groups
// at every bit offset: odd `in`, `in` below the group, short last groups, and
// batches on both sides of the fused/panel split.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <utility>
#include <vector>

#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/schemes/kernels.h"

namespace tailor::schemes::kernels {
namespace {

struct Case {
  int64_t out, in, group;  // group 0: per channel (= in)
};

const std::vector<Case> kCases{{7, 13, 0},    {5, 129, 32},   {9, 64, 64},  {3, 200, 128},
                               {4, 7, 32},    {6, 1, 0},      {11, 40, 32}, {2, 31, 0},
                               {300, 260, 0}, {260, 300, 64}, {9, 257, 0},  {7, 263, 128},
                               {6, 200, 32},  {3, 64, 32}};
const std::vector<int64_t> kBatches{1, 2, 4, 5, 9, 16};

std::vector<float> normals(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

double gap(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

class GemmKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!isa_available(Isa::avx2)) GTEST_SKIP() << "AVX2/FMA/F16C kernels not available here";
  }
};

TEST_F(GemmKernels, PackedAvx2MatchesReference) {
  const auto& ref = gemm_kernels(Isa::ref);
  const auto& fast = gemm_kernels(Isa::avx2);
  Rng rng(77);
  for (int bits : {8, 4, 3, 2})
    for (const Case& c : kCases)
      for (int64_t batch : kBatches) {
        SCOPED_TRACE(::testing::Message() << bits << "-bit " << c.out << "x" << c.in << " group "
                                          << c.group << " batch " << batch);
        const int64_t group = c.group == 0 ? c.in : c.group;
        const int64_t groups = (c.in + group - 1) / group;
        std::vector<uint8_t> codes((static_cast<uint64_t>(c.out * c.in) * bits + 7) / 8);
        for (uint8_t& b : codes) b = static_cast<uint8_t>(rng.next_u64());
        std::vector<uint16_t> scales(static_cast<size_t>(c.out * groups));
        for (uint16_t& s : scales) s = f32_to_f16(static_cast<float>(0.01 + rng.uniform(0, 1)));
        const std::vector<float> x = normals(batch * c.in, rng);
        std::vector<float> want(static_cast<size_t>(batch * c.out), -1.0f), got = want;
        PackedGemmArgs a{codes.data(), codes.size(), scales.data(), c.out,      c.in,
                         group,        x.data(),     batch,         want.data()};
        ref.packed(bits)(a);
        a.y = got.data();
        fast.packed(bits)(a);
        EXPECT_LT(gap(got, want), 1e-5);
      }
}

// The panel decoders: every version gives q·f16(scale) rounded once, so the
// AVX2 rows equal the reference bit for bit, for any start row and count;
// the reference itself is checked against the definition on a few codes.
TEST_F(GemmKernels, DecodeAvx2EqualsReference) {
  const auto& ref = gemm_kernels(Isa::ref);
  const auto& fast = gemm_kernels(Isa::avx2);
  Rng rng(78);
  for (int bits : {8, 4, 3, 2})
    for (const Case& c : kCases) {
      SCOPED_TRACE(::testing::Message()
                   << bits << "-bit " << c.out << "x" << c.in << " group " << c.group);
      const int64_t group = c.group == 0 ? c.in : c.group;
      const int64_t groups = (c.in + group - 1) / group;
      std::vector<uint8_t> codes((static_cast<uint64_t>(c.out * c.in) * bits + 7) / 8);
      for (uint8_t& b : codes) b = static_cast<uint8_t>(rng.next_u64());
      std::vector<uint16_t> scales(static_cast<size_t>(c.out * groups));
      for (uint16_t& s : scales) s = f32_to_f16(static_cast<float>(0.01 + rng.uniform(0, 1)));
      PackedGemmArgs a{codes.data(), codes.size(), scales.data(), c.out, c.in, group};
      const int64_t o0 = c.out / 3, rows = c.out - o0;
      std::vector<float> want(static_cast<size_t>(rows * c.in), -1.f), got = want;
      ref.decode(bits)(a, o0, rows, want.data());
      fast.decode(bits)(a, o0, rows, got.data());
      EXPECT_EQ(got, want);
      // Definition: code i = bits [i·bits, (i+1)·bits) of the stream, two's complement.
      for (int64_t j : {int64_t{0}, c.in - 1}) {
        const uint64_t i = static_cast<uint64_t>(o0 * c.in + j) * bits;
        int32_t q = 0;
        for (int t = 0; t < bits; ++t) q |= ((codes[(i + t) / 8] >> ((i + t) % 8)) & 1) << t;
        if (q >= (1 << (bits - 1))) q -= 1 << bits;
        EXPECT_EQ(want[static_cast<size_t>(j)],
                  static_cast<float>(q) *
                      f16_to_f32(scales[static_cast<size_t>(o0 * groups + j / group)]));
      }
    }
  EXPECT_THROW(ref.decode(5), Error);
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
bool avx512_here() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl;
}

// The batch-1 GEMV kernels for `bits` that take `a` on this CPU, by name.
std::vector<std::pair<const char*, PackedGemmFn>> gemv_kernels(int bits, const PackedGemmArgs& a) {
  std::vector<std::pair<const char*, PackedGemmFn>> k;
  if (bits == 8) {
    k.emplace_back("q8_f32_gemv_avx2", q8_f32_gemv_avx2);
    if (avx512_here()) k.emplace_back("q8_f32_gemv_avx512", q8_f32_gemv_avx512);
  } else {
    if (q4_gemv_supported(a)) k.emplace_back("q4_f32_gemv_avx2", q4_f32_gemv_avx2);
    if (avx512_here() && q4_gemv_avx512_supported(a))
      k.emplace_back("q4_f32_gemv_avx512", q4_f32_gemv_avx512);
  }
  return k;
}

// Batch-1 GEMV kernels (AVX2 and, where the CPU has it, AVX-512) against the
// exact product (double over the same codes and f16 scales). Each output is a
// sum of `in` products plus one scale multiply per group, so f32 in any order
// is within γ = (in + 2)·u/(1 − (in + 2)·u) · Σ_j |s·q_j·x_j| of it (Higham,
// Accuracy and Stability, §3.1; u = 2^-24); the reference is held to the same
// bound. Shapes: rows not a multiple of the 4-row pass nor of a thread's
// task, `in` off the 16-, 32-, 64- and 128-input steps (odd for int8), groups
// of 7…256 with a short last one; a NaN in x makes every output NaN.
TEST_F(GemmKernels, GemvWithinF32RoundingOfTheExactProduct) {
  struct GemvCase {
    int bits;
    int64_t out, in, group;  // group 0: per channel
    int kernels;             // how many kernels take it where AVX-512 is present
  };
  const std::vector<GemvCase> cases{
      {8, 1, 1, 0, 2},      {8, 5, 13, 0, 2},     {8, 7, 33, 0, 2},     {8, 130, 1001, 0, 2},
      {8, 67, 262, 32, 2},  {8, 9, 200, 7, 2},    {8, 3, 4098, 128, 2}, {8, 6, 79, 64, 2},
      {4, 1, 2, 0, 2},      {4, 5, 14, 0, 2},     {4, 7, 46, 0, 2},     {4, 130, 1000, 0, 2},
      {4, 67, 262, 32, 2},  {4, 9, 200, 16, 2},   {4, 6, 208, 48, 1},   {4, 3, 4098, 128, 2},
      {4, 69, 4096, 32, 2}, {4, 70, 390, 64, 2},  {4, 9, 520, 256, 2},  {4, 5, 128, 0, 2},
      {4, 11, 256, 16, 2},  {4, 13, 300, 384, 2}, {4, 5, 96, 32, 2}};
  Rng rng(80);
  for (const GemvCase& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.bits << "-bit " << c.out << "x" << c.in << " group " << c.group);
    const int64_t group = c.group == 0 ? c.in : c.group;
    const int64_t groups = (c.in + group - 1) / group;
    std::vector<uint8_t> codes((static_cast<uint64_t>(c.out * c.in) * c.bits + 7) / 8);
    for (uint8_t& b : codes) b = static_cast<uint8_t>(rng.next_u64());
    std::vector<uint16_t> scales(static_cast<size_t>(c.out * groups));
    for (uint16_t& s : scales) s = f32_to_f16(static_cast<float>(0.01 + rng.uniform(0, 1)));
    std::vector<float> x = normals(c.in, rng);
    auto code = [&](int64_t i) -> int {
      if (c.bits == 8) return static_cast<int8_t>(codes[static_cast<size_t>(i)]);
      const int nib = (codes[static_cast<size_t>(i / 2)] >> (4 * (i % 2))) & 0xF;
      return nib >= 8 ? nib - 16 : nib;
    };
    std::vector<float> want(static_cast<size_t>(c.out), -1.0f);
    PackedGemmArgs a{codes.data(), codes.size(), scales.data(), c.out, c.in, group, x.data(), 1,
                     want.data()};
    gemm_kernels(Isa::ref).packed(c.bits)(a);
    const auto kernels = gemv_kernels(c.bits, a);
    EXPECT_EQ(kernels.size(), avx512_here() ? size_t(c.kernels) : size_t{1});
    const double nu = static_cast<double>(c.in + 2) * 0x1p-24;
    for (const auto& [name, fn] : kernels) {
      SCOPED_TRACE(name);
      std::vector<float> got(static_cast<size_t>(c.out), -1.0f);
      a.y = got.data();
      fn(a);
      for (int64_t o = 0; o < c.out; ++o) {
        double exact = 0, magnitude = 0;
        for (int64_t j = 0; j < c.in; ++j) {
          const double t =
              static_cast<double>(f16_to_f32(scales[static_cast<size_t>(o * groups + j / group)])) *
              code(o * c.in + j) * x[static_cast<size_t>(j)];
          exact += t;
          magnitude += std::abs(t);
        }
        const double bound = nu / (1 - nu) * magnitude;
        EXPECT_LE(std::abs(got[static_cast<size_t>(o)] - exact), bound) << "row " << o;
        EXPECT_LE(std::abs(want[static_cast<size_t>(o)] - exact), bound) << "row " << o;
      }
      const float keep = x[static_cast<size_t>(c.in / 2)];
      x[static_cast<size_t>(c.in / 2)] = std::nanf("");
      fn(a);
      x[static_cast<size_t>(c.in / 2)] = keep;
      for (float y : got) EXPECT_TRUE(std::isnan(y));
    }
  }
  // Batches other than 1, and int4 shapes the nibble layouts cannot take, are refused.
  std::vector<uint8_t> codes(64);
  std::vector<uint16_t> scales(8, f32_to_f16(1.0f));
  std::vector<float> x(64), y(8);
  PackedGemmArgs a{codes.data(), codes.size(), scales.data(), 2, 15, 15, x.data(), 2, y.data()};
  EXPECT_THROW(q8_f32_gemv_avx2(a), Error);
  if (avx512_here()) {
    EXPECT_THROW(q8_f32_gemv_avx512(a), Error);
  }
  a.batch = 1;
  EXPECT_FALSE(q4_gemv_supported(a));  // odd in
  EXPECT_FALSE(q4_gemv_avx512_supported(a));
  EXPECT_THROW(q4_f32_gemv_avx2(a), Error);
  if (avx512_here()) {
    EXPECT_THROW(q4_f32_gemv_avx512(a), Error);
  }
  a.in = 40;
  a.group = 20;
  EXPECT_FALSE(q4_gemv_supported(a));  // groups off the 16-input blocks
  EXPECT_THROW(q4_f32_gemv_avx2(a), Error);
  a.in = 96;
  a.group = 48;
  EXPECT_TRUE(q4_gemv_supported(a));
  EXPECT_FALSE(q4_gemv_avx512_supported(a));  // lanes map to groups differently block by block
  if (avx512_here()) {
    EXPECT_THROW(q4_f32_gemv_avx512(a), Error);
  }
}

// Every output row is computed by one thread alone: 1 and 2 OpenMP threads
// give the same bits, for every GEMV kernel, on shapes above the parallel
// threshold with rows off the 4-row pass and the 64-row task.
TEST_F(GemmKernels, GemvSameBitsAtOneAndTwoThreads) {
  struct Shape {
    int bits;
    int64_t out, in, group;
  };
  Rng rng(81);
  for (const Shape& c :
       {Shape{8, 301, 1000, 1000}, Shape{8, 130, 777, 64}, Shape{4, 303, 1030, 1030},
        Shape{4, 199, 1024, 32}, Shape{4, 141, 1056, 16}}) {
    SCOPED_TRACE(::testing::Message()
                 << c.bits << "-bit " << c.out << "x" << c.in << " group " << c.group);
    ASSERT_GE(c.out * c.in, int64_t{1} << 16);  // the kernels' parallel threshold
    const int64_t groups = (c.in + c.group - 1) / c.group;
    std::vector<uint8_t> codes(static_cast<size_t>(c.out * c.in * c.bits / 8));
    for (uint8_t& b : codes) b = static_cast<uint8_t>(rng.next_u64());
    std::vector<uint16_t> scales(static_cast<size_t>(c.out * groups));
    for (uint16_t& s : scales) s = f32_to_f16(static_cast<float>(0.01 + rng.uniform(0, 1)));
    const std::vector<float> x = normals(c.in, rng);
    std::vector<float> one(static_cast<size_t>(c.out)), two(static_cast<size_t>(c.out));
    PackedGemmArgs a{codes.data(), codes.size(), scales.data(), c.out, c.in, c.group, x.data(), 1};
    const int before = omp_get_max_threads();
    for (const auto& [name, fn] : gemv_kernels(c.bits, a)) {
      SCOPED_TRACE(name);
      omp_set_num_threads(1);
      a.y = one.data();
      fn(a);
      omp_set_num_threads(2);
      a.y = two.data();
      fn(a);
      EXPECT_EQ(one, two);
    }
    omp_set_num_threads(before);
  }
}
#endif

TEST_F(GemmKernels, Sparse24Avx2MatchesReference) {
  Rng rng(78);
  for (const Case& c : kCases)
    for (int64_t batch : kBatches) {
      SCOPED_TRACE(::testing::Message() << c.out << "x" << c.in << " batch " << batch);
      const int64_t kept = c.out * sparse24_kept_per_row(c.in);
      const std::vector<float> values = normals(kept, rng);
      // Random valid positions: per group two distinct ones in ascending order
      // (one for a group of 1), within a short last group too.
      std::vector<uint8_t> idx((static_cast<uint64_t>(kept) * 2 + 7) / 8, 0);
      const int64_t kr = sparse24_kept_per_row(c.in);
      for (int64_t o = 0; o < c.out; ++o)
        for (int64_t t = 0; t < kr; t += 2) {
          const auto size = static_cast<uint32_t>(std::min<int64_t>(4, c.in - 2 * t));
          uint32_t p0 = 0, p1 = 1;
          if (size > 2) {
            p0 = static_cast<uint32_t>(rng.below(size - 1));
            p1 = p0 + 1 + static_cast<uint32_t>(rng.below(size - 1 - p0));
          }
          for (auto [k, p] : {std::pair{o * kr + t, p0}, std::pair{o * kr + t + 1, p1}})
            if (k < (o + 1) * kr)
              idx[static_cast<size_t>(k / 4)] |= static_cast<uint8_t>(p << (2 * (k % 4)));
        }
      const std::vector<float> x = normals(batch * c.in, rng);
      std::vector<float> want(static_cast<size_t>(batch * c.out), -1.0f), got = want;
      Sparse24GemmArgs a{values.data(), idx.data(), idx.size(), c.out,
                         c.in,          x.data(),   batch,      want.data()};
      gemm_kernels(Isa::ref).s24(a);
      a.y = got.data();
      gemm_kernels(Isa::avx2).s24(a);
      EXPECT_LT(gap(got, want), 1e-5);
    }
}

// W8A8: integer dot products, so the AVX2 kernel equals the reference bit for
// bit (both quantize X with the same f32 operations); all 256 code values,
// tails of the 32-input step and of the 4×2 tiles, zero and non-finite rows.
TEST_F(GemmKernels, W8A8Avx2EqualsReference) {
  Rng rng(79);
  for (const Case& c : kCases)
    for (int64_t batch : kBatches) {
      SCOPED_TRACE(::testing::Message() << c.out << "x" << c.in << " batch " << batch);
      std::vector<uint8_t> codes(static_cast<size_t>(c.out * c.in));
      for (uint8_t& b : codes) b = static_cast<uint8_t>(rng.next_u64());
      std::vector<uint16_t> scales(static_cast<size_t>(c.out));
      for (uint16_t& s : scales) s = f32_to_f16(static_cast<float>(0.01 + rng.uniform(0, 1)));
      std::vector<float> x = normals(batch * c.in, rng);
      if (batch >= 4) {
        std::fill_n(x.begin() + c.in, c.in, 0.0f);  // row 1: zero
        x[static_cast<size_t>(2 * c.in + c.in / 2)] = std::nanf("");
        x[static_cast<size_t>(3 * c.in)] = -INFINITY;
      }
      std::vector<float> want(static_cast<size_t>(batch * c.out), -1.0f), got = want;
      PackedGemmArgs a{codes.data(), codes.size(), scales.data(), c.out,      c.in,
                       c.in,         x.data(),     batch,         want.data()};
      q8_q8_gemm_ref(a);
      a.y = got.data();
      gemm_kernels(Isa::avx2).q8q8(a);
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << i;
        } else {
          EXPECT_EQ(got[i], want[i]) << i;
        }
      }
      if (batch >= 4) {
        EXPECT_EQ(want[static_cast<size_t>(c.out)], 0.0f);
        EXPECT_TRUE(std::isnan(want[static_cast<size_t>(2 * c.out)]));
        EXPECT_TRUE(std::isnan(want[static_cast<size_t>(3 * c.out)]));
      }
    }
  // Long rows: more than one 2^16-input int32 pass, every code −128 against
  // activations all at +127 (the largest products): exact in int64.
  const int64_t in = (int64_t{1} << 17) + 40;
  std::vector<uint8_t> codes(static_cast<size_t>(2 * in), 0x80);
  std::vector<uint16_t> scales(2, f32_to_f16(1.0f));
  std::vector<float> x(static_cast<size_t>(in), 1.0f), want(2), got(2);
  PackedGemmArgs a{codes.data(), codes.size(), scales.data(), 2, in, in, x.data(), 1, want.data()};
  q8_q8_gemm_ref(a);
  a.y = got.data();
  gemm_kernels(Isa::avx2).q8q8(a);
  // qx = 127, s_x = 1/127: Y = f32(−128·127·in)·(1/127).
  const float expect = static_cast<float>(-128 * 127 * in) * (1.0f / 127.0f);
  EXPECT_EQ(want[0], expect);
  EXPECT_EQ(got[0], expect);
  EXPECT_EQ(got[1], expect);
  a.group = 32;
  EXPECT_THROW(q8_q8_gemm_ref(a), Error);
  EXPECT_THROW(gemm_kernels(Isa::avx2).q8q8(a), Error);
}

TEST_F(GemmKernels, RegistryPicksAvx2WhereAvailable) {
  // AVX2 unless TAILOR_KERNELS forces another table (tailor/core/cpu.h).
  const Isa want = forced_isa().value_or(Isa::avx2);
  EXPECT_EQ(best_gemm_kernels().isa, want);
  EXPECT_EQ(best_gemm_kernels().q4, gemm_kernels(want).q4);
  EXPECT_EQ(gemm_kernels(Isa::ref).q4, &q4_f32_gemm_ref);
  EXPECT_EQ(gemm_kernels(Isa::ref).q8q8, &q8_q8_gemm_ref);
  EXPECT_EQ(best_gemm_kernels().q8q8, gemm_kernels(want).q8q8);
  EXPECT_NE(gemm_kernels(Isa::avx2).q4, gemm_kernels(Isa::ref).q4);
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  // The avx2 table's batch-1 GEMVs on AVX-512 where this CPU has AVX-512F/BW/VL.
  EXPECT_EQ(gemm_kernels(Isa::avx2).q8, avx512_here() ? &q8_f32_gemm_avx512 : &q8_f32_gemm_avx2);
  EXPECT_EQ(gemm_kernels(Isa::avx2).q4, avx512_here() ? &q4_f32_gemm_avx512 : &q4_f32_gemm_avx2);
#endif
  EXPECT_THROW(best_gemm_kernels().packed(5), Error);
}

}  // namespace
}  // namespace tailor::schemes::kernels
