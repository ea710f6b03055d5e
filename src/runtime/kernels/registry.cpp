// The one place that decides which runtime kernel runs on this CPU: kernels
// never test CPU features themselves (the query is tailor::cpu_features()).
#include "tailor/runtime/kernels/registry.h"

#include <limits>
#include <string>

#include "tailor/core/error.h"

namespace tailor::runtime::kernels {
namespace {

// Planes past which f32_conv1x1_6x16_avx2 is level with the gemm path
// (OpenBLAS + a bias/activation pass) or slower: kernels_bench
// BM_Conv1x1Path, Zen 4, 1 thread, CPU time, at 25600 and 102400 pixels
// 16→32, 32→48, 48→48 49–97 GFLOP/s against 47–91, 48→12 and 12→96 46–68
// against 64–76. f32_conv1x1_12x32_avx512 beats the gemm path on every plane
// measured (there 68–182 against 47–91), so with it there is no limit.
constexpr int64_t kConv1x1Avx2MaxPixels = 8192;

constexpr KernelTable kRef{
    Isa::ref,        f32_gemm_ref,           f32_gemv_ref,        f32_conv_ref,
    f32_conv_ref,    f32_bias_act_ref,       f32_exp_ref,         f32_batchnorm_ref,
    f32_softmax_ref, f32_maxpool_ref,        f32_resize_ref,      f32_conv_pack_ref,
    f32_conv_ref,    f32_attention_ref,      f32_rope_ref,        f32_conv_winograd_f43_ref,
    qb_f32_conv_ref, q8_q8_conv1x1_pack_ref, q8_q8_conv1x1_ref,   f32_conv_pack_ref,
    f32_conv_ref,    kConv1x1Avx2MaxPixels,  q8_q8_conv_pack_ref, q8_q8_conv_ref};

#if defined(__AVX2__) && defined(__FMA__)
constexpr KernelTable kAvx2 {
  Isa::avx2, f32_gemm_openblas, f32_gemv_avx2, f32_conv_gemm_6x16_avx2, f32_conv_dw_2x32_avx2,
      f32_bias_act_avx2, f32_exp_avx2, f32_batchnorm_avx2, f32_softmax_avx2, f32_maxpool_avx2,
      f32_resize_avx2, f32_conv_pack_6x16_avx2, f32_conv_gemm_packed_6x16_avx2, f32_attention_avx2,
      f32_rope_avx2, f32_conv_winograd_f43_avx2,
#if defined(__F16C__)
      qb_f32_conv_6x16_avx2, q8_q8_conv1x1_pack_8x16, q8_q8_conv1x1_8x16_avx2,
#else
      qb_f32_conv_ref, q8_q8_conv1x1_pack_ref, q8_q8_conv1x1_ref,
#endif
      f32_conv_pack_6x16_avx2, f32_conv1x1_6x16_avx2, kConv1x1Avx2MaxPixels, q8_q8_conv_pack_ref,
      q8_q8_conv_ref
};
constexpr bool kAvx2Built = true;
#else
constexpr KernelTable kAvx2 = kRef;
constexpr bool kAvx2Built = false;
#endif

// Kernel names for describe(), matched by function pointer.
struct Named {
  const void* fn;
  const char* name;
};

const Named kNames[] = {
    {reinterpret_cast<const void*>(&f32_gemm_ref), "f32_gemm_ref"},
    {reinterpret_cast<const void*>(&f32_gemv_ref), "f32_gemv_ref"},
    {reinterpret_cast<const void*>(&f32_conv_ref), "f32_conv_ref"},
    {reinterpret_cast<const void*>(&f32_bias_act_ref), "f32_bias_act_ref"},
    {reinterpret_cast<const void*>(&f32_exp_ref), "f32_exp_ref"},
    {reinterpret_cast<const void*>(&f32_batchnorm_ref), "f32_batchnorm_ref"},
    {reinterpret_cast<const void*>(&f32_softmax_ref), "f32_softmax_ref"},
    {reinterpret_cast<const void*>(&f32_maxpool_ref), "f32_maxpool_ref"},
    {reinterpret_cast<const void*>(&f32_resize_ref), "f32_resize_ref"},
    {reinterpret_cast<const void*>(&f32_conv_pack_ref), "f32_conv_pack_ref"},
    {reinterpret_cast<const void*>(&f32_attention_ref), "f32_attention_ref"},
    {reinterpret_cast<const void*>(&f32_rope_ref), "f32_rope_ref"},
    {reinterpret_cast<const void*>(&f32_conv_winograd_f43_ref), "f32_conv_winograd_f43_ref"},
    {reinterpret_cast<const void*>(&f32_gemm_openblas), "f32_gemm_openblas"},
    {reinterpret_cast<const void*>(&qb_f32_conv_ref), "qb_f32_conv_ref"},
    {reinterpret_cast<const void*>(&q8_q8_conv1x1_pack_ref), "q8_q8_conv1x1_pack_ref"},
    {reinterpret_cast<const void*>(&q8_q8_conv1x1_ref), "q8_q8_conv1x1_ref"},
    {reinterpret_cast<const void*>(&q8_q8_conv_pack_ref), "q8_q8_conv_pack_ref"},
    {reinterpret_cast<const void*>(&q8_q8_conv_ref), "q8_q8_conv_ref"},
#if defined(__AVX2__) && defined(__FMA__)
    {reinterpret_cast<const void*>(&f32_gemv_avx2), "f32_gemv_avx2"},
    {reinterpret_cast<const void*>(&f32_conv_gemm_6x16_avx2), "f32_conv_gemm_6x16_avx2"},
    {reinterpret_cast<const void*>(&f32_conv_dw_2x32_avx2), "f32_conv_dw_2x32_avx2"},
    {reinterpret_cast<const void*>(&f32_conv1x1_6x16_avx2), "f32_conv1x1_6x16_avx2"},
    {reinterpret_cast<const void*>(&f32_conv1x1_pack_12x32), "f32_conv1x1_pack_12x32"},
    {reinterpret_cast<const void*>(&f32_conv1x1_12x32_avx512), "f32_conv1x1_12x32_avx512"},
    {reinterpret_cast<const void*>(&f32_bias_act_avx2), "f32_bias_act_avx2"},
    {reinterpret_cast<const void*>(&f32_exp_avx2), "f32_exp_avx2"},
    {reinterpret_cast<const void*>(&f32_batchnorm_avx2), "f32_batchnorm_avx2"},
    {reinterpret_cast<const void*>(&f32_softmax_avx2), "f32_softmax_avx2"},
    {reinterpret_cast<const void*>(&f32_maxpool_avx2), "f32_maxpool_avx2"},
    {reinterpret_cast<const void*>(&f32_resize_avx2), "f32_resize_avx2"},
    {reinterpret_cast<const void*>(&f32_conv_pack_6x16_avx2), "f32_conv_pack_6x16_avx2"},
    {reinterpret_cast<const void*>(&f32_conv_gemm_packed_6x16_avx2),
     "f32_conv_gemm_packed_6x16_avx2"},
    {reinterpret_cast<const void*>(&f32_attention_avx2), "f32_attention_avx2"},
    {reinterpret_cast<const void*>(&f32_rope_avx2), "f32_rope_avx2"},
    {reinterpret_cast<const void*>(&f32_conv_winograd_f43_avx2), "f32_conv_winograd_f43_avx2"},
    {reinterpret_cast<const void*>(&f32_conv_winograd_f43_avx512), "f32_conv_winograd_f43_avx512"},
#if defined(__F16C__)
    {reinterpret_cast<const void*>(&qb_f32_conv_6x16_avx2), "qb_f32_conv_6x16_avx2"},
    {reinterpret_cast<const void*>(&q8_q8_conv1x1_pack_8x16), "q8_q8_conv1x1_pack_8x16"},
    {reinterpret_cast<const void*>(&q8_q8_conv1x1_8x16_avx2), "q8_q8_conv1x1_8x16_avx2"},
    {reinterpret_cast<const void*>(&q8_q8_conv1x1_8x16_avx512vnni),
     "q8_q8_conv1x1_8x16_avx512vnni"},
    {reinterpret_cast<const void*>(&q8_q8_conv_pack_6x32), "q8_q8_conv_pack_6x32"},
    {reinterpret_cast<const void*>(&q8_q8_conv_6x32_avx512vnni), "q8_q8_conv_6x32_avx512vnni"},
#endif
#endif
};

template <class Fn>
const char* name_of(Fn fn) {
  for (const Named& n : kNames) {
    if (n.fn == reinterpret_cast<const void*>(fn)) return n.name;
  }
  return "?";
}

}  // namespace

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::ref:
      return true;
    case Isa::avx2:
      return kAvx2Built && cpu_features().avx2 && cpu_features().fma;
  }
  return false;
}

