// NumPy .npy reading and writing (numpy/lib/format.py, versions 1.0–3.0).
#include "tailor/io/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/core/text.h"
#include "tailor/io/atomic_file.h"

namespace tailor {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct DescrEntry {
  const char* descr;  // byte-order character included
  DType dtype;
};
// '|' and '<' are both accepted for one-byte types ('=' means native, little here).
constexpr DescrEntry kDescrs[] = {{"<f4", DType::f32},    {"<f2", DType::f16}, {"<f8", DType::f64},
                                  {"|i1", DType::i8},     {"|u1", DType::u8},  {"<i2", DType::i16},
                                  {"<u2", DType::u16},    {"<i4", DType::i32}, {"<i8", DType::i64},
                                  {"|b1", DType::boolean}};

std::optional<DType> dtype_of_descr(std::string d) {
  if (d.size() == 3 && (d[0] == '=' || d[0] == '<' || d[0] == '|')) {
    for (const auto& e : kDescrs) {
      if (d.substr(1) == std::string(e.descr + 1)) {
        const bool one_byte = e.descr[0] == '|';
        // A one-byte type may carry any of the three; a wider one needs '<' or '='.
        if (one_byte || d[0] != '|') return e.dtype;
      }
    }
  }
  return std::nullopt;
}

const char* descr_of(DType t) {
  for (const auto& e : kDescrs)
    if (e.dtype == t) return e.descr;
  return nullptr;
}

/// The header dict: a Python literal such as
/// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  Header parse() {
    Header h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + escape_control(key, 40) + "' in the header");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      break;
    }
    if (!have_descr || !have_order || !have_shape)
      fail("the header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(source_, what); }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c)
      fail(std::string("malformed header: expected '") + c + "' at byte " + std::to_string(pos_));
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"')
      fail("malformed header: expected a quoted string at byte " + std::to_string(pos_));
    const size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("malformed header: unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("malformed header: 'fortran_order' is neither True nor False");
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++pos_;
        break;
      }
      if (peek() < '0' || peek() > '9') fail("malformed header: 'shape' holds a non-integer");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (INT64_MAX - 9) / 10) fail("a dimension of 'shape' overflows int64");
        v = v * 10 + (peek() - '0');
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      shape.push_back(v);
      if (shape.size() > 64) fail("'shape' has more than 64 dimensions");
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(')');
      break;
    }
    return shape;
  }

  std::string_view s_;
  const std::string& source_;
  size_t pos_ = 0;
};

uint32_t read_le(std::string_view b, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint32_t(uint8_t(b[at + i])) << (8 * i);
  return v;
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& source) {
  return attribute_errors(source, [&] {
    if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view(kMagic, 6))
      throw Error(source, "not an .npy file (no \\x93NUMPY magic)");
    const int major = uint8_t(bytes[6]);
    size_t header_len = 0, header_start = 0;
    if (major == 1) {
      header_len = read_le(bytes, 8, 2);
      header_start = 10;
    } else if (major == 2 || major == 3) {
      if (bytes.size() < 12) throw Error(source, "truncated .npy preamble");
      header_len = read_le(bytes, 8, 4);
      header_start = 12;
    } else {
      throw Error(source, "unsupported .npy format version " + std::to_string(major));
    }
    if (header_len > bytes.size() - header_start)
      throw Error(source, "the header length " + std::to_string(header_len) +
                              " reaches past the end of the file (" + std::to_string(bytes.size()) +
                              " bytes)");
    const Header h = HeaderParser(bytes.substr(header_start, header_len), source).parse();
    const auto dtype = dtype_of_descr(h.descr);
    if (!dtype)
      throw Error(source, "unsupported dtype '" + escape_control(h.descr, 40) +
                              "' (tailor reads little-endian f2/f4/f8, i1/i2/i4/i8, u1/u2, b1)");
    const int64_t numel = shape_numel(h.shape);
    const size_t data_start = header_start + header_len;
    const size_t have = bytes.size() - data_start;
    const size_t esize = dtype_size(*dtype);
    if (static_cast<uint64_t>(numel) > have / esize || numel * esize != have)
      throw Error(source, "the data holds " + std::to_string(have) + " bytes, shape " +
                              shape_to_string(h.shape) + " of " + h.descr + " needs " +
                              // 128-bit: numel · esize may pass 2^64 (it printed "needs 0").
                              (static_cast<unsigned __int128>(numel) * esize > UINT64_MAX
                                   ? std::string("more than 2^64")
                                   : std::to_string(static_cast<uint64_t>(numel) * esize)));
    Shape stored = h.shape;
    if (h.fortran_order) stored.assign(h.shape.rbegin(), h.shape.rend());
    Tensor t = Tensor::zeros(*dtype, stored);
    if (have) std::memcpy(t.mutable_raw(), bytes.data() + data_start, have);
    if (*dtype == DType::boolean) {
      uint8_t* p = reinterpret_cast<uint8_t*>(t.mutable_raw());
      for (int64_t i = 0; i < numel; ++i)
        if (p[i] > 1) throw Error(source, "a bool element is neither 0 nor 1");
    }
    if (!h.fortran_order || h.shape.size() < 2) return t;
    // Column-major data is row-major of the reversed shape: reverse the axes back.
    Tensor v = t;
    for (size_t i = 0, n = stored.size(); i < n / 2; ++i) v = v.transpose(i, n - 1 - i);
    return v.clone();
  });
}

Tensor read_npy(const std::string& path) {
  const std::string bytes = read_file(path);
  return parse_npy(bytes, path);
}

std::string npy_bytes(const Tensor& t) {
  const char* descr = descr_of(t.dtype());
  if (!descr)
    throw Error("", "cannot write " + std::string(dtype_name(t.dtype())) +
                        " to .npy (NumPy has no such type)");
  std::string shape = "(";
  for (size_t i = 0; i < t.rank(); ++i) {
    shape += std::to_string(t.dim(i));
    shape += (t.rank() == 1 || i + 1 < t.rank()) ? "," : "";
    if (i + 1 < t.rank()) shape += " ";
  }
  shape += ")";
  std::string dict =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and a newline so the data starts 64-byte aligned.
  size_t preamble = 10;
  size_t total = preamble + dict.size() + 1;
  int major = 1;
  if ((total + 63) / 64 * 64 - preamble > 65535) {
    major = 2;
    preamble = 12;
    total = preamble + dict.size() + 1;
  }
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  const size_t header_len = dict.size();
  std::string out(kMagic, 6);
  out.push_back(char(major));
  out.push_back(0);
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out.push_back(char((header_len >> (8 * i)) & 0xff));
  out += dict;
  const Tensor c = t.contiguous();
  out.append(reinterpret_cast<const char*>(c.raw()), c.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  const std::string bytes = attribute_errors(path, [&] { return npy_bytes(t); });
  write_file_atomic(path, bytes);
}

}  // namespace tailor
