// The decision space of a graph (DESIGN.md, "Differentiable compilation"):
// every compiler decision the tuner may change, each a categorical choice, and
// how a Configuration (one choice per decision) is applied to yield a discrete
// graph and executor settings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/graph/passes.h"
#include "tailor/runtime/kernels/conv_algorithm.h"
#include "tailor/schemes/scheme.h"

namespace tailor::tune {

/// One categorical decision. `name` is stable for a given model:
/// "pass:<name>" (choices "off", "on"), "fusion:<FusionCandidate::id>"
/// ("off", "on"), "conv_block:<conv output value>" (choices "full" or a
/// column-block size in output columns, see kernels::Conv2dParams::column_block),
/// "conv_algo:<conv>" ("gemm", "winograd": the conv algorithm, offered only
/// on convs runtime::kernels::conv_winograd_eligible says Winograd serves;
/// node attribute "conv_algorithm"), "op_threads:<conv>" ("all", "1": run a
/// small conv on one thread, node attribute "threads"; offered only when
/// more than one thread is), "kernel_variant:<compressed layer>"
/// ("weight_only", "w8a8": a named CompressedConv / CompressedLinear whose
/// weight is per-channel int8 codes either runs the weight-only kernel on
/// f32 activations, or rounds its activations to int8 and runs int8-a8's
/// W8A8 kernels on the same codes, node attribute "kernel_variant"),
/// "kernel_variant:<dense conv>" ("dense", "w8a8": a named Conv of an f32
/// initializer weight either runs the f32 kernels, or runs as a
/// CompressedConv of the weight's int8-a8 codes, its weight rounded per
/// output channel as schemes' int8 does and its activations to int8; W8A8
/// is not bit for bit, so a configuration taking it passes the harness's
/// check only under a tolerance its error fits), "threads" (choices "1",
/// "2", ...).
struct Decision {
  std::string name;
  /// "pass", "fusion", "fold_scales" (simplify's conv-scale fold: "exact",
  /// the default, or "rounded", see graph::PassOptions::fold_rounded_scales;
  /// present only where it changes the graph), "conv_block", "conv_algo",
  /// "op_threads", "kernel_variant", "threads".
  std::string kind;
  std::vector<std::string> choices;
  /// Index of the default choice (all passes but layout on, every fusion
  /// candidate on, full column blocks, the conv algorithm conv2d's automatic
  /// rule takes (runtime::kernels::conv_default_algorithm), every op on all
  /// threads, compressed layers on their weight-only kernel, the most threads).
  int default_choice = 0;
};

/// Whether `d`'s non-default choices are approximate, not bit for bit: a
/// "kernel_variant" (W8A8) or "fold_scales" ("rounded") decision. What the
/// gradient method screens (search_gradient) and a record's screened checks
/// may change.
bool is_approximate(const Decision& d);

/// One choice index per decision, in DecisionSpace::decisions order.
using Configuration = std::vector<int>;

/// Shapes of a model's values observed on one run of the unoptimized model
/// (main graph values only), used to size convs and the cost model's terms.
using ValueShapes = std::map<std::string, std::vector<int64_t>>;

/// The decisions of one model.
struct DecisionSpace {
  std::vector<Decision> decisions;

