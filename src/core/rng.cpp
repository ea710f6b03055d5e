#include "tailor/core/rng.h"

#include <cmath>

namespace tailor {
namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}
}  // namespace

Rng::Rng(uint64_t seed) : seed_(seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform_open() {
  // 52 random bits, offset by half a step: values (k + 0.5) / 2^52, k in [0, 2^52).
  return (static_cast<double>(next_u64() >> 12) + 0.5) * 0x1.0p-52;
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(next_u64() >> 11) * 0x1.0p-53);
}

uint64_t Rng::below(uint64_t n) {
  __uint128_t m = static_cast<__uint128_t>(next_u64()) * n;
  uint64_t l = static_cast<uint64_t>(m);
  if (l < n) {
    const uint64_t t = -n % n;
    while (l < t) {
      m = static_cast<__uint128_t>(next_u64()) * n;
      l = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = uniform_open(), u2 = uniform_open();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double th = 2.0 * M_PI * u2;
  spare_ = r * std::sin(th);
  has_spare_ = true;
  return r * std::cos(th);
}

double Rng::gumbel() {
  return -std::log(-std::log(uniform_open()));
}

Rng Rng::split(uint64_t stream) const {
  uint64_t x = seed_ ^ (0xd1b54a32d192ed03ull * (stream + 1));
  return Rng(splitmix64(x));
}

}  // namespace tailor