namespace {

// The avx2 table with the W8A8 1×1 conv on VPDPBUSD where this CPU has
// AVX512-VNNI on ymm (the same packed weights), the W8A8 k×k conv on
// VPDPBUSD zmm tiles (its own packed weights) where it has AVX512-F, BW, VL
// and VNNI, and the f32 1×1 conv on 12×32 AVX-512F
// tiles (its own packed weights) and the Winograd conv's products on 12×32
// AVX-512F tiles (the same packed weights) where it has AVX-512F.
const KernelTable& avx2_table() {
  static const KernelTable table = [] {
    KernelTable t = kAvx2;
#if defined(__AVX2__) && defined(__FMA__)
    if (cpu_features().avx512f) {
      t.conv1x1_pack = f32_conv1x1_pack_12x32;
      t.conv1x1 = f32_conv1x1_12x32_avx512;
      t.conv1x1_max_pixels = std::numeric_limits<int64_t>::max();
      t.matmul_conv1x1 = true;
      t.conv_winograd = f32_conv_winograd_f43_avx512;
      t.winograd_min_plane = 8;
    }
#endif
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    if (cpu_features().avx512vnni && cpu_features().avx512vl)
      t.q8q8_conv1x1 = q8_q8_conv1x1_8x16_avx512vnni;
    if (cpu_features().avx512f && cpu_features().avx512bw && cpu_features().avx512vl &&
        cpu_features().avx512vnni) {
      t.q8q8_conv_pack = q8_q8_conv_pack_6x32;
      t.q8q8_conv = q8_q8_conv_6x32_avx512vnni;
    }
#endif
    return t;
  }();
  return table;
}

}  // namespace

