#include "test_util.h"

#include <sys/wait.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tailor/core/error.h"

namespace tailor::testing {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("tailor-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void expect_error_naming(const std::function<void()>& fn, const std::string& path,
                         const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one naming " << path << " and mentioning '" << needle
                  << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

CommandResult run_cli(const std::string& args) {
  const std::string cmd = std::string(TAILOR_CLI) + " " + args + " 2>&1";
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string model_path(const std::string& name) {
  return std::string(TAILOR_MODELS_DIR) + "/" + name;
}
std::string fixture_path(const std::string& name) {
  return std::string(TAILOR_FIXTURES_DIR) + "/" + name;
}

void append_matmul(graph::Graph& g, std::string& prev, const std::string& weight) {
  graph::Node n;
  n.op_type = "MatMul";
  n.name = "mm_" + weight;
  n.inputs = {prev, weight};
  n.outputs = {"h_" + weight};
  prev = n.outputs[0];
  g.nodes.push_back(std::move(n));
}

}  // namespace tailor::testing
