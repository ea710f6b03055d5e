// Peak memory and time of one GPTQ encode (the `-gptq` labels) on a layer of
// IN inputs: a weight [OUT, IN] and a Gram H = XᵀX of ROWS rows, both from a
// seeded normal generator (X's columns correlated: x_j += 0.8·x_{j−1}).
//
//   gptq_memory_check IN [OUT=64] [ROWS=2·IN] [LABEL=int4-gptq]
//
// Prints the process's peak resident set (getrusage ru_maxrss) after the
// inputs are built and after the encode, the encode's CPU seconds, and the
// encode's own peak above the inputs (in MB and in units of one IN×IN double
// matrix). Run one IN per process: ru_maxrss only grows.
#include <fmt/format.h>
#include <sys/resource.h>

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/core/rng.h"
#include "tailor/core/tensor.h"
#include "tailor/schemes/registry.h"

using namespace tailor;

namespace {

double peak_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // kB on Linux
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    fmt::print(stderr, "usage: gptq_memory_check IN [OUT=64] [ROWS=2*IN] [LABEL=int4-gptq]\n");
    return 2;
  }
  const int64_t in = std::stoll(argv[1]);
  const int64_t out = argc > 2 ? std::stoll(argv[2]) : 64;
  const int64_t rows = argc > 3 ? std::stoll(argv[3]) : 2 * in;
  const std::string label = argc > 4 ? argv[4] : "int4-gptq";
  if (in < 1 || out < 1 || rows < 1) throw Error("gptq_memory_check", "IN, OUT, ROWS must be >= 1");

  Rng rng(7);
  std::vector<float> w(static_cast<size_t>(out * in));
  for (float& v : w) v = static_cast<float>(rng.normal());
  auto gram = std::make_shared<schemes::Gram>();
  gram->in = in;
  gram->rows = rows;
  gram->h.assign(static_cast<size_t>(in * in), 0.0);
  std::vector<double> x(static_cast<size_t>(in));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < in; ++j) x[j] = rng.normal() + (j > 0 ? 0.8 * x[j - 1] : 0.0);
    for (int64_t a = 0; a < in; ++a) {  // the upper triangle, mirrored below
      double* row = gram->h.data() + a * in;
      for (int64_t b = a; b < in; ++b) row[b] += x[a] * x[b];
    }
  }
  for (int64_t a = 0; a < in; ++a)
    for (int64_t b = 0; b < a; ++b) gram->h[a * in + b] = gram->h[b * in + a];
  schemes::SchemeParams p;
  p.gram = gram;
  const Tensor wt = Tensor::from_f32({out, in}, w);
  const double before = peak_mb();
  const std::clock_t c0 = std::clock();
  const auto encoded = schemes::parse_scheme(label, p).encode(wt);
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const double after = peak_mb();
  const double matrix_mb = static_cast<double>(in * in) * 8.0 / (1024.0 * 1024.0);
  fmt::print(
      "{} [{}, {}], Gram of {} rows: peak RSS {:.0f} MB with the inputs, {:.0f} MB after the "
      "encode (+{:.0f} MB = {:.2f} in×in double matrices of {:.0f} MB); encode {:.2f} s CPU\n",
      label, out, in, rows, before, after, after - before, (after - before) / matrix_mb, matrix_mb,
      cpu);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "gptq_memory_check: {}\n", e.what());
  return 1;
}
