// The kernel registry and the CPU-feature query: the features agree with the
// compiler's own CPUID reading (__builtin_cpu_supports, an independent
// implementation), the reference table is always there and names its
// kernels, the AVX2 table is offered exactly when the CPU has AVX2 and FMA,
// and the active table is the forced one or the fastest.
#include <gtest/gtest.h>

#include "tailor/core/cpu.h"
#include "tailor/core/error.h"
#include "tailor/runtime/kernels/registry.h"
#include "tailor/schemes/kernels.h"

namespace tailor::runtime::kernels {
namespace {

TEST(CpuFeatures, AgreeWithTheCompilersQuery) {
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.avx2, __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(f.fma, __builtin_cpu_supports("fma") != 0);
  EXPECT_EQ(f.avx512f, __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(f.avx512bw, __builtin_cpu_supports("avx512bw") != 0);
  EXPECT_EQ(f.avx512vl, __builtin_cpu_supports("avx512vl") != 0);
  EXPECT_EQ(f.avx512vnni, __builtin_cpu_supports("avx512vnni") != 0);
  EXPECT_EQ(f.avx512bf16, __builtin_cpu_supports("avx512bf16") != 0);
  EXPECT_EQ(f.avxvnni, __builtin_cpu_supports("avxvnni") != 0);
  const std::string d = tailor::describe(f);
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d.find("avx2") != std::string::npos, f.avx2);
}

TEST(KernelRegistry, ReferenceTableNamesItsKernels) {
  ASSERT_TRUE(isa_available(Isa::ref));
  const KernelTable& t = kernel_table(Isa::ref);
  EXPECT_EQ(t.isa, Isa::ref);
  EXPECT_EQ(t.gemm, &f32_gemm_ref);
  EXPECT_EQ(t.gemv, &f32_gemv_ref);
  EXPECT_EQ(t.max_pool, &f32_maxpool_ref);
  EXPECT_EQ(
      describe(t),
      "ref: gemm=f32_gemm_ref gemv=f32_gemv_ref conv_gemm=f32_conv_ref conv_dw=f32_conv_ref "
      "bias_act=f32_bias_act_ref exp=f32_exp_ref batch_norm=f32_batchnorm_ref "
      "softmax=f32_softmax_ref max_pool=f32_maxpool_ref resize=f32_resize_ref "
      "conv_pack=f32_conv_pack_ref conv_packed=f32_conv_ref attention=f32_attention_ref "
      "rope=f32_rope_ref "
      "conv_winograd=f32_conv_winograd_f43_ref qb_conv=qb_f32_conv_ref "
      "q8q8_conv1x1=q8_q8_conv1x1_ref q8q8_conv=q8_q8_conv_ref conv1x1_pack=f32_conv_pack_ref "
      "conv1x1=f32_conv_ref");
}

TEST(KernelRegistry, Avx2TableFollowsTheCpu) {
  const CpuFeatures& f = cpu_features();
  if (!isa_available(Isa::avx2)) {
    EXPECT_THROW(kernel_table(Isa::avx2), Error);
    GTEST_SKIP() << "AVX2 kernels not built in or CPU lacks AVX2/FMA (" << tailor::describe(f)
                 << ")";
  }
  EXPECT_TRUE(f.avx2 && f.fma);
  const KernelTable& t = kernel_table(Isa::avx2);
  EXPECT_EQ(t.isa, Isa::avx2);
  EXPECT_EQ(
      describe(t),
      "avx2: gemm=f32_gemm_openblas gemv=f32_gemv_avx2 conv_gemm=f32_conv_gemm_6x16_avx2 "
      "conv_dw=f32_conv_dw_2x32_avx2 bias_act=f32_bias_act_avx2 exp=f32_exp_avx2 "
      "batch_norm=f32_batchnorm_avx2 softmax=f32_softmax_avx2 "
      "max_pool=f32_maxpool_avx2 resize=f32_resize_avx2 "
      "conv_pack=f32_conv_pack_6x16_avx2 conv_packed=f32_conv_gemm_packed_6x16_avx2 "
      "attention=f32_attention_avx2 rope=f32_rope_avx2 conv_winograd=" +
          std::string(f.avx512f ? "f32_conv_winograd_f43_avx512" : "f32_conv_winograd_f43_avx2") +
          " qb_conv=qb_f32_conv_6x16_avx2 q8q8_conv1x1=" +
          std::string(f.avx512vnni && f.avx512vl ? "q8_q8_conv1x1_8x16_avx512vnni"
                                                 : "q8_q8_conv1x1_8x16_avx2") +
          " q8q8_conv=" +
          std::string(f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni
                          ? "q8_q8_conv_6x32_avx512vnni"
                          : "q8_q8_conv_ref") +
          (f.avx512f ? " conv1x1_pack=f32_conv1x1_pack_12x32 conv1x1=f32_conv1x1_12x32_avx512"
                     : " conv1x1_pack=f32_conv_pack_6x16_avx2 conv1x1=f32_conv1x1_6x16_avx2"));
}

TEST(KernelRegistry, ActiveTableIsTheForcedOrTheFastest) {
  const Isa want = forced_isa().value_or(isa_available(Isa::avx2) ? Isa::avx2 : Isa::ref);
  EXPECT_EQ(active_kernels().isa, want);
  EXPECT_EQ(&active_kernels(), &kernel_table(want));
  // The scheme kernels take the same decision from the same query.
  EXPECT_EQ(
      schemes::kernels::best_gemm_kernels().isa,
      forced_isa().value_or(schemes::kernels::isa_available(Isa::avx2) ? Isa::avx2 : Isa::ref));
}

}  // namespace
}  // namespace tailor::runtime::kernels
