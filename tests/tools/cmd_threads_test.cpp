// `--threads N` bounds the threads the `tailor` process holds: OpenMP's team,
// the profiler's workers and OpenBLAS's own pool (Debian's pthread variant
// starts one thread per core when it is loaded unless told otherwise). The
// test runs the command and counts /proc/PID/task while it runs.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "../runtime/op_test_util.h"
#include "tailor/core/rng.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

extern char** environ;

namespace tailor::testing {
namespace {

/// y = MatMul(Relu(MatMul(x, w1)), w2), x f32 [64, 256], w1 and w2 [256, 256]:
/// two layers for the profiler, two sgemm-sized products for the runtime.
std::string two_layer_model(const TempDir& dir) {
  graph::Model m;
  m.opset = 13;
  m.graph.inputs = {"x"};
  m.graph.types["x"] = graph::ValueType{DType::f32, graph::sym_shape_of({64, 256})};
  Rng rng(17);
  for (const char* name : {"w1", "w2"}) {
    std::vector<float> v(256 * 256);
    for (float& x : v) x = static_cast<float>(rng.uniform(-0.1, 0.1));
    m.graph.add_initializer(name, f32({256, 256}, v));
  }
  auto node = [](const char* op, const char* name, std::vector<std::string> in, const char* out) {
    graph::Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = std::move(in);
    n.outputs = {out};
    return n;
  };
  m.graph.nodes = {node("MatMul", "mm1", {"x", "w1"}, "h"), node("Relu", "relu", {"h"}, "r"),
                   node("MatMul", "mm2", {"r", "w2"}, "y")};
  m.graph.outputs = {"y"};
  m.graph.types["y"] = graph::ValueType{DType::f32, graph::sym_shape_of({64, 256})};
  const std::string path = dir.file("two_layers.onnx");
  graph::write_onnx(m, path);
  return path;
}

int count_entries(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  int n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Observed {
  int exit_code = -1;
  int max_threads = 0;  ///< most tasks seen at once in the process's final image
  std::string output;
};

/// Runs `tailor args` with the environment a user would have (no
/// OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS; a passive
/// OpenMP wait policy) and samples /proc/PID/task until it exits. tailor may
/// execute itself again to fix its environment (main.cpp); the first image
/// lives a few milliseconds, so samples are grouped by /proc/PID/environ and
/// the count is that of the image that ran the command (the last one seen).
Observed run_counting_threads(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key != "OPENBLAS_NUM_THREADS" && key != "GOTO_NUM_THREADS" && key != "OMP_NUM_THREADS" &&
        key != "OMP_WAIT_POLICY")
      env.push_back(kv);
  }
  env.push_back("OMP_WAIT_POLICY=passive");
  std::vector<std::string> argv_s{TAILOR_CLI};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  const std::string log = dir.file("output.txt");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  Observed o;
  const int rc = ::posix_spawn(&pid, TAILOR_CLI, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    o.output = "posix_spawn failed";
    return o;
  }
  const std::string proc = "/proc/" + std::to_string(pid);
  std::map<std::string, int> most;  // environment block → most tasks seen
  std::string last;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    const std::string environment = read_all(proc + "/environ");
    const int tasks = count_entries(proc + "/task");
    if (!environment.empty() && tasks > 0) {
      most[environment] = std::max(most[environment], tasks);
      last = environment;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.max_threads = last.empty() ? 0 : most[last];
  o.output = read_all(log);
  return o;
}

TEST(ThreadsCli, ProfileHoldsNoMoreThreadsThanAsked) {
  TempDir dir;
  const std::string model = two_layer_model(dir);
  for (int n : {1, 2}) {
    const Observed o =
        run_counting_threads(dir, {"profile", model, "--schemes", "int8,lowrank", "--threads",
                                   std::to_string(n), "-o", dir.file("profile.json")});
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_GE(o.max_threads, 1) << "no sample of the running process";
    EXPECT_LE(o.max_threads, n) << "--threads " << n << "\n" << o.output;
  }
}

TEST(ThreadsCli, RunHoldsNoMoreThreadsThanAsked) {
  TempDir dir;
  const std::string model = two_layer_model(dir);
  std::vector<float> x(64 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
  write_npy(dir.file("x.npy"), f32({64, 256}, x));
  for (int n : {1, 2}) {
    const Observed o = run_counting_threads(dir, {"run", model, "--input", "x=" + dir.file("x.npy"),
                                                  "--time", "40", "--threads", std::to_string(n)});
    ASSERT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find(std::to_string(n) + " threads"), std::string::npos) << o.output;
    EXPECT_GE(o.max_threads, 1) << "no sample of the running process";
    EXPECT_LE(o.max_threads, n) << "--threads " << n << "\n" << o.output;
  }
}

}  // namespace
}  // namespace tailor::testing