const KernelTable& kernel_table(Isa isa) {
  check(isa_available(isa), "kernels",
        std::string(isa_name(isa)) +
            " runtime kernels are not built in or not supported by this CPU (CPU has: " +
            tailor::describe(cpu_features()) + ")");
  return isa == Isa::avx2 ? avx2_table() : kRef;
}

const KernelTable& active_kernels() {
  static const KernelTable& active = [&]() -> const KernelTable& {
    if (const auto forced = forced_isa()) return kernel_table(*forced);
    return isa_available(Isa::avx2) ? avx2_table() : kRef;
  }();
  return active;
}

std::string describe(const KernelTable& t) {
  std::string s = isa_name(t.isa);
  s += ": gemm=";
  s += name_of(t.gemm);
  s += " gemv=";
  s += name_of(t.gemv);
  s += " conv_gemm=";
  s += name_of(t.conv_gemm);
  s += " conv_dw=";
  s += name_of(t.conv_dw);
  s += " bias_act=";
  s += name_of(t.bias_act);
  s += " exp=";
  s += name_of(t.exp);
  s += " batch_norm=";
  s += name_of(t.batch_norm);
  s += " softmax=";
  s += name_of(t.softmax);
  s += " max_pool=";
  s += name_of(t.max_pool);
  s += " resize=";
  s += name_of(t.resize);
  s += " conv_pack=";
  s += name_of(t.conv_pack);
  s += " conv_packed=";
  s += name_of(t.conv_packed);
  s += " attention=";
  s += name_of(t.attention);
  s += " rope=";
  s += name_of(t.rope);
  s += " conv_winograd=";
  s += name_of(t.conv_winograd);
  s += " qb_conv=";
  s += name_of(t.qb_conv);
  s += " q8q8_conv1x1=";
  s += name_of(t.q8q8_conv1x1);
  s += " q8q8_conv=";
  s += name_of(t.q8q8_conv);
  s += " conv1x1_pack=";
  s += name_of(t.conv1x1_pack);
  s += " conv1x1=";
  s += name_of(t.conv1x1);
  return s;
}

}  // namespace tailor::runtime::kernels
