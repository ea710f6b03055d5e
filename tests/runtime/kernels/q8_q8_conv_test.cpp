// The W8A8 k×k conv (q8_q8_conv_ref, q8_q8_conv_6x32_avx512vnni; one
// activation scale per image). Checks: (1) the reference against the
// definition (registry.h, Q8Q8ConvParams) written out here on a hand-made
// case, int64 sums; (2) the avx2 table's kernel (and the VNNI kernel where
// this CPU has it) against the reference bit for bit on shapes that hit
// every tail: c_in not a multiple of 4, c_out not a multiple of the 6-row
// panel, widths under, at and past the 32-column tile, strides, dilations,
// asymmetric and large pads, 1×3 and 5×5 kernels, several images and bands,
// every activation; (3) codes on rounding boundaries; (4) a NaN or ∞ makes
// every output of its image NaN, a zero image gives act(bias); (5) sums
// past int32 go to the reference; (6) 1 and 2 threads give the same bits.
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/kernels/kernel_compare.h"
#include "tailor/core/dtype.h"
#include "tailor/linalg/threads.h"

namespace tailor::runtime::kernels::testing {
namespace {

struct Case {
  int64_t n, c_in, c_out, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  Conv2dParams conv() const {
    Conv2dParams p;
    p.n = n, p.c_in = c_in, p.c_out = c_out, p.h = h, p.w = w, p.kh = kh, p.kw = kw;
    p.stride_h = sh, p.stride_w = sw, p.pad_top = pt, p.pad_left = pl, p.pad_bottom = pb;
    p.pad_right = pr, p.dil_h = dh, p.dil_w = dw;
    return p;
  }
  std::string name() const {
    return "c_in " + std::to_string(c_in) + " c_out " + std::to_string(c_out) + " " +
           std::to_string(h) + "×" + std::to_string(w) + " k " + std::to_string(kh) + "×" +
           std::to_string(kw) + " stride " + std::to_string(sh) + "," + std::to_string(sw) +
           " pads " + std::to_string(pt) + "," + std::to_string(pl) + "," + std::to_string(pb) +
           "," + std::to_string(pr) + " dil " + std::to_string(dh) + "," + std::to_string(dw);
  }
};

const Case kCases[] = {
    // n c_in c_out  h   w  kh kw sh sw pt pl pb pr dh dw
    {2, 1, 1, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},       // width 1, one of each
    {1, 3, 7, 6, 15, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},      // under one tile, a panel and one
    {2, 5, 24, 7, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     // a tile and one column
    {1, 17, 7, 9, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},     // stride 2
    {1, 96, 24, 10, 160, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  // the detector's 96→24, 5 tiles a row
    {1, 96, 24, 5, 160, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},   // the same, stride 2
    {1, 5, 7, 9, 15, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1},      // 5×5
    {2, 3, 1, 4, 33, 1, 3, 1, 1, 0, 1, 0, 1, 1, 1},      // 1×3
    {1, 17, 24, 11, 15, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},   // dilation 2
    {1, 5, 7, 8, 33, 3, 3, 1, 1, 0, 2, 1, 0, 1, 1},      // asymmetric pads
    {1, 3, 7, 9, 16, 3, 3, 2, 3, 1, 0, 0, 2, 1, 2},      // strides 2, 3, dilation 1, 2
    {2, 7, 13, 20, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    // three bands of rows
    {1, 5, 7, 6, 9, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},       // 1×1 stride 2
    {1, 3, 5, 4, 5, 3, 3, 1, 1, 3, 3, 3, 3, 1, 1},       // outputs wholly in the padding
    {1, 4, 6, 7, 70, 2, 4, 3, 1, 0, 3, 2, 0, 2, 1},      // stride 3 rows, 3 tiles a row
};

// A pack and its conv (one table's pair).
struct Kernel {
  std::string name;
  Q8Q8ConvPackFn pack;
  Q8Q8ConvFn conv;
};

// The avx2 table's pair and, where this CPU has it, the VNNI one by name.
std::vector<Kernel> kernels_here() {
  const KernelTable& t = kernel_table(Isa::avx2);
  std::vector<Kernel> k{{"avx2 table", t.q8q8_conv_pack, t.q8q8_conv}};
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni)
    k.push_back({"6x32_avx512vnni", q8_q8_conv_pack_6x32, q8_q8_conv_6x32_avx512vnni});
  return k;
}

std::vector<float> run(const Kernel& k, const Case& c, const Weights& w,
                       const std::vector<float>& x, const float* bias, const Activation& act) {
  std::vector<uint8_t> packed(static_cast<size_t>(k.pack(w.args, c.kh, c.kw, nullptr)));
  k.pack(w.args, c.kh, c.kw, packed.data());
  Q8Q8ConvParams p;
  p.conv = c.conv();
  p.packed = packed.data();
  std::vector<float> y(static_cast<size_t>(c.n * c.c_out * p.conv.out_h() * p.conv.out_w()), -7.0f);
  k.conv(p, x.data(), bias, y.data(), act);
  return y;
}

Kernel reference() {
  return {"ref", q8_q8_conv_pack_ref, q8_q8_conv_ref};
}

class Q8Q8Conv : public KernelVsRef {};

// Two images of two channels on a 3×4 plane, 3×3 taps, pads 1: image 0's
// largest magnitude 127 (scale 1), image 1 = image 0 · 0.5 (scale 0.5), so
// x/s is exact; halves round away from zero; weights with −128 and 127. The
// definition in int64, independently of the reference's loops.
TEST_F(Q8Q8Conv, ReferenceIsTheDefinition) {
  constexpr int64_t n = 2, h = 3, w = 4, cin = 2, cout = 2;
  float x[n][cin][h][w] = {
      {{{127.0f, 2.5f, 0.0f, -63.5f}, {-2.5f, 126.6f, 1.25f, 10.0f}, {0.4f, -0.5f, 3.0f, 0.0f}},
       {{-1.5f, -127.0f, 0.0f, 20.25f},
        {127.0f, 0.0f, 63.5f, -63.5f},
        {127.0f, 127.0f, -127.0f, 0.0f}}}};
  for (int64_t ci = 0; ci < cin; ++ci)
    for (int64_t iy = 0; iy < h; ++iy)
      for (int64_t ix = 0; ix < w; ++ix) x[1][ci][iy][ix] = x[0][ci][iy][ix] * 0.5f;
  const int8_t q[cout][cin][3][3] = {
      {{{1, -2, 3}, {-128, 127, 0}, {5, 6, -7}}, {{0, 1, 0}, {2, -3, 4}, {-5, 6, 7}}},
      {{{127, 127, 127}, {-1, -1, -1}, {0, 0, 0}}, {{9, -9, 9}, {-128, -128, 1}, {2, 2, 2}}}};
  const float scales[cout] = {0.25f, 0.0078125f};  // exact in f16
  const float bias[cout] = {0.5f, -1.0f};
  std::vector<float> want;
  for (int64_t b = 0; b < n; ++b) {
    // Quantization by the definition: one scale per image.
    float m = 0;
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < w; ++ix) m = std::max(m, std::fabs(x[b][ci][iy][ix]));
    const float s = m / 127.0f;
    EXPECT_EQ(s, b == 0 ? 1.0f : 0.5f);
    int64_t qx[cin][h][w];
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < w; ++ix)
          qx[ci][iy][ix] =
              static_cast<int64_t>(std::clamp(std::round(x[b][ci][iy][ix] / s), -127.0f, 127.0f));
    // Half away from zero: 2.5 → 3, −2.5 → −3, −0.5 → −1, −1.5 → −2, 63.5 → 64;
    // 126.6 → 127, 0.4 → 0, 1.25 → 1.
    EXPECT_EQ(qx[0][0][1], 3);
    EXPECT_EQ(qx[0][1][0], -3);
    EXPECT_EQ(qx[0][2][1], -1);
    EXPECT_EQ(qx[1][0][0], -2);
    EXPECT_EQ(qx[1][1][2], 64);
    EXPECT_EQ(qx[0][1][1], 127);
    EXPECT_EQ(qx[0][2][0], 0);
    EXPECT_EQ(qx[0][1][2], 1);
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t oy = 0; oy < h; ++oy)
        for (int64_t ox = 0; ox < w; ++ox) {
          int64_t dot = 0;
          for (int64_t ci = 0; ci < cin; ++ci)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = oy - 1 + ky, ix = ox - 1 + kx;
                if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                  dot += qx[ci][iy][ix] * q[o][ci][ky][kx];
              }
          // f32(Σ)·(s·scale[o]) + bias[o], three roundings (not contracted to an FMA).
          volatile float so = s * scales[o];
          volatile float v = static_cast<float>(dot) * so;
          want.push_back(v + bias[o]);
        }
  }
  Weights wt;
  wt.codes.assign(&q[0][0][0][0], &q[0][0][0][0] + cout * cin * 9);
  for (float v : scales) wt.scales.push_back(f32_to_f16(v));
  wt.args.codes = reinterpret_cast<const uint8_t*>(wt.codes.data());
  wt.args.code_bytes = wt.codes.size();
  wt.args.scales = wt.scales.data();
  wt.args.out = cout, wt.args.in = cin * 9, wt.args.group = cin * 9;
  const Case c{n, cin, cout, h, w, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const std::vector<float> xv(&x[0][0][0][0], &x[0][0][0][0] + n * cin * h * w);
  expect_same(run(reference(), c, wt, xv, bias, Activation::none()), want, "reference");
  for (const Kernel& k : kernels_here())
    expect_same(run(k, c, wt, xv, bias, Activation::none()), want, k.name);
}

// Activations whose f32_bias_act_avx2 and f32_bias_act_ref agree bit for bit
// are compared with the reference directly; sigmoid and tanh (Cephes
// polynomials in the AVX2 epilogue) with the reference's sums through
// f32_bias_act_avx2.
TEST_F(Q8Q8Conv, OptimisedKernelGivesTheReferenceBits) {
  uint64_t seed = 301;
  const Activation direct[] = {Activation::none(), Activation::relu(),
                               Activation::clip(-0.5f, 2.0f), Activation::leaky_relu(0.1f),
                               Activation::hard_swish()};
  for (const Case& c : kCases) {
    const Weights w = weights(c.c_out, c.c_in * c.kh * c.kw, ++seed);
    std::vector<float> x = uniform(c.n * c.c_in * c.h * c.w, ++seed, -2.0, 3.0);
    if (c.n > 1)  // image 1 on a smaller scale
      for (int64_t i = c.c_in * c.h * c.w; i < 2 * c.c_in * c.h * c.w; ++i) x[i] *= 0.01f;
    const std::vector<float> bias = uniform(c.c_out, ++seed);
    for (bool with_bias : {false, true}) {
      const float* b = with_bias ? bias.data() : nullptr;
      for (const Activation& act : direct) {
        const std::vector<float> want = run(reference(), c, w, x, b, act);
        for (const Kernel& k : kernels_here())
          expect_same(run(k, c, w, x, b, act), want,
                      k.name + " " + c.name() + " act " + std::to_string(int(act.kind)) +
                          (with_bias ? " bias" : ""));
      }
      const std::vector<float> sums = run(reference(), c, w, x, nullptr, Activation::none());
      const int64_t plane = c.conv().out_h() * c.conv().out_w();
      for (const Activation& act : {Activation::sigmoid(), Activation::tanh()}) {
        std::vector<float> want(sums.size());
        for (int64_t r = 0; r < c.n * c.c_out; ++r)
          f32_bias_act_avx2(act, b ? b[r % c.c_out] : 0.0f, sums.data() + r * plane,
                            want.data() + r * plane, plane);
        for (const Kernel& k : kernels_here())
          expect_same(run(k, c, w, x, b, act), want,
                      k.name + " " + c.name() + " act " + std::to_string(int(act.kind)) +
                          (with_bias ? " bias" : ""));
      }
    }
  }
}

// Values on and next to the rounding boundaries: image 0's largest magnitude
// is 127 (scale exactly 1), image 1's 63.5 (scale 0.5), the others
// multiples of 0.25 (x/s on half-integers, rounded away from zero) or one
// ulp beside them; image 2 tiny (a subnormal scale) and image 3 tinier
// (scale 0). The VNNI kernel's division-free codes must fall back to the
// reference's operations there.
TEST_F(Q8Q8Conv, CodesOnRoundingBoundariesAreTheReferences) {
  const Case c{4, 9, 7, 6, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  const Weights w = weights(c.c_out, c.c_in * 9, 41);
  const int64_t image = c.c_in * c.h * c.w;
  Rng rng(42);
  std::vector<float> x(static_cast<size_t>(c.n * image));
  for (int64_t b = 0; b < 2; ++b) {
    const float top = b == 0 ? 127.0f : 63.5f;
    for (int64_t i = 0; i < image; ++i) {
      float v = static_cast<float>(std::floor(rng.uniform(-4 * top, 4 * top + 1))) / 4;
      if (rng.uniform(0, 1) < 0.3) v = std::nextafter(v, rng.uniform(0, 1) < 0.5 ? -1e9f : 1e9f);
      x[b * image + i] = std::clamp(v, -top, top);
    }
    x[b * image + 17] = -top;
  }
  for (int64_t i = 0; i < image; ++i) {
    x[2 * image + i] = static_cast<float>(rng.uniform(-1, 1)) * 3e-38f;  // scale subnormal
    x[3 * image + i] = static_cast<float>(rng.uniform(-1, 1)) * 1e-44f;  // scale 0
  }
  const std::vector<float> bias = uniform(c.c_out, 43);
  const std::vector<float> want = run(reference(), c, w, x, bias.data(), Activation::none());
  for (const Kernel& k : kernels_here())
    expect_same(run(k, c, w, x, bias.data(), Activation::none()), want, k.name);
}

// Image 0 holds one NaN, image 1 one +∞, image 2 is finite, image 3 zero:
// every output of images 0 and 1 NaN, image 2 the reference's, image 3
// act(bias).
TEST_F(Q8Q8Conv, NonFiniteValueGivesNaNForItsWholeImage) {
  for (const Case& c : {Case{4, 5, 7, 9, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
                        Case{4, 6, 8, 9, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}}) {
    const Weights w = weights(c.c_out, c.c_in * 9, 5);
    const int64_t image = c.c_in * c.h * c.w;
    std::vector<float> x = uniform(c.n * image, 6);
    x[0 * image + 2 * c.h * c.w + 3 * c.w + 4] = std::numeric_limits<float>::quiet_NaN();
    x[1 * image + 7 * c.w + 35] = std::numeric_limits<float>::infinity();
    std::fill(x.begin() + 3 * image, x.begin() + 4 * image, 0.0f);
    const std::vector<float> bias = uniform(c.c_out, 7);
    const Conv2dParams p = c.conv();
    const int64_t plane = p.out_h() * p.out_w();
    std::vector<Kernel> all{reference()};
    for (const Kernel& k : kernels_here()) all.push_back(k);
    const std::vector<float> want = run(reference(), c, w, x, bias.data(), Activation::relu());
    for (const Kernel& k : all) {
      const std::vector<float> y = run(k, c, w, x, bias.data(), Activation::relu());
      expect_same(y, want, k.name + " " + c.name());
      for (int64_t b = 0; b < c.n; ++b)
        for (int64_t o = 0; o < c.c_out; ++o)
          for (int64_t j = 0; j < plane; ++j) {
            const float v = y[static_cast<size_t>((b * c.c_out + o) * plane + j)];
            if (b < 2)
              EXPECT_TRUE(std::isnan(v)) << k.name << " b " << b << " o " << o << " " << j;
            else if (b == 2)
              EXPECT_TRUE(std::isfinite(v)) << k.name << " o " << o << " " << j;
            else
              EXPECT_EQ(v, std::max(bias[o], 0.0f)) << k.name << " o " << o << " " << j;
          }
    }
  }
}

// c_in·kh·kw = 14680·9 = 132120 > 132104, where int32 sums of the VNNI
// kernel could overflow (|Σ| ≤ K·127·128): its pack writes the reference's
// layout and the call goes to the reference. Codes 127 (every x = 1) and
// weights −128 drive the sum of the centre output past int32
// (−128·127·132120 < −2^31): the int64 sum rounded to f32 once.
TEST_F(Q8Q8Conv, SumsPastInt32GoToTheReference) {
  const Case c{1, 14680, 2, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  Weights w = weights(c.c_out, c.c_in * 9, 51);
  std::fill(w.codes.begin(), w.codes.begin() + c.c_in * 9, static_cast<int8_t>(-128));
  std::vector<float> x(static_cast<size_t>(c.c_in * c.h * c.w), 1.0f);
  const std::vector<float> want = run(reference(), c, w, x, nullptr, Activation::none());
  // Centre output of channel 0: 9 taps × 14680 channels of 127·(−128).
  const float s = 1.0f / 127.0f;
  volatile float so = s * f16_to_f32(w.scales[0]);
  volatile float v = static_cast<float>(int64_t{127} * -128 * 9 * c.c_in) * so;
  EXPECT_LT(int64_t{127} * -128 * 9 * c.c_in, int64_t{INT32_MIN});
  EXPECT_EQ(want[4], v + 0.0f);
  for (const Kernel& k : kernels_here()) {
    EXPECT_EQ(k.pack(w.args, 3, 3, nullptr), q8_q8_conv_pack_ref(w.args, 3, 3, nullptr)) << k.name;
    expect_same(run(k, c, w, x, nullptr, Activation::none()), want, k.name);
  }
}

// Work items (bands of rows) are fixed by the shape, so 1 and 2 threads give
// the same bits (2·24·40·80·96·9 multiply-adds: threads are used).
TEST_F(Q8Q8Conv, SameBitsAtOneAndTwoThreads) {
  const int before = linalg::threads();
  for (const Case& c : {Case{2, 96, 24, 40, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
                        Case{1, 33, 13, 41, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}}) {
    const Weights w = weights(c.c_out, c.c_in * 9, 21);
    const std::vector<float> x = uniform(c.n * c.c_in * c.h * c.w, 22, -2.0, 3.0);
    const std::vector<float> bias = uniform(c.c_out, 23);
    const std::vector<float> want = run(reference(), c, w, x, bias.data(), Activation::relu());
    for (const Kernel& k : kernels_here()) {
      linalg::set_threads(1);
      const std::vector<float> y1 = run(k, c, w, x, bias.data(), Activation::relu());
      linalg::set_threads(2);
      const std::vector<float> y2 = run(k, c, w, x, bias.data(), Activation::relu());
      EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)), 0)
          << k.name << " " << c.name();
      expect_same(y2, want, k.name + " " + c.name());
    }
  }
  linalg::set_threads(before);
}

}  // namespace
}  // namespace tailor::runtime::kernels::testing
