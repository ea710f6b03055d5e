// rel_error of every scheme against a second implementation: expected values
// computed once by tests/schemes/reference_rel_errors.py (numpy; exact SVDs)
// on the committed matrices in tests/fixtures/schemes/. Quantizers must agree
// to 1e-4, the SVD-based schemes to 1% of the expected value.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor::schemes {
namespace {

struct Row {
  std::string matrix, label, options;
  int64_t out = 0, in = 0;
  double rel_error = 0;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string p; std::getline(in, p, sep);) parts.push_back(p);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

std::vector<Row> read_expected() {
  std::ifstream f(testing::fixture_path("schemes/rel_errors.csv"));
  std::vector<Row> rows;
  std::string line;
  std::getline(f, line);  // header: matrix,out,in,label,options,rel_error
  while (std::getline(f, line)) {
    const auto c = split(line, ',');
    if (c.size() != 6) continue;
    rows.push_back({c[0], c[3], c[4], std::stoll(c[1]), std::stoll(c[2]), std::stod(c[5])});
  }
  return rows;
}

Tensor read_matrix(const std::string& name, int64_t out, int64_t in) {
  std::ifstream f(testing::fixture_path("schemes/" + name + ".f32"), std::ios::binary);
  std::vector<float> v(static_cast<size_t>(out * in));
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  EXPECT_EQ(f.gcount(), static_cast<std::streamsize>(v.size() * 4)) << name;
  return Tensor::from_f32({out, in}, v);
}

// "tucker_rank_fraction=0.5;tt_max_rank=4" onto the defaults.
SchemeParams parse_options(const std::string& options) {
  SchemeParams p;
  for (const std::string& kv : split(options, ';')) {
    if (kv.empty()) continue;
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (key == "tucker_rank_fraction")
      p.tucker_rank_fraction = std::stod(value);
    else if (key == "tt_cores")
      p.tt_cores = std::stoi(value);
    else if (key == "tt_max_rank")
      p.tt_max_rank = std::stoll(value);
    else
      ADD_FAILURE() << "unknown option " << key;
  }
  return p;
}

bool svd_based(SchemeKind k) {
  return k == SchemeKind::lowrank || k == SchemeKind::monarch || k == SchemeKind::tucker ||
         k == SchemeKind::tt;
}

TEST(SchemesFixture, RelErrorsMatchTheNumpyReference) {
  const std::vector<Row> rows = read_expected();
  ASSERT_EQ(rows.size(), 49u);
  for (const Row& r : rows) {
    SCOPED_TRACE(r.matrix + " " + r.label + " " + r.options);
    const Tensor w = read_matrix(r.matrix, r.out, r.in);
    const Scheme s = parse_scheme(r.label, parse_options(r.options));
    const double got = rel_error(w, *s.encode(w));
    if (svd_based(s.kind())) {
      EXPECT_NEAR(got, r.rel_error, 0.01 * r.rel_error);
      // numpy's are exact SVDs: low-rank cannot beat the Eckart–Young optimum.
      if (s.kind() == SchemeKind::lowrank) {
        EXPECT_GE(got, r.rel_error * (1 - 1e-5));
      }
    } else {
      EXPECT_NEAR(got, r.rel_error, 1e-4);
    }
  }
}

}  // namespace
}  // namespace tailor::schemes
