// ONNX wire-format walk (onnx.proto field numbers; protobuf encoding:
// https://protobuf.dev/programming-guides/encoding/).
#include "onnx_wire.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <string_view>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/core/onnx_dtype.h"

namespace tailor::detail {
namespace {

namespace pb = google::protobuf;
using WFL = pb::internal::WireFormatLite;

/// The messages whose fields the walk follows.
enum class Msg { model, graph, node, attribute, tensor, none };

/// onnx.proto: ModelProto.graph = 7; GraphProto.node = 1, initializer = 5;
/// NodeProto.attribute = 5; AttributeProto.t = 5, g = 6, graphs = 11.
Msg child_of(Msg parent, uint32_t field) {
  switch (parent) {
    case Msg::model:
      return field == 7 ? Msg::graph : Msg::none;
    case Msg::graph:
      return field == 1 ? Msg::node : field == 5 ? Msg::tensor : Msg::none;
    case Msg::node:
      return field == 5 ? Msg::attribute : Msg::none;
    case Msg::attribute:
      return field == 5 ? Msg::tensor : (field == 6 || field == 11) ? Msg::graph : Msg::none;
    default:
      return Msg::none;
  }
}

const char* msg_name(Msg m) {
  switch (m) {
    case Msg::model:
      return "ModelProto";
    case Msg::graph:
      return "GraphProto";
    case Msg::node:
      return "NodeProto";
    case Msg::attribute:
      return "AttributeProto";
    case Msg::tensor:
      return "TensorProto";
    default:
      return "message";
  }
}

/// One field of a message: its bytes [begin, end) in the file and, for a
/// length-delimited field, its payload [payload, end).
struct Field {
  uint32_t number = 0;
  WFL::WireType type = WFL::WIRETYPE_VARINT;
  uint64_t value = 0;  // varint value
  size_t begin = 0, payload = 0, end = 0;
};

class Walker {
 public:
  Walker(std::span<const std::byte> file, std::string self, size_t min_bytes)
      : base_(reinterpret_cast<const uint8_t*>(file.data())),
        size_(file.size()),
        self_(std::move(self)),
        min_bytes_(min_bytes) {}

  std::string message(size_t begin, size_t end, Msg kind, int depth) {
    if (depth > 100)
      throw Error("ONNX wire format",
                  fmt::format("messages nested deeper than 100 at byte {}", begin));
    if (kind == Msg::tensor) return tensor(begin, end);
    std::string out;
    for (size_t pos = begin; pos < end;) {
      const Field f = read_field(pos, end, kind);
      const Msg child =
          f.type == WFL::WIRETYPE_LENGTH_DELIMITED ? child_of(kind, f.number) : Msg::none;
      if (child == Msg::none) {
        append_bytes(out, f.begin, f.end);
      } else {
        const std::string inner = message(f.payload, f.end, child, depth + 1);
        append_delimited(out, f.number, inner);
      }
      pos = f.end;
    }
    return out;
  }

 private:
  /// Reads the field at `pos` of a message ending at `end`. Only the tag and
  /// the length (or the scalar) are read, through a CodedInputStream over a
  /// window of at most 32 bytes; a payload is skipped by arithmetic.
  Field read_field(size_t pos, size_t end, Msg kind) const {
    const size_t window = std::min<size_t>(end - pos, 32);
    pb::io::CodedInputStream in(base_ + pos, static_cast<int>(window));
    Field f;
    f.begin = pos;
    const uint32_t tag = in.ReadTagNoLastTag();
    const auto bad = [&](const std::string& what) {
      return Error("ONNX wire format",
                   fmt::format("{} field at byte {}: {}", msg_name(kind), pos, what));
    };
    if (tag == 0) throw bad("truncated or invalid tag (or field number 0)");
    f.number = WFL::GetTagFieldNumber(tag);
    f.type = WFL::GetTagWireType(tag);
    if (f.number == 0) throw bad("field number 0");
    switch (f.type) {
      case WFL::WIRETYPE_VARINT:
        if (!in.ReadVarint64(&f.value))
          throw bad(fmt::format("field {}: truncated varint", f.number));
        f.end = pos + static_cast<size_t>(in.CurrentPosition());
        break;
      case WFL::WIRETYPE_FIXED64: {
        uint64_t v = 0;
        if (!in.ReadLittleEndian64(&v))
          throw bad(fmt::format("field {}: truncated 64-bit value", f.number));
        f.end = pos + static_cast<size_t>(in.CurrentPosition());
        break;
      }
      case WFL::WIRETYPE_FIXED32: {
        uint32_t v = 0;
        if (!in.ReadLittleEndian32(&v))
          throw bad(fmt::format("field {}: truncated 32-bit value", f.number));
        f.end = pos + static_cast<size_t>(in.CurrentPosition());
        break;
      }
      case WFL::WIRETYPE_LENGTH_DELIMITED: {
        uint64_t len = 0;
        if (!in.ReadVarint64(&len)) throw bad(fmt::format("field {}: truncated length", f.number));
        f.payload = pos + static_cast<size_t>(in.CurrentPosition());
        if (len > end - f.payload)
          throw bad(
              fmt::format("field {} declares {} bytes, but only {} remain in its message "
                          "(truncated file or wrong length)",
                          f.number, len, end - f.payload));
        f.end = f.payload + static_cast<size_t>(len);
        break;
      }
      default:
        throw bad(
            fmt::format("field {} has wire type {} (groups and unknown types are not "
                        "ONNX)",
                        f.number, static_cast<int>(f.type)));
    }
    return f;
  }

