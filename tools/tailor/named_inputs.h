// `--input NAME=FILE.npy` options, shared by run and tune.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "format.h"
#include "tailor/core/error.h"
#include "tailor/io/npy.h"

namespace tailor::cli {

/// The tensors of `specs` ("NAME=FILE.npy" each) by input name; `files` gets
/// each name's file (for error messages). Throws tailor::Error naming
/// --input for a malformed spec, the input for one given twice, and the file
/// for one read_npy cannot read.
inline std::map<std::string, Tensor> read_named_inputs(const std::vector<std::string>& specs,
                                                       std::map<std::string, std::string>& files) {
  std::map<std::string, Tensor> feeds;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error("--input", "expected NAME=FILE.npy, got \"" + printable(spec) + "\"");
    const std::string name = spec.substr(0, eq);
    if (feeds.count(name)) throw Error("input '" + printable(name) + "'", "given twice");
    files[name] = spec.substr(eq + 1);
    feeds[name] = read_npy(files[name]);
  }
  return feeds;
}

/// `e` with its source replaced by the file of the input it names ("input
/// 'x'", as the executor names a mistyped or misshapen input), else `e`.
inline Error name_input_file(const Error& e, const std::map<std::string, std::string>& files) {
  for (const auto& [name, file] : files)
    if (e.source() == "input '" + name + "'") return Error(file, e.what());
  return e;
}

}  // namespace tailor::cli
