// tailor run: runs an ONNX model on .npy inputs with tailor's runtime, writes
// the outputs as .npy, and reports latency and memory.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "commands.h"
#include "format.h"
#include "tailor/core/error.h"
#include "tailor/graph/onnx.h"
#include "tailor/graph/passes/fuse_conv.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/io/npy.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/kernels.h"

namespace tailor::cli {

/// A value name as a file name: bytes outside [A-Za-z0-9._-] become '_', and
/// "", "." and ".." become "_" (so a name can never leave the folder).
std::string sanitize_file_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) b /= 1024, ++u;
  return fmt::format("{:.1f} {}", b, units[u]);
}

}  // namespace

void add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run an ONNX model on .npy inputs with tailor's runtime");
  static std::string path, output;
  static std::vector<std::string> inputs;
  static int time_runs = 0, threads = 0;
  static bool profile = false, no_fuse = false;
  cmd->add_option("MODEL", path, "ONNX model")->required();
  cmd->add_option("-i,--input", inputs, "NAME=FILE.npy, one per model input (repeatable)");
  cmd->add_option("-o,--output", output, "Folder to write every output into as <name>.npy");
  cmd->add_option("--time", time_runs, "Timed runs after one warm-up (median, min, max)")
      ->capture_default_str();
  cmd->add_option("--threads", threads, "Threads of the kernels (0: OpenMP's default)")
      ->capture_default_str();
  cmd->add_flag("--profile", profile, "Print the time per op type over the timed runs");
  cmd->add_flag("--no-fuse", no_fuse,
                "Run the graph as imported (no Conv + affine + activation fusion)");
  cmd->callback([] {
    if (time_runs < 0) throw Error("--time", "must be >= 0");
    if (threads < 0) throw Error("--threads", "must be >= 0");
    if (threads > 0) runtime::kernels::set_num_threads(threads);
    graph::Model model = graph::import_onnx(path);
    if (const int n = graph::promote_f16_to_f32(model); n > 0)
      std::cout << "note: f16 tensors and casts computed in f32 (" << n << " changed)\n";
    if (!no_fuse) graph::fuse_conv_epilogues(model);
    runtime::Executor ex(std::move(model));

    std::map<std::string, Tensor> feeds;
    for (const std::string& spec : inputs) {
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error("--input", "expected NAME=FILE.npy, got \"" + printable(spec) + "\"");
      const std::string name = spec.substr(0, eq);
      if (feeds.count(name)) throw Error("input '" + printable(name) + "'", "given twice");
      feeds[name] = read_npy(spec.substr(eq + 1));
    }
    auto t0 = std::chrono::steady_clock::now();
    std::map<std::string, Tensor> outs = ex.run(feeds);
    const double first_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    std::vector<double> ms;
    if (profile) ex.set_profiling(true);
    for (int i = 0; i < time_runs; ++i) {
      outs.clear();
      t0 = std::chrono::steady_clock::now();
      outs = ex.run(feeds);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }

    std::set<std::string> used;
    if (!output.empty()) std::filesystem::create_directories(output);
    for (const std::string& name : ex.output_names()) {
      const Tensor& t = outs.at(name);
      std::string line = fmt::format("output {}: {} {}", printable(name), dtype_name(t.dtype()),
                                     shape_to_string(t.shape()));
      if (!output.empty()) {
        std::string file = sanitize_file_name(name);
        for (int k = 2; used.count(file); ++k)
          file = sanitize_file_name(name) + "_" + std::to_string(k);
        used.insert(file);
        const std::string dest = (std::filesystem::path(output) / (file + ".npy")).string();
        write_npy(dest, t);
        line += " -> " + printable(dest);
      }
      std::cout << line << "\n";
    }
    if (!ms.empty()) {
      std::vector<double> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      const size_t n = sorted.size();
      const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
      std::cout << fmt::format(
          "latency: median {:.3f} ms, min {:.3f} ms, max {:.3f} ms over {} runs "
          "(after 1 warm-up of {:.3f} ms), {} threads\n",
          median, sorted.front(), sorted.back(), n, first_ms, runtime::kernels::num_threads());
    } else {
      std::cout << fmt::format("latency: {:.3f} ms (one cold run; --time N for a median)\n",
                               first_ms);
    }
    if (profile && time_runs > 0) {
      std::vector<std::pair<std::string, std::pair<double, int64_t>>> rows(ex.op_profile().begin(),
                                                                           ex.op_profile().end());
      std::sort(rows.begin(), rows.end(),
                [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
      std::cout << "time per op type (per run):\n";
      for (const auto& [op, v] : rows)
        std::cout << fmt::format("  {:<22} {:>9.3f} ms  {:>5} nodes\n", op, v.first / time_runs,
                                 v.second / time_runs);
    }
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::cout << fmt::format("peak activation memory: {} ({} bytes); peak RSS: {}\n",
                             human_bytes(static_cast<double>(ex.peak_activation_bytes())),
                             with_commas(static_cast<int64_t>(ex.peak_activation_bytes())),
                             human_bytes(static_cast<double>(ru.ru_maxrss) * 1024));
  });
}

}  // namespace tailor::cli
