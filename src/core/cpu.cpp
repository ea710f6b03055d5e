// CPUID/XGETBV query (x86-64; other targets report no feature) and the
// TAILOR_KERNELS override.
#include "tailor/core/cpu.h"

#include <cstdlib>

#include "tailor/core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tailor {
namespace {

#if defined(__x86_64__) || defined(__i386__)
bool bit(unsigned reg, int b) {
  return ((reg >> b) & 1u) != 0;
}

uint64_t xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures query() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = bit(c, 27), avx = bit(c, 28);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;    // XMM and YMM saved
  const bool zmm_state = (xcr0 & 0xE6) == 0xE6;  // also opmask, ZMM_Hi256, Hi16_ZMM
  if (!ymm_state) return f;
  f.fma = bit(c, 12);
  f.f16c = bit(c, 29);
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = bit(b, 5);
  if (zmm_state) {
    f.avx512f = bit(b, 16);
    f.avx512bw = bit(b, 30);
    f.avx512vl = bit(b, 31);
    f.avx512vnni = bit(c, 11);
  }
  const unsigned max_sub = a;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avxvnni = bit(a, 4);
    if (zmm_state) f.avx512bf16 = bit(a, 5);
  }
  return f;
}
#else
CpuFeatures query() {
  return {};
}
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = query();
  return f;
}

std::string describe(const CpuFeatures& f) {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512vnni, "avx512vnni");
  add(f.avxvnni, "avxvnni");
  add(f.avx512bf16, "avx512bf16");
  return s.empty() ? "none" : s;
}

const char* isa_name(Isa isa) {
  return isa == Isa::avx2 ? "avx2" : "ref";
}

std::optional<Isa> forced_isa() {
  static const std::optional<Isa> forced = []() -> std::optional<Isa> {
    const char* v = std::getenv("TAILOR_KERNELS");
    const std::string s = v ? v : "";
    if (s.empty() || s == "auto") return std::nullopt;
    if (s == "ref") return Isa::ref;
    if (s == "avx2") return Isa::avx2;
    throw Error("TAILOR_KERNELS", "unknown kernel set '" + s + "'; expected ref, avx2 or auto");
  }();
  return forced;
}

}  // namespace tailor
