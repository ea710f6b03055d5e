// tailor run: runs an ONNX model on .npy inputs with tailor's runtime, writes
// the outputs as .npy, and reports latency and memory.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "commands.h"
#include "format.h"
#include "named_inputs.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/io/load_model.h"
#include "tailor/io/npy.h"
#include "tailor/linalg/threads.h"
#include "tailor/llm/llama.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/kernels.h"
#include "tailor/runtime/pass_options.h"
#include "tailor/tune/tune.h"

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
  auto* cmd = app.add_subcommand("run",
                                 "Run a model (ONNX, or a llama checkpoint as its decoder graph) "
                                 "on .npy inputs with tailor's runtime");
  static std::string path, output, tuning;
  static std::vector<std::string> inputs;
  static int time_runs = 0, threads = 0;
  static bool profile = false, no_fuse = false;
  static std::string passes = "all";
  cmd->add_option("MODEL", path,
                  "Model: ONNX, safetensors (file or HF folder), GGUF or llama2.c .bin; it must "
                  "hold a graph")
      ->required();
  cmd->add_option("-i,--input", inputs,
                  "NAME=FILE.npy, one per model input (repeatable); a KV-cache past the "
                  "command line omits (past*, f32, one symbolic dim: the past length) is fed "
                  "empty, e.g. [1, kv_heads, 0, head_dim], as a decoder's first step");
  cmd->add_option("-o,--output", output, "Folder to write every output into as <name>.npy");
  cmd->add_option("--time", time_runs, "Timed runs after one warm-up (median, min, max)")
      ->capture_default_str();
  cmd->add_option("--threads", threads, "Threads of the kernels (0: OpenMP's default)")
      ->capture_default_str();
  cmd->add_flag(
      "--profile", profile,
      "Print each pass's time (with --tuning: the tuned graph's node count instead), and the "
      "time per op type and the slowest nodes over the timed runs");
  cmd->add_option("--passes", passes,
                  "Graph passes before running: all, none, or a comma-separated list of "
                  "fold,simplify,strength,cse,hoist,fuse,layout,dce (run in pipeline order)")
      ->capture_default_str();
  cmd->add_flag("--no-fuse", no_fuse, "Leave the fuse pass out of --passes");
  auto* passes_opt = cmd->get_option("--passes");
  auto* no_fuse_opt = cmd->get_option("--no-fuse");
  cmd->add_option(
      "--tuning", tuning,
      "Apply the chosen decisions of a tailor tune decisions.json (instead of --passes)");
  cmd->callback([passes_opt, no_fuse_opt] {
    if (time_runs < 0) throw Error("--time", "must be >= 0");
    // The record's decisions include the passes: a pass list beside them
    // would be silently overridden.
    if (!tuning.empty())
      for (const CLI::Option* opt : {passes_opt, no_fuse_opt})
        if (opt->count() > 0)
          throw Error(opt->get_name(),
                      "cannot be combined with --tuning, whose record sets the passes");
    linalg::set_threads(threads);
    graph::Model model = load_runnable_model(path);
    std::vector<std::string> pass_names =
        tuning.empty() ? graph::parse_pass_list(passes) : std::vector<std::string>{};
    // Compressed weights' forms (f16 scales) become compressed ops before the
    // f16 promotion would change them, wherever the passes would fold them.
    if (!tuning.empty() ||
        std::find(pass_names.begin(), pass_names.end(), "fold") != pass_names.end())
      model = graph::recognise_compressed_weights(std::move(model), {});
    if (const int n = graph::promote_f16_to_f32(model); n > 0)
      std::cout << "note: f16 tensors and casts computed in f32 (" << n << " changed)\n";
    if (no_fuse) std::erase(pass_names, std::string("fuse"));
    std::string
        pass_line;  // printed with the outputs, once they are written (errors stay one line)
    if (!tuning.empty()) {
      const size_t before = model.graph.nodes.size();
      const tune::TuneRecord record = tune::read_record(tuning);
      tune::AppliedConfiguration tuned = [&] {
        try {
          return tune::apply_record(model, record);
        } catch (const Error& e) {  // the record does not fit this model: name both
          throw Error(tuning, e.what());
        }
      }();
      model = std::move(tuned.model);
      if (threads == 0) linalg::set_threads(tuned.threads);
      pass_line = fmt::format("tuning: {} ({} -> {} nodes)\n", printable(tuning), before,
                              model.graph.nodes.size());
    }
    if (!pass_names.empty()) {
      const size_t before = model.graph.nodes.size();
      std::vector<graph::PassTime> times;
      model =
          graph::run_passes(std::move(model), pass_names, runtime::default_pass_options(), &times);
      std::string list;
      for (const auto& n : pass_names) list += (list.empty() ? "" : ",") + n;
      pass_line =
          fmt::format("passes: {} ({} -> {} nodes)\n", list, before, model.graph.nodes.size());
      if (profile)
        for (const auto& t : times)
          pass_line +=
              fmt::format("  pass {:<9} {:>9.1f} ms  -> {} nodes\n", t.name, t.ms, t.nodes_after);
    }
    runtime::Executor ex = [&] {
      try {
        return runtime::Executor(std::move(model));
      } catch (const Error& e) {  // a node's error: name the model too
        if (e.source() != path) throw Error(path, e.what());
        throw;
      }
    }();

    std::map<std::string, std::string> files;  // input name → its .npy
    std::map<std::string, Tensor> feeds = read_named_inputs(inputs, files);
    for (auto& [name, t] : llm::empty_pasts(ex.model(), feeds)) feeds[name] = std::move(t);
    llm::check_decoder_feeds(ex.model(), feeds);
    auto t0 = std::chrono::steady_clock::now();
    std::map<std::string, Tensor> outs;
    try {
      outs = ex.run(feeds);
    } catch (const Error& e) {
      // The executor names the input or the node; the file is ours to add.
      if (const Error named = name_input_file(e, files); named.source() != e.source()) throw named;
      if (e.source() != path) throw Error(path, e.what());
      throw;
    }
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

    // Every destination is chosen and checked before the first is written, so
    // a destination that cannot be a file (a folder of that name) fails the
    // command with no output written; each file is then written atomically.
    std::set<std::string> used;
    std::vector<std::pair<std::string, std::string>> lines_and_dests;
    for (const std::string& name : ex.output_names()) {
      const Tensor& t = outs.at(name);
      std::string line = fmt::format("output {}: {} {}", printable(name), dtype_name(t.dtype()),
                                     shape_to_string(t.shape()));
      std::string dest;
      if (!output.empty()) {
        std::string file = sanitize_file_name(name);
        for (int k = 2; used.count(file); ++k)
          file = sanitize_file_name(name) + "_" + std::to_string(k);
        used.insert(file);
        dest = (std::filesystem::path(output) / (file + ".npy")).string();
        line += " -> " + printable(dest);
      }
      lines_and_dests.emplace_back(std::move(line), std::move(dest));
    }
    if (!output.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(output, ec);
      if (ec || !std::filesystem::is_directory(output))
        throw Error(output, "cannot create the output folder: " +
                                (ec ? ec.message() : std::string("not a directory")));
      for (const auto& [line, dest] : lines_and_dests) {
        const auto st = std::filesystem::status(dest, ec);
        if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
          throw Error(dest, "exists and is not a regular file; no output written");
      }
      size_t i = 0;
      for (const std::string& name : ex.output_names())
        write_npy(lines_and_dests[i++].second, outs.at(name));
    }
    std::cout << pass_line;
    for (const auto& [line, dest] : lines_and_dests) std::cout << line << "\n";
    if (!ms.empty()) {
      std::vector<double> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      const size_t n = sorted.size();
      const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
      std::cout << fmt::format(
          "latency: median {:.3f} ms, min {:.3f} ms, max {:.3f} ms over {} runs "
          "(after 1 warm-up of {:.3f} ms), {} threads, OpenMP wait policy {}\n",
          median, sorted.front(), sorted.back(), n, first_ms, linalg::threads(),
          std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "default");
      std::cout << "kernels " << runtime::kernels::describe(runtime::kernels::active_kernels())
                << "\n";
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
      std::vector<std::pair<std::string, std::pair<double, int64_t>>> nodes(
          ex.node_profile().begin(), ex.node_profile().end());
      std::sort(nodes.begin(), nodes.end(),
                [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
      if (nodes.size() > 15) nodes.resize(15);
      std::cout << "slowest nodes (per run):\n";
      for (const auto& [label, v] : nodes)
        std::cout << fmt::format("  {:>9.3f} ms  {}\n", v.first / time_runs, printable(label));
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