  /// Number of points (product of choice counts), as a double (it may be huge).
  double points() const;
  /// The default configuration.
  Configuration default_configuration() const;
  /// "1.0.1.0..." — a key that identifies a configuration.
  static std::string key(const Configuration& c);
  /// Index of the decision named `name`, or -1.
  int find(const std::string& name) const;
  /// Throws Error("configuration", ...) unless `c` has one valid index per decision.
  void validate(const Configuration& c) const;
  /// Each decision's name → the choice `c` takes (validate's errors); what a
  /// record's chosen.decisions holds.
  std::map<std::string, std::string> named_choices(const Configuration& c) const;
  /// Every configuration in lexicographic order (last decision fastest).
  /// Throws Error when points() > `limit`.
  std::vector<Configuration> enumerate(double limit = 512) const;
};

/// Options of build_space.
struct SpaceOptions {
  /// Thread counts offered: 1, 2, 4, ... up to max_threads (and max_threads).
  int max_threads = 1;
  /// Column-block sizes offered to each im2col/1×1 conv (only those smaller
  /// than the conv's out_h·out_w output columns, so each choice is distinct).
  std::vector<int64_t> column_blocks = {256, 1024, 4096};
  /// Convs of at most this many multiply-adds get an "op_threads:" decision
  /// (when max_threads > 1): waking the team may cost more than it saves.
  int64_t small_op_macs = int64_t{1} << 24;
};

/// The 2-D conv parameters of Conv/FusedConv node `n` as the runtime will
/// see them: channels, kernel, strides, dilations, groups from its weight
/// (an initializer of `g`, else a value of `shapes`: a Constant node's output
/// that constant folding turns into an initializer) and attributes, the input and output planes
/// from `shapes` (ONNX pads taken so out_h()/out_w() equal the observed output's). nullopt when a
/// shape or the constant weight is missing or not 2-D.
std::optional<runtime::kernels::Conv2dParams> conv_params(const graph::Graph& g,
                                                          const graph::Node& n,
                                                          const ValueShapes& shapes);

/// The algorithm node `n` (with parameters `p`) runs with: its
/// "conv_algorithm" attribute when set, else the runtime's automatic rule.
/// Only meaningful for non-depthwise, non-1×1 convs.
runtime::kernels::ConvAlgorithm conv_algorithm_of(const graph::Node& n,
                                                  const runtime::kernels::Conv2dParams& p);

/// Builds the decision space of `model`: one "pass:" decision per registered
/// pass (graph::registered_passes), one "fusion:" decision per candidate that
/// fuse() finds after the passes that run before it (fold, simplify, cse,
/// hoist), one "conv_block:" decision per non-depthwise 2-D Conv of the main
/// graph whose output has more columns than the smallest block (named by the
/// node's name; "conv#<index>", or "conv#<index>#<k>" where another Conv
/// has that name, when unnamed or named as an earlier Conv is),
/// one "conv_algo:" decision per
/// conv Winograd serves, one "op_threads:" decision per conv of at most
/// options.small_op_macs multiply-adds when max_threads > 1, one
/// "kernel_variant:" decision per named compressed layer of per-channel int8
/// codes and per named dense Conv of an f32 initializer weight that
/// graph::w8a8_reader takes (each of at most kernels::kQ8Q8Conv1x1MaxIn
/// inputs) that the passes before fuse leave, and "threads".
/// `shapes` gives conv output sizes (values absent from it get no conv_block
/// decision). `options.evaluate` runs constant folding.
DecisionSpace build_space(const graph::Model& model, const ValueShapes& shapes,
                          const graph::PassOptions& pass_options, const SpaceOptions& options);

/// A configuration applied: the transformed model and the executor settings.
struct AppliedConfiguration {
  graph::Model model;
  int threads = 1;
};

/// Applies configurations to one model, caching pass results (configurations
/// that agree on the passes before fuse share that work; those that agree on
/// every pass and fusion decision share the whole pipeline). Conv nodes
/// unnamed or named as an earlier Conv is are named "conv#<index>" (as for
/// build_space) first (the
/// passes keep a conv's name when they fuse or fold into it), so each conv's
/// decisions find their node.
class Applier {
 public:
  Applier(const graph::Model& model, const DecisionSpace& space, graph::PassOptions pass_options);
  /// The model after the configuration's passes (in pipeline order, with the
  /// chosen fusion candidates) and with each conv's "column_block",
  /// "conv_algorithm" and "threads" attributes and each compressed layer's
  /// "kernel_variant" set where the choice is not the default, each dense
  /// conv taking "w8a8" replaced before fuse by a CompressedConv of its
  /// weight's int8-a8 codes (graph::compressed_op), verified; and
  /// its thread count. A conv left at a Winograd
  /// default whose weight is not an initializer after the passes (fold off
  /// on a Constant-fed weight: nothing packed at load, so the runtime's
  /// automatic rule would run the GEMM) gets "conv_algorithm" = "winograd"
  /// too. Throws Error from a pass.
  AppliedConfiguration apply(const Configuration& c);

 private:
  graph::Model model_;
  const DecisionSpace& space_;
  graph::PassOptions options_;
  std::map<std::string, std::shared_ptr<graph::Model>> prefix_cache_;
  /// int8-a8 codes of dense convs taking W8A8, by prefix key and conv name.
  std::map<std::string, std::shared_ptr<const schemes::Encoded>> codes_;
};

}  // namespace tailor::tune
