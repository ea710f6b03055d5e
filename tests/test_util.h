// Helpers shared by the tests: temporary folders, the fixture paths, running the CLI.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "tailor/graph/graph.h"

namespace tailor::testing {

/// A fresh empty folder under the system temp dir, removed when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// Writes `bytes` to `path` (plain, non-atomic: test input).
void write_bytes(const std::string& path, const std::string& bytes);

/// Expects `fn` to throw tailor::Error whose one-line message names `path`
/// and contains `needle` (a gtest failure otherwise).
void expect_error_naming(const std::function<void()>& fn, const std::string& path,
                         const std::string& needle);

/// Result of running a command.
struct CommandResult {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr together
};

/// Runs the `tailor` CLI with `args` (shell-quoted by the caller as needed).
CommandResult run_cli(const std::string& args);

/// Path of a model fetched by scripts/fetch-models.sh (models/NAME).
std::string model_path(const std::string& name);
/// Path of a committed fixture (tests/fixtures/NAME).
std::string fixture_path(const std::string& name);

/// Appends node "mm_WEIGHT": MatMul(prev, weight) -> "h_WEIGHT" to `g`, and
/// sets `prev` to its output (a chain of MatMuls, one per weight).
void append_matmul(graph::Graph& g, std::string& prev, const std::string& weight);

}  // namespace tailor::testing
