// The pass registry and pipeline order.
#include <algorithm>
#include <chrono>

#include "tailor/core/error.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/verify.h"

namespace tailor::graph {

const std::vector<PassInfo>& registered_passes() {
  // Order matters:
  // - fold first: Constant nodes become the initializers every other pass matches;
  // - simplify next: Pow/Div/Identity rewrites and BatchNorm folding expose
  //   Conv → Add → activation chains to fusion;
  // - strength after simplify: a Mul by a constant after a Conv folds into
  //   the weights first (strength would turn x·2 into x+x, which does not);
  // - cse after simplify, when equal subexpressions look alike;
  // - hoist before fusion, so hoisted nodes can fuse with the enclosing graph's;
  // - fuse after simplify (BatchNorm and per-channel Mul already in the conv
  //   weights, so Conv → Add → activation is left for the epilogue) and after
  //   strength (the LayerNorm rule takes its d · Reciprocal(Sqrt(·)) form as
  //   well as d / Sqrt(·)); its rules, one per fuse_*.{h,cpp}, run in the
  //   order fusion.cpp lists with its reasons;
  // - layout after fuse (it converts fused convs);
  // - dce last, sweeping what the others left unused.
  static const std::vector<PassInfo> passes = {
      {"fold", "constant folding (size-capped), If with a constant condition inlined",
       &fold_constants},
      {"simplify", "algebraic simplification, BatchNorm folding", &simplify},
      {"strength", "strength reduction (x·2 → x+x, x/2^k → x·2^−k, Pow(x, 2) → x·x, ...)",
       &reduce_strength},
      {"cse", "common-subexpression elimination", &eliminate_common_subexpressions},
      {"hoist", "invariant hoisting out of Loop bodies and If branches", &hoist_invariants},
      {"fuse", "conv/gemm/matmul epilogues, LayerNorm, Softmax, elementwise groups (fuse_*.h)",
       &fuse},
      {"layout", "NCHW convs to NHWC (ai.tailor.ConvNhwc), inverse transposes cancelled",
       &convert_layout_nhwc},
      {"dce", "dead-code elimination (nodes, initializers)", &eliminate_dead_code},
  };
  return passes;
}

std::vector<std::string> parse_pass_list(const std::string& spec) {
  const auto& all = registered_passes();
  std::vector<std::string> out;
  if (spec == "none" || spec.empty()) return out;
  if (spec == "all") {
    for (const auto& p : all)
      if (p.name != "layout") out.push_back(p.name);
    return out;
  }
  std::vector<std::string> asked;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = spec.find(',', start);
    const std::string name =
        spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (std::none_of(all.begin(), all.end(), [&](const PassInfo& p) { return p.name == name; })) {
      std::string known;
      for (const auto& p : all) known += (known.empty() ? "" : ", ") + p.name;
      throw Error("--passes", "unknown pass '" + name + "' (known: " + known + ", all, none)");
    }
    asked.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const auto& p : all)
    if (std::find(asked.begin(), asked.end(), p.name) != asked.end()) out.push_back(p.name);
  return out;
}

Model run_passes(Model model, const std::vector<std::string>& names, const PassOptions& options,
                 std::vector<PassTime>* times) {
  for (const auto& n : names)
    if (std::none_of(registered_passes().begin(), registered_passes().end(),
                     [&](const PassInfo& p) { return p.name == n; }))
      throw Error("run_passes", "unknown pass '" + n + "'");
  Model m = std::move(model);
  // Compressed weights become compressed ops before fold could decode them.
  if (std::find(names.begin(), names.end(), "fold") != names.end()) {
    const auto t0 = std::chrono::steady_clock::now();
    m = recognise_compressed_weights(std::move(m), options);
    if (times)
      times->push_back(
          {"compressed",
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
           m.graph.nodes.size()});
  }
  for (const auto& p : registered_passes())
    if (std::find(names.begin(), names.end(), p.name) != names.end()) {
      const auto t0 = std::chrono::steady_clock::now();
      m = p.run(std::move(m), options);
      if (times)
        times->push_back(
            {p.name,
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                 .count(),
             m.graph.nodes.size()});
    }
  verify(m);
  return m;
}

}  // namespace tailor::graph