  /// A TensorProto: copied, with one large payload turned into external data
  /// pointing into the file (see strip_onnx_payloads).
  std::string tensor(size_t begin, size_t end) {
    // onnx.proto TensorProto: data_type = 2, float_data = 4, raw_data = 9,
    // double_data = 10, external_data = 13, data_location = 14.
    std::vector<Field> fields;
    int64_t data_type = 0;
    bool external = false;
    int payloads = 0;
    std::optional<size_t> raw, packed_float, packed_double;
    for (size_t pos = begin; pos < end;) {
      const Field f = read_field(pos, end, Msg::tensor);
      const bool delimited = f.type == WFL::WIRETYPE_LENGTH_DELIMITED;
      if (f.number == 2 && f.type == WFL::WIRETYPE_VARINT)
        data_type = static_cast<int64_t>(f.value);
      if (f.number == 13 || f.number == 14) external = true;
      if (f.number == 4 || f.number == 9 || f.number == 10) ++payloads;
      if (delimited && f.number == 9) raw = fields.size();
      if (delimited && f.number == 4) packed_float = fields.size();
      if (delimited && f.number == 10) packed_double = fields.size();
      fields.push_back(f);
      pos = f.end;
    }
    // A packed float_data / double_data is the little-endian values, as raw_data.
    std::optional<size_t> moved = raw;
    if (!moved && data_type == onnx_of_dtype(DType::f32)) moved = packed_float;
    if (!moved && data_type == onnx_of_dtype(DType::f64)) moved = packed_double;
    if (external || payloads != 1 || !moved ||
        fields[*moved].end - fields[*moved].payload < min_bytes_) {
      std::string out;
      append_bytes(out, begin, end);
      return out;
    }
    std::string out;
    for (size_t i = 0; i < fields.size(); ++i)
      if (i != *moved) append_bytes(out, fields[i].begin, fields[i].end);
    const Field& p = fields[*moved];
    append_entry(out, "location", self_);
    append_entry(out, "offset", std::to_string(p.payload));
    append_entry(out, "length", std::to_string(p.end - p.payload));
    {
      pb::io::StringOutputStream sink(&out);
      pb::io::CodedOutputStream o(&sink);
      o.WriteTag(WFL::MakeTag(14, WFL::WIRETYPE_VARINT));
      o.WriteVarint32(1);  // DataLocation.EXTERNAL
    }
    return out;
  }

  void append_bytes(std::string& out, size_t begin, size_t end) const {
    out.append(reinterpret_cast<const char*>(base_ + begin), end - begin);
  }

  static void append_delimited(std::string& out, uint32_t field, std::string_view payload) {
    if (payload.size() > static_cast<size_t>(INT_MAX))
      throw Error("ONNX wire format",
                  fmt::format("a message of {} bytes remains after the tensor payloads are set "
                              "aside; protobuf reads at most 2 GiB",
                              payload.size()));
    pb::io::StringOutputStream sink(&out);
    pb::io::CodedOutputStream o(&sink);
    o.WriteTag(WFL::MakeTag(static_cast<int>(field), WFL::WIRETYPE_LENGTH_DELIMITED));
    o.WriteVarint64(payload.size());
    o.WriteRaw(payload.data(), static_cast<int>(payload.size()));
  }

  /// TensorProto.external_data (13): StringStringEntryProto {key = 1, value = 2}.
  static void append_entry(std::string& out, std::string_view key, std::string_view value) {
    std::string entry;
    append_delimited(entry, 1, key);
    append_delimited(entry, 2, value);
    append_delimited(out, 13, entry);
  }

  const uint8_t* base_;
  size_t size_;
  std::string self_;
  size_t min_bytes_;
};

}  // namespace

std::string strip_onnx_payloads(std::span<const std::byte> file, const std::string& self_location,
                                size_t min_bytes) {
  Walker w(file, self_location, min_bytes);
  return w.message(0, file.size(), Msg::model, 0);
}

}  // namespace tailor::detail
