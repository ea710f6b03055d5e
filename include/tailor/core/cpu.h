// The one CPU-feature query of tailor and the instruction-set choice the
// kernel registries share (src/runtime/kernels/registry.cpp,
// src/schemes/kernels/registry.cpp): kernels never test CPU features
// themselves; a registry asks here which instruction sets this CPU runs and
// whether the user forced one (environment variable TAILOR_KERNELS).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tailor {

/// Instruction-set extensions this CPU reports, each usable only when the
/// operating system also saves the register state it needs (XCR0: YMM for
/// AVX/AVX2/FMA/F16C, opmask/ZMM for AVX-512), as CPUID and XGETBV tell.
/// Source: Intel SDM vol. 2A, CPUID leaves 1 and 7 (sub-leaves 0 and 1).
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;  ///< AVX512_VNNI (vpdpbusd on zmm)
  bool avxvnni = false;     ///< AVX-VNNI (vpdpbusd on ymm, VEX-encoded)
  bool avx512bf16 = false;  ///< AVX512_BF16 (vdpbf16ps)
};

/// The features of the CPU this process runs on (queried once, then cached).
const CpuFeatures& cpu_features();

/// "avx2 fma f16c avx512f ..." : the features present, in the field order
/// above, or "none".
std::string describe(const CpuFeatures& f);

/// Instruction sets a kernel table can be built for. Each registry decides
/// which CpuFeatures its table of an Isa needs (the runtime's AVX2 kernels
/// need AVX2 and FMA; the scheme kernels also F16C).
enum class Isa : uint8_t { ref, avx2 };

/// "ref" or "avx2".
const char* isa_name(Isa isa);

/// The instruction set forced by the environment variable TAILOR_KERNELS:
/// "ref" (scalar references) or "avx2"; nullopt when unset, empty or "auto"
/// (each registry then takes the fastest table available). Read once.
/// Throws tailor::Error naming TAILOR_KERNELS on any other value.
std::optional<Isa> forced_isa();

}  // namespace tailor
