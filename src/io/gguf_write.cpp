// GGUF writer (version 3, little-endian), the layout gguf.cpp reads (see its
// header comment): metadata key/values, tensor infos {name, n_dims, ne[]
// (innermost first), ggml_type, offset}, padding to 32, tensor data each at a
// multiple of 32 from the data section's start.
#include <fmt/format.h>

#include <cstring>
#include <ostream>
#include <set>
#include <type_traits>

#include "io/gguf_value_types.h"
#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/gguf.h"

namespace tailor {
namespace {

constexpr uint64_t kAlignment = 32;

using namespace gguf_value;  // NOLINT: the type codes read as in the spec

struct Out {
  std::string bytes;
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    bytes += s;
  }
  void pad() { bytes.append((kAlignment - bytes.size() % kAlignment) % kAlignment, '\0'); }
};

void put_value(Out& o, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, uint32_t>) {
          o.put(kU32);
          o.put(x);
        } else if constexpr (std::is_same_v<T, int32_t>) {
          o.put(kI32);
          o.put(x);
        } else if constexpr (std::is_same_v<T, float>) {
          o.put(kF32);
          o.put(x);
        } else if constexpr (std::is_same_v<T, bool>) {
          o.put(kBool);
          o.put<uint8_t>(x ? 1 : 0);
        } else if constexpr (std::is_same_v<T, std::string>) {
          o.put(kString);
          o.str(x);
        } else {
          o.put(kArray);
          using E = typename T::value_type;
          o.put(std::is_same_v<E, std::string> ? kString : std::is_same_v<E, float> ? kF32 : kI32);
          o.put<uint64_t>(x.size());
          for (const E& e : x) {
            if constexpr (std::is_same_v<E, std::string>)
              o.str(e);
            else
              o.put(e);
          }
        }
      },
      v);
}

}  // namespace

uint64_t ggml_nbytes(GgmlType type, const Shape& shape, const std::string& name) {
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
  switch (type) {
    case GgmlType::f32:
      return 4 * numel;
    case GgmlType::f16:
    case GgmlType::bf16:
      return 2 * numel;
    case GgmlType::q4_0:
    case GgmlType::q8_0:
      if (shape.empty() || shape.back() % 32 != 0)
        throw Error(name, fmt::format("{} rows of {} elements are not whole blocks of 32",
                                      ggml_type_name(type), shape.empty() ? 0 : shape.back()));
      return numel / 32 * (type == GgmlType::q4_0 ? 18 : 34);
  }
  throw Error(name, fmt::format("ggml type {} is not written", static_cast<uint32_t>(type)));
}

void write_gguf(const std::string& path,
                const std::vector<std::pair<std::string, GgufValue>>& metadata,
                const std::vector<GgufTensor>& tensors) {
  Out o;
  o.bytes = "GGUF";
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors.size());
  o.put<uint64_t>(metadata.size());
  std::set<std::string> keys, names;
  for (const auto& [key, value] : metadata) {
    if (!keys.insert(key).second) throw Error(path, "duplicate GGUF metadata key '" + key + "'");
    o.str(key);
    put_value(o, value);
  }
  uint64_t offset = 0;
  for (const GgufTensor& t : tensors) {
    if (!names.insert(t.name).second) throw Error(path, "duplicate GGUF tensor '" + t.name + "'");
    if (t.shape.empty() || t.shape.size() > 4)
      throw Error(path, fmt::format("tensor '{}' has rank {} (1 to 4 are written)", t.name,
                                    t.shape.size()));
    const uint64_t n = ggml_nbytes(t.type, t.shape, path + ": tensor '" + t.name + "'");
    if (t.data.dtype() != DType::u8 || t.data.nbytes() != n)
      throw Error(path,
                  fmt::format("tensor '{}' holds {} {} bytes, its type {} and shape {} take {}",
                              t.name, t.data.nbytes(), dtype_name(t.data.dtype()),
                              ggml_type_name(t.type), shape_to_string(t.shape), n));
    o.str(t.name);
    o.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (size_t i = t.shape.size(); i-- > 0;) o.put<uint64_t>(static_cast<uint64_t>(t.shape[i]));
    o.put<uint32_t>(static_cast<uint32_t>(t.type));
    o.put<uint64_t>(offset);
    offset += (n + kAlignment - 1) / kAlignment * kAlignment;
  }
  o.pad();
  // Header in memory, tensor data streamed from the tensors themselves.
  write_file_atomic(path, [&](std::ostream& f) {
    f.write(o.bytes.data(), static_cast<std::streamsize>(o.bytes.size()));
    static constexpr char zeros[kAlignment] = {};
    for (const GgufTensor& t : tensors) {
      const Tensor c = t.data.contiguous();
      f.write(reinterpret_cast<const char*>(c.raw()), static_cast<std::streamsize>(c.nbytes()));
      f.write(zeros,
              static_cast<std::streamsize>((kAlignment - c.nbytes() % kAlignment) % kAlignment));
    }
  });
}

}  // namespace tailor
