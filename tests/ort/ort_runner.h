// The onnxruntime reference from C++ tests: runs a model through
// tools/ort/run.js (onnxruntime-node, CPU execution provider, installed into
// .ort/ by scripts/install-ort.sh) on tensors, and returns its outputs.
// Header-only so that any test can include it.
//
//   if (auto why = ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
//   auto out = run_ort(model_path("m.onnx"), {{"x", x}});   // out["y"]
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/io/npy.h"
#include "test_util.h"

namespace tailor::testing {

/// tools/ort/run.js in the source tree.
inline std::string ort_runner_script() {
  return std::string(TAILOR_SOURCE_DIR) + "/tools/ort/run.js";
}

/// Empty when the reference can run; otherwise why not (a message for GTEST_SKIP:
/// node missing, or onnxruntime-node not installed into .ort/).
inline std::string ort_unavailable() {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    return "onnxruntime reference skipped: node not found (scripts/install-deps.sh)";
  }
  const std::string pkg =
      std::string(TAILOR_SOURCE_DIR) + "/.ort/node_modules/onnxruntime-node/package.json";
  if (!std::filesystem::exists(pkg)) {
    return "onnxruntime reference skipped: onnxruntime-node not installed (scripts/install-ort.sh)";
  }
  return {};
}

/// Runs `cmd` in a shell; exit code and stdout+stderr.
inline CommandResult run_shell(const std::string& cmd) {
  CommandResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// Single-quotes `s` for the shell.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// The file name run.js gives output `name`: characters other than [A-Za-z0-9._-] become '_'.
inline std::string ort_output_file_name(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return s + ".npy";
}

/// Runs `model` in onnxruntime (CPU, `threads` intra-op threads) on `inputs`
/// (name, tensor of f32/f16/i64/i32/u8/bool) and returns every output by name.
/// Throws std::runtime_error with the runner's output when it fails.
inline std::map<std::string, Tensor> run_ort(
    const std::string& model, const std::vector<std::pair<std::string, Tensor>>& inputs,
    int threads = 1) {
  TempDir dir;
  std::string cmd = "node " + shell_quote(ort_runner_script()) + " " + shell_quote(model);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string f = dir.file("in" + std::to_string(i) + ".npy");
    write_npy(f, inputs[i].second);
    cmd += " --input " + shell_quote(inputs[i].first + "=" + f);
  }
  const std::string out_dir = dir.file("out");
  cmd += " --output " + shell_quote(out_dir) + " --threads " + std::to_string(threads);
  const CommandResult r = run_shell(cmd);
  if (r.exit_code != 0) {
    throw std::runtime_error("onnxruntime runner failed (exit " + std::to_string(r.exit_code) +
                             "): " + r.output);
  }
  std::map<std::string, Tensor> outputs;
  std::istringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("output ", 0) != 0) continue;
    const std::string rest = line.substr(7);
    const std::string name = rest.substr(0, rest.find(' '));
    outputs[name] = read_npy(out_dir + "/" + ort_output_file_name(name));
  }
  return outputs;
}

/// Runs `model` once per element of `runs` (each: name, tensor for every model
/// input, the same names in every run) in one onnxruntime process, so the model
/// loads once; returns each run's outputs by name, in order. Throws
/// std::runtime_error with the runner's output when it fails.
inline std::vector<std::map<std::string, Tensor>> run_ort_batch(
    const std::string& model, const std::vector<std::vector<std::pair<std::string, Tensor>>>& runs,
    int threads = 1) {
  if (runs.empty()) return {};
  TempDir dir;
  std::string cmd = "node " + shell_quote(ort_runner_script()) + " " + shell_quote(model);
  const size_t n_inputs = runs[0].size();
  for (size_t i = 0; i < n_inputs; ++i) {
    const std::string in_dir = dir.file("in" + std::to_string(i));
    std::filesystem::create_directories(in_dir);
    for (size_t r = 0; r < runs.size(); ++r) {
      if (runs[r].size() != n_inputs || runs[r][i].first != runs[0][i].first) {
        throw std::runtime_error("run_ort_batch: every run must give the same inputs in order");
      }
      char stem[32];
      std::snprintf(stem, sizeof stem, "%08zu", r);
      write_npy(in_dir + "/" + stem + ".npy", runs[r][i].second);
    }
    cmd += " --input " + shell_quote(runs[0][i].first + "=" + in_dir);
  }
  const std::string out_dir = dir.file("out");
  cmd += " --output " + shell_quote(out_dir) + " --threads " + std::to_string(threads);
  const CommandResult res = run_shell(cmd);
  if (res.exit_code != 0) {
    throw std::runtime_error("onnxruntime runner failed (exit " + std::to_string(res.exit_code) +
                             "): " + res.output);
  }
  std::vector<std::map<std::string, Tensor>> outputs(runs.size());
  std::istringstream lines(res.output);
  std::string line, stem;
  size_t run = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("run ", 0) == 0) {
      stem = line.substr(4);
      run = std::stoul(stem);
    } else if (line.rfind("output ", 0) == 0 && !stem.empty()) {
      const std::string rest = line.substr(7);
      const std::string name = rest.substr(0, rest.find(' '));
      outputs.at(run)[name] = read_npy(out_dir + "/" + stem + "/" + ort_output_file_name(name));
    }
  }
  for (size_t r = 0; r < runs.size(); ++r) {
    if (outputs[r].empty())
      throw std::runtime_error("run_ort_batch: no outputs for run " + std::to_string(r));
  }
  return outputs;
}

}  // namespace tailor::testing
