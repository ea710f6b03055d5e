// JSON as tailor reads its own files (profile.json, plan.json, decision
// records): nlohmann::json, with a key repeated within one object refused.
// RFC 8259 §4 leaves repeated names' meaning to the reader; nlohmann keeps
// the last silently, so an edited file could carry two "layers" and be read
// by the one the editor did not mean.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tailor/core/error.h"

namespace tailor {

/// nlohmann::json::parse of `text`, throwing Error(source, "key \"K\" appears
/// twice in one object") at a repeated key; a syntax error propagates as
/// nlohmann::json::parse_error, for the caller's message.
template <class Json = nlohmann::json>
Json parse_json_unique_keys(const std::string& text, const std::string& source) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  const typename Json::parser_callback_t check = [&](int, typename Json::parse_event_t event,
                                                     Json& parsed) {
    using E = typename Json::parse_event_t;
    if (event == E::object_start) {
      keys.emplace_back();
    } else if (event == E::object_end) {
      keys.pop_back();
    } else if (event == E::key) {
      const std::string k = parsed.template get<std::string>();
      if (!keys.back().insert(k).second)
        throw Error(source, "key \"" + k + "\" appears twice in one object");
    }
    return true;
  };
  return Json::parse(text, check);
}

}  // namespace tailor
