// Graph passes: constant folding, dead-code elimination, common-subexpression
// elimination, algebraic simplification, strength reduction, invariant
// hoisting out of If/Loop bodies, fusion, and layout. Each pass is a function
// Model → Model taking its model by value (a caller done with its model moves
// it in and spares a copy; a caller's own copy is never modified: subgraphs,
// shared between copies, are copied before they are changed) that keeps the
// model's graph outputs, their names and their values (exactly, or within
// float rounding where the doc comment says so).
// The pipeline order and the registry by name are at the end of this header.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"

namespace tailor::graph {

/// Evaluates one node on constant inputs (nullptr-free: an omitted optional
/// input is an undefined Tensor) and returns its outputs, or throws Error.
/// `opset` is the model's default-domain opset. The runtime provides one that
/// runs its own op kernels (runtime::node_evaluator()).
using NodeEvaluator = std::function<std::vector<Tensor>(
    const Node& node, const std::vector<Tensor>& inputs, int64_t opset)>;

/// Options shared by the passes.
struct PassOptions {
  /// Runs a node for constant folding. Required by fold_constants (an Error
  /// names the missing evaluator); runtime::default_pass_options() sets it.
  NodeEvaluator evaluate;
  /// Size cap of constant folding, in elements: a node whose folded output
  /// would hold more elements than this is left in the graph (it stays a
  /// cheap computation instead of a large stored constant).
  int64_t fold_max_elements = 1 << 20;
  /// Fusion candidates to apply, by FusionCandidate::id; nullopt applies every
  /// candidate fuse() finds.
  std::optional<std::set<std::string>> fusion_candidates;
  /// simplify folds a per-channel Mul after a Conv into its weights even when
  /// the scales are not powers of two (w·s rounded: the conv then sums rounded
  /// products, within float rounding of the original but not bit for bit;
  /// faster, the scale leaves the elementwise work). Off by default: on the
  /// PP-OCRv4 detector it moved the output by 1.0–1.4e-5 relative.
  bool fold_rounded_scales = false;
};

/// Compressed weights run compressed. Rewrites: a MatMul, Gemm (transA 0,
/// alpha = beta = 1, bias absent or an f32 initializer of `out` elements) or
/// 2-D group-1 Conv (auto_pad NOTSET) whose weight is computed only for it by
/// the standard form of a compressed weight (weight_forms.h: factors
/// "<weight>.<factor>" and exactly the operators emit_weight_form writes for
/// them, checked node by node and constant by constant) → ai.tailor
/// CompressedLinear / CompressedConv holding the factors as stored
/// (schemes::encoded_from_factors; the weight is never formed). Must run
/// before fold (which would decode the weight into a dense constant):
/// run_passes runs it first whenever fold is asked. Leaves
/// every other form alone; the factors stay as initializers until dce.
Model recognise_compressed_weights(Model model, const PassOptions& options);

/// Constant folding. Rewrites: every node of the default domain whose inputs
/// are all initializers (Constant nodes included: they have no inputs) and
/// that has no subgraph is evaluated with `options.evaluate` and replaced by
/// initializers holding its outputs, as long as each output has at most
/// `fold_max_elements` elements; an If whose condition is a constant is
/// replaced by the nodes of the branch it takes (renamed into the enclosing
/// graph). One sweep in node order reaches the fixed point (a folded output
/// is an initializer for the nodes after it), in subgraphs too; then shape
/// computations over static dims fold (fold_shape_constants). Preserves:
/// every value bit for bit (the same kernels compute it, once, at compile
/// time). Does nothing to nodes the evaluator refuses (they stay).
Model fold_constants(Model model, const PassOptions& options);

/// Dead-code elimination. Removes nodes none of whose outputs reach a graph
/// output (directly or through subgraphs that read them), initializers no
/// node reads, and types of removed values; in subgraphs too (a subgraph's
/// outputs are its roots). Preserves every graph output and graph input (the
/// model's interface), exactly.
Model eliminate_dead_code(Model model, const PassOptions& options);

/// Common-subexpression elimination. Two nodes are merged when they have the
/// same op type, domain, attributes (subgraph attributes: never merged) and
/// the same inputs in the same order — operand order is kept even for
/// commutative ops, so Add(a, b) and Add(b, a) stay two nodes — and, for
/// initializers, equal contents (dtype, shape, bytes) merge too. Graph inputs
/// are distinct values and are never merged. The later node's outputs are
/// replaced by the earlier one's (a graph output keeps its name through an
/// Identity). Preserves every value exactly.
Model eliminate_common_subexpressions(Model model, const PassOptions& options);

/// Algebraic simplification (constants are initializers, so run
/// fold_constants first). Rewrites: x·1, 1·x, x+0, 0+x, x−0, x/1 → x (only
/// when the constant has one element and cannot raise x's rank);
/// Transpose∘Transpose → one Transpose with the composed permutation, removed
/// when it is the identity; Reshape∘Reshape → the outer Reshape; Identity and
/// Dropout (inference) removed; Squeeze/Unsqueeze pairs left alone;
/// BatchNormalization after a Conv (or Gemm with a constant B, or a ConvTranspose:
/// w [c_in, c_out/group, k...] scaled along its output channels) whose output
/// has no other consumer → new weight and bias initializers w' = w·s,
/// b' = b·s + (beta − mean·s), s = scale/√(var + ε), each computed in double
/// from the f32 parameters and rounded to f32 once; likewise a Mul or Add of
/// a per-channel constant ([C,1,1], [1,C,1,1] or one element) after a Conv
/// (w' = w·s, b' = b·s; b' = b + t), a Mul only when every s is a power of
/// two (exact) unless options.fold_rounded_scales. Shape inference runs first (ranks and
/// dtypes for the guards). Preserves graph outputs exactly, except the folds
/// into weights (within float rounding: the conv sums the rounded products
/// w'·x instead of scaling the rounded sum); a graph output name is kept
/// through an Identity.
Model simplify(Model model, const PassOptions& options);

/// Strength reduction: an operation replaced by a cheaper one (constants
/// are initializers, so run fold_constants first; simplify before it, so a
/// Mul by a per-channel constant after a Conv folds into the weights first).
/// Rewrites, on f32 values, with a one-element constant that cannot raise
/// x's rank:
/// - x·2, 2·x → x + x (exact: both are 2x rounded once);
/// - x·(−1), (−1)·x → Neg(x) (exact);
/// - x / c → x · (1/c) when every element of the constant c is a power of
///   two 2^k, |k| ≤ 125 (1/c exact, so x·(1/c) is x/c rounded once; any
///   shape of c, broadcasting unchanged);
/// - Pow(x, 2) → x·x (exact: the runtime's pow of an f32 square is exact in
///   double); Pow(x, −1) → Reciprocal(x) (within one rounding);
/// - a / Sqrt(b) → a · Reciprocal(Sqrt(b)) when the Sqrt has no other reader
///   (the reciprocal square root the fused elementwise and LayerNorm
///   patterns compute; within one rounding: two divisions round instead of one).
/// Everything else is left alone (x/c for other c is not exact, so it stays a
/// division). One sweep, subgraphs too. Preserves graph outputs and their
/// names, exactly but for the two rewrites marked "within one rounding".
Model reduce_strength(Model model, const PassOptions& options);

/// Invariant hoisting out of subgraphs. Loop bodies: every node whose inputs
/// are all outer-scope values or constants (and has no subgraph) moves to the
/// enclosing graph before the Loop, to run once instead of once per iteration.
/// If branches: only nodes that need no run-time value (Constant nodes and
/// nodes over initializers) move out, and nodes that appear identically in
/// both branches (computed once, whichever branch runs); a node reading outer
/// values that only one branch needs stays, since hoisting it would compute it
/// when the other branch is taken. Hoisted initializers and values keep their
/// names (they are unique in the model). Preserves every value exactly.
Model hoist_invariants(Model model, const PassOptions& options);

/// One fusion opportunity fuse() found. `id` is stable for a given graph:
/// "<kind>:<name of the value the fused node produces>".
struct FusionCandidate {
  std::string id;
  /// "conv_epilogue", "gemm_epilogue", "matmul_epilogue", "elementwise",
  /// "layer_norm", "softmax", "squeeze_excite".
  std::string kind;
  /// Labels of the nodes the fusion replaces, in graph order.
  std::vector<std::string> nodes;
};

/// The fusion candidates of `model`: the main graph's, in graph order (of
/// the node each fusion ends at), then each subgraph's likewise, depth first
/// (the ids `PassOptions::fusion_candidates` selects from). Candidates do not
/// overlap.
std::vector<FusionCandidate> fusion_candidates(const Model& model);

/// Fusion into ops of the "ai.tailor" domain the runtime registers
/// (contracts in tailor/graph/fused_ops.h). One rule per file pair in
/// src/graph/passes/ (the header draws the pattern):
/// - conv_epilogue (fuse_conv_bias_activation.h): Conv → [Add of a
///   per-channel constant] → [activation] → ai.tailor.FusedConv (the conv
///   kernel's bias + activation epilogue);
/// - gemm_epilogue (fuse_gemm_activation.h): Gemm → activation →
///   ai.tailor.FusedGemm;
/// - matmul_epilogue (fuse_matmul_bias_activation.h): MatMul (constant 2-D B)
///   → [Add of a constant [n]] → [activation] → ai.tailor.FusedMatMul;
/// - layer_norm (fuse_layer_norm.h): ReduceMean/Sub/Pow (or Mul)/ReduceMean/
///   Add/Sqrt/Div (or Mul∘Reciprocal)/[Mul/[Add]] over the last axis →
///   ai.tailor.LayerNormalization;
/// - softmax (fuse_softmax.h): Exp/ReduceSum/Div, or
///   ReduceMax/Sub/Exp/ReduceSum/Div, over one axis → ai.tailor.Softmax;
/// - elementwise (fuse_elementwise.h): a connected group (2 to 24 nodes) of
///   f32 elementwise ops (Add, Sub, Mul, Div, Max, Min, Pow, Relu, Sigmoid,
///   Tanh, Exp, Log, Sqrt, Reciprocal, Neg, Abs, Clip, HardSigmoid,
///   HardSwish, LeakyRelu) whose inner values have no consumer outside the
///   group, with one output, at most 4 run-time inputs → one
///   ai.tailor.FusedElementwise holding the step program (broadcasting as in
///   ONNX, one pass over the output).
/// The activations are the rows of graph::kFusedActivations (Relu, Sigmoid,
/// Tanh, HardSigmoid, HardSwish, LeakyRelu, Clip with constant bounds) and
/// the decomposed HardSwish x·Clip(x+3, 0, 6)/6 (epilogue_activation.h).
/// Rules run in the order fusion.cpp gives (layer_norm and softmax, then the
/// epilogues, then elementwise groups); a node joins one fusion at most. Only
/// candidates selected by options.fusion_candidates (default: all).
/// Preserves graph outputs within float rounding (epilogues compute the same
/// operations in the same order; the elementwise program does too).
Model fuse(Model model, const PassOptions& options);

/// Layout: each 2-D Conv/FusedConv (groups 1 or depthwise, constant f32
/// weight, explicit or VALID padding) becomes ai.tailor.ConvNhwc (weight
/// re-laid OHWI) between Transposes to and from NHWC, and inverse Transpose
/// pairs between directly consecutive NHWC convs cancel, so a chain of convs
/// runs in NHWC with one transpose at each end. Anything between two convs
/// (a residual Add, an unfused elementwise op) keeps its pair of transposes.
/// Preserves outputs within float rounding (GEMM summation order differs).
Model convert_layout_nhwc(Model model, const PassOptions& options);

/// A pass in the registry.
struct PassInfo {
  /// Short name used by `--passes` and the tuner: "fold", "simplify",
  /// "strength", "cse", "hoist", "fuse", "layout", "dce".
  std::string name;
  /// One line saying what it does.
  std::string summary;
  Model (*run)(Model, const PassOptions&);
};

/// Every pass in pipeline order: fold (turns Constant nodes into the
/// initializers the others match), simplify (exposes more constants and
/// folds BatchNorm and per-channel Mul/Add into convs before fusion),
/// strength (after simplify, so a Mul by 2 after a Conv folds into its
/// weights rather than becoming an Add), cse, hoist, fuse (after simplify,
/// so Conv+BN+act becomes one node), layout (after fuse, on fused convs),
/// dce (last: sweeps what the others left).
const std::vector<PassInfo>& registered_passes();

/// Parses "all", "none" or a comma-separated list of pass names into names
/// in pipeline order. "all" is every pass but layout (it measured slower on
/// the PP-OCR models, see docs/benchmarks.md; name it to get it). Throws Error("--passes", ...)
/// naming an unknown pass and listing the known ones.
std::vector<std::string> parse_pass_list(const std::string& spec);

/// The wall-clock time of one pass in run_passes, in milliseconds, and the
/// main graph's node count after it.
struct PassTime {
  std::string name;
  double ms = 0;
  size_t nodes_after = 0;
};

/// Runs the named passes in pipeline order (see registered_passes), each on
/// the previous one's output, then verify()s the result. When `fold` is among
/// them, recognise_compressed_weights runs first (times: as "compressed"). Throws Error on an
/// unknown name. With `times`, appends each pass's time (verify excluded).
/// Takes `model` by value, as the passes do (a caller done with it moves it in).
Model run_passes(Model model, const std::vector<std::string>& names, const PassOptions& options,
                 std::vector<PassTime>* times = nullptr);

}  // namespace tailor::graph
