#include "tailor/io/npy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "tailor/core/error.h"
#include "test_util.h"

namespace tailor {
namespace {

using testing::TempDir;

bool have_numpy() {
  return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

int python(const std::string& code) {
  return std::system(("/usr/bin/python3 -c \"" + code + "\"").c_str());
}

TEST(Npy, ReadsWhatNumpyWrites) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with numpy not found: cross-check skipped";
  TempDir dir;
  const std::string f = dir.file("a.npy"), c = dir.file("c.npy"), i = dir.file("i.npy"),
                    s = dir.file("s.npy"), h = dir.file("h.npy"), b = dir.file("b.npy");
  ASSERT_EQ(python("import numpy as np; "
                   "np.save('" +
                   f +
                   "', np.arange(6, dtype=np.float32).reshape(2, 3) / 4); "
                   "np.save('" +
                   c +
                   "', np.asfortranarray(np.arange(24, dtype=np.int64).reshape(2, 3, 4))); "
                   "np.save('" +
                   i +
                   "', np.array([-1, 2, 300], dtype=np.int32)); "
                   "np.save('" +
                   s +
                   "', np.float64(2.5)); "
                   "np.save('" +
                   h +
                   "', np.array([[1.5, -2.0]], dtype=np.float16)); "
                   "np.save('" +
                   b + "', np.array([True, False, True]))"),
            0);
  Tensor a = read_npy(f);
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.to_f32_vector(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f}));
  // Fortran order: element [i][j][k] is i·12 + j·4 + k whatever the storage order.
  Tensor ct = read_npy(c);
  ASSERT_EQ(ct.dtype(), DType::i64);
  ASSERT_EQ(ct.shape(), (Shape{2, 3, 4}));
  const int64_t* cv = ct.data<int64_t>();
  for (int64_t k = 0; k < 24; ++k) EXPECT_EQ(cv[k], k);
  Tensor it = read_npy(i);
  EXPECT_EQ(it.dtype(), DType::i32);
  EXPECT_EQ(it.data<int32_t>()[2], 300);
  Tensor st = read_npy(s);
  EXPECT_EQ(st.shape(), Shape{});
  EXPECT_EQ(st.data<double>()[0], 2.5);
  Tensor ht = read_npy(h);
  EXPECT_EQ(ht.dtype(), DType::f16);
  EXPECT_EQ(ht.to_f32_vector(), (std::vector<float>{1.5f, -2.0f}));
  Tensor bt = read_npy(b);
  EXPECT_EQ(bt.dtype(), DType::boolean);
  EXPECT_EQ(bt.numel(), 3);
}

TEST(Npy, NumpyReadsWhatTailorWrites) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with numpy not found: cross-check skipped";
  TempDir dir;
  const std::string f = dir.file("w.npy"), z = dir.file("z.npy");
  // A transposed (non-contiguous) view is written in row-major order of its shape.
  Tensor t = Tensor::from_f32({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}).transpose(0, 1);
  write_npy(f, t);
  write_npy(z, Tensor::zeros(DType::i8, {0, 5}));
  EXPECT_EQ(python("import numpy as np; a = np.load('" + f +
                   "'); "
                   "assert a.dtype == np.float32 and a.shape == (3, 2), a; "
                   "assert (a == np.array([[1, 4], [2, 5], [3, 6]])).all(), a; "
                   "z = np.load('" +
                   z + "'); assert z.dtype == np.int8 and z.shape == (0, 5)"),
            0);
  // And tailor reads its own file back, data 64-byte aligned.
  const std::string bytes = npy_bytes(t);
  EXPECT_EQ((bytes.size() - t.nbytes()) % 64, 0u);
  EXPECT_EQ(read_npy(f).to_f32_vector(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Npy, MalformedFilesGetOneLineErrors) {
  TempDir dir;
  const std::string p = dir.file("bad.npy");
  const std::string good = npy_bytes(Tensor::from_f32({2, 2}, std::vector<float>{1, 2, 3, 4}));
  const auto with_header = [](const std::string& dict) {
    std::string out("\x93NUMPY\x01\x00", 8);
    out.push_back(char(dict.size() & 0xff));
    out.push_back(char(dict.size() >> 8));
    return out + dict;
  };
  struct Case {
    std::string bytes, needle;
  };
  const Case cases[] = {
      {"hello", "magic"},
      {good.substr(0, good.size() - 3), "needs 16"},
      {good + "xx", "needs 16"},
      {std::string("\x93NUMPY\x01\x00\xff\xff", 10), "past the end"},
      {std::string("\x93NUMPY\x07\x00\x00\x00", 10), "version 7"},
      {with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }"), "'>f4'"},
      {with_header("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"), "'|O'"},
      {with_header("{'descr': '<f4', 'fortran_order': False, }"), "lacks"},
      {with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }"), "fortran_order"},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"), "non-integer"},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
       "overflows"},
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
       "overflow"},
      {with_header("{'descr': '<f4"), "unterminated"},
      // 2^62 f4 elements fit int64 but not their 2^64 bytes; the message said "needs 0".
      {with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }"),
       "needs more than 2^64"},
  };
  for (const Case& c : cases) {
    testing::write_bytes(p, c.bytes);
    SCOPED_TRACE(c.needle);
    testing::expect_error_naming([&] { read_npy(p); }, p, c.needle);
  }
  testing::expect_error_naming([&] { read_npy(dir.file("missing.npy")); }, dir.file("missing.npy"),
                               "");
}

TEST(Npy, WriteRefusesBf16AndLeavesNoFile) {
  TempDir dir;
  const std::string p = dir.file("x.npy");
  EXPECT_THROW(write_npy(p, Tensor::zeros(DType::bf16, {2})), Error);
  EXPECT_FALSE(std::filesystem::exists(p));
}

}  // namespace
}  // namespace tailor
