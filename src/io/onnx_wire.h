// The ONNX protobuf wire format read in place: a model's structure without its
// large tensor payloads, each payload turned into a reference to its bytes in
// the file, so that a model is never parsed (or held) whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tailor::detail {

/// Rewrites the serialized onnx.ModelProto `file` (the bytes of the file
/// named `self_location`, relative to its own folder) so that every
/// TensorProto the reader loads — graph initializers and the `t` of node
/// attributes (Constant values), in subgraphs too — whose payload is at least
/// `min_bytes` long carries no payload but external data pointing at the
/// payload's bytes in `file` itself: `location` = self_location, `offset`,
/// `length`, data_location = EXTERNAL. The payload is raw_data, or a packed
/// float_data (FLOAT) or double_data (DOUBLE), whose wire bytes are the
/// little-endian values. A tensor that already has external data, or more than
/// one payload field, is copied unchanged (the reader then reports it). Every
/// other field is copied byte for byte.
///
/// Reads tags and lengths with protobuf's google::protobuf::io::CodedInputStream
/// over windows of the mapping (so a file or a message over 2 GiB is walked
/// too; payloads are skipped, never read) and writes with CodedOutputStream.
/// Throws tailor::Error (message without the file name; the caller attributes
/// it) for a truncated field, a length that runs past its enclosing message, a
/// field number 0, a group or unknown wire type, or messages nested deeper than 100.
std::string strip_onnx_payloads(std::span<const std::byte> file, const std::string& self_location,
                                size_t min_bytes);

}  // namespace tailor::detail
