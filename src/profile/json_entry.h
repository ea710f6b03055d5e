// The JSON files of the profile module's own formats (a profile cache entry,
// a profile shard): parsed whole, fields looked up by name, and every error
// naming the file. One reader for both (profile_cache.cpp, shard.cpp).
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tailor/core/error.h"

namespace tailor::detail {

/// A parsed JSON document read from `path`, of the format `kind` names
/// ("tailor profile shard"). Throws Error(path, "not valid JSON: …") on a
/// parse error.
class JsonEntry {
 public:
  using OJson = nlohmann::ordered_json;

  JsonEntry(const std::string& text, std::string path, std::string kind)
      : path_(std::move(path)), kind_(std::move(kind)) {
    try {
      j_ = OJson::parse(text);
    } catch (const OJson::parse_error& e) {
      throw Error(path_, std::string("not valid JSON: ") + e.what());
    }
  }

  /// The member `name`. Throws Error(path, "not a KIND: missing field "NAME"")
  /// when the document is not an object or lacks it.
  const OJson& field(const char* name) const {
    if (!j_.is_object() || !j_.contains(name))
      throw Error(path_, fmt::format("not a {}: missing field \"{}\"", kind_, name));
    return j_[name];
  }

  /// Throws Error(path, "not a KIND of version V") unless the fields
  /// "format" and "version" are `format` and `version`.
  void check_format(const char* format, int version) const {
    if (field("format") != format || field("version") != version)
      throw Error(path_, fmt::format("not a {} of version {}", kind_, version));
  }

 private:
  std::string path_, kind_;
  OJson j_;
};

}  // namespace tailor::detail
