// tailor inspect: lists a model's weight tensors with their [out, in] views.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "tailor/graph/weights.h"
#include "tailor/io/gguf.h"
#include "tailor/io/load_model.h"

namespace tailor::cli {
namespace {

void run_inspect(const std::string& path, bool json) {
  const graph::Model model = load_model(path);
  const std::vector<graph::WeightView> weights = graph::weights(model);
  // A GGUF's Q8_0 / Q4_0 tensors are read decoded to f32: listed as stored.
  std::map<std::string, std::pair<std::string, int64_t>> blocks;
  if (model.format == "gguf")
    for (const GgufTensor& t : read_gguf_tensors(model.source))
      if (t.type == GgmlType::q8_0 || t.type == GgmlType::q4_0)
        blocks[t.name] = {ggml_type_name(t.type), static_cast<int64_t>(t.data.nbytes())};
  const auto dtype_of = [&](const graph::WeightView& w) {
    const auto it = blocks.find(w.name);
    return it == blocks.end() ? std::string(dtype_name(w.tensor.dtype())) : it->second.first;
  };
  const auto bytes_of = [&](const graph::WeightView& w) {
    const auto it = blocks.find(w.name);
    return it == blocks.end() ? static_cast<int64_t>(w.tensor.nbytes()) : it->second.second;
  };
  int64_t numel = 0, floating = 0, bytes = 0, matrices = 0;
  for (const graph::WeightView& w : weights) {
    numel += w.tensor.numel();
    bytes += bytes_of(w);
    if (is_floating(w.tensor.dtype())) floating += w.tensor.numel();
    if (w.layout != WeightLayout::none) ++matrices;
  }
  if (json) {
    // Streamed a tensor at a time, so the output never sits whole in memory.
    std::cout << "{\n  \"model\": " << dump(nlohmann::json(model.source), -1)
              << ",\n  \"format\": " << dump(nlohmann::json(model.format), -1)
              << ",\n  \"tensors\": [";
    for (size_t i = 0; i < weights.size(); ++i) {
      const graph::WeightView& w = weights[i];
      const Shape v = w.out_in_shape();
      const nlohmann::ordered_json t = {
          {"name", w.name},
          {"dtype", dtype_of(w)},
          {"shape", w.tensor.shape()},
          {"layout", layout_name(w.layout)},
          {"out_in", v.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v)},
          {"numel", w.tensor.numel()},
          {"bytes", bytes_of(w)}};
      std::cout << (i ? ",\n    " : "\n    ") << dump(t, -1);
    }
    const nlohmann::ordered_json totals = {{"tensors", weights.size()},
                                           {"matrices", matrices},
                                           {"numel", numel},
                                           {"floating_numel", floating},
                                           {"bytes", bytes}};
    std::cout << "\n  ],\n  \"totals\": " << dump(totals, -1) << "\n}\n";
    return;
  }
  size_t name_w = 4;
  for (const graph::WeightView& w : weights) name_w = std::max(name_w, printable(w.name).size());
  name_w = std::min<size_t>(name_w, 60);
  std::cout << fmt::format("{} ({}): {} weight tensor{}\n\n", printable(model.source), model.format,
                           weights.size(), weights.size() == 1 ? "" : "s");
  std::cout << fmt::format("{:<{}}  {:<5} {:<20} {:<14} {:<15} {:>12} {:>12}\n", "name", name_w,
                           "dtype", "stored shape", "layout", "[out, in]", "params", "bytes");
  for (const graph::WeightView& w : weights) {
    const Shape v = w.out_in_shape();
    std::cout << fmt::format("{:<{}}  {:<5} {:<20} {:<14} {:<15} {:>12} {:>12}\n",
                             printable(w.name), name_w, dtype_of(w),
                             shape_to_string(w.tensor.shape()), layout_name(w.layout),
                             v.empty() ? std::string("-") : shape_to_string(v),
                             with_commas(w.tensor.numel()), with_commas(bytes_of(w)));
  }
  std::cout << fmt::format(
      "\ntotal: {} tensors ({} with an [out, in] view), {} parameters ({} floating point), {} "
      "bytes\n",
      weights.size(), matrices, with_commas(numel), with_commas(floating), with_commas(bytes));
}

}  // namespace

void add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect",
                                 "List every weight tensor: dtype, shapes, [out, in] view, bytes");
  static std::string path;
  static bool json = false;
  cmd->add_option("MODEL", path, "ONNX, safetensors (file or HF folder), GGUF or llama2.c .bin")
      ->required();
  cmd->add_flag("--json", json, "Print JSON (schema in docs/formats.md)");
  cmd->callback([] { run_inspect(path, json); });
}

}  // namespace tailor::cli
