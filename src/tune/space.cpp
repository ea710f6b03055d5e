// Decision space of a graph and the application of a configuration.
#include "tailor/tune/space.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "tailor/core/dtype.h"
#include "tailor/core/error.h"
#include "tailor/graph/verify.h"
#include "tailor/graph/weight_forms.h"
#include "tailor/graph/weights.h"
#include "tailor/runtime/kernels/registry.h"
#include "tailor/schemes/matmul_into.h"
#include "tailor/schemes/registry.h"

namespace tailor::tune {

namespace {

namespace k = runtime::kernels;

bool is_conv(const graph::Node& n) {
  return (n.domain.empty() && n.op_type == "Conv") ||
         (n.domain == "ai.tailor" && n.op_type == "FusedConv");
}

bool is_compressed_layer(const graph::Node& n) {
  return n.domain == "ai.tailor" &&
         (n.op_type == "CompressedConv" || n.op_type == "CompressedLinear");
}

// A compressed layer the W8A8 kernels can run (kernel_variant "w8a8",
// runtime/ops_compressed.cpp): a weight-only per-channel int8 weight of at
// most kQ8Q8Conv1x1MaxIn inputs.
bool w8a8_variant_applies(const graph::Node& n) {
  if (!is_compressed_layer(n) || n.name.empty()) return false;
  const graph::Attribute* a = n.find("weight");
  if (!a || a->kind != graph::Attribute::Kind::encoded || !a->encoded) return false;
  const auto p = schemes::int8_weight_only_view(*a->encoded);
  return p && p->args.in <= k::kQ8Q8Conv1x1MaxIn && n.attr_int("group", 1) == 1;
}

// A conv's weight (input 1): an initializer, or a Constant node's tensor
// (what fold would make one; a 4-D kernel can only be its `value`), else
// nullptr.
const Tensor* conv_weight(const graph::Graph& g, const graph::Node& n) {
  if (n.inputs.size() < 2) return nullptr;
  if (const auto w = g.initializers.find(n.inputs[1]); w != g.initializers.end()) return &w->second;
  for (const graph::Node& c : g.nodes)
    if (c.domain.empty() && c.op_type == "Constant" && c.outputs.size() == 1 &&
        c.outputs[0] == n.inputs[1]) {
      const graph::Attribute* v = c.find("value");
      return v && v->kind == graph::Attribute::Kind::t ? &v->t : nullptr;
    }
  return nullptr;
}

// A dense Conv the W8A8 kernels can run once its weight is rounded to
// int8-a8's codes (kernel_variant "w8a8" on a dense layer: Applier replaces it
// by a CompressedConv of those codes): named, of an f32 4-D weight held by an
// initializer or a Constant node (fold off leaves those) that
// graph::w8a8_reader takes (groups 1, no auto_pad), of at most
// kQ8Q8Conv1x1MaxIn inputs (channels × taps), finite, with every row's scale
// max|w|/127 within f16 (the codes' stored scales: int8-a8's encoder refuses
// a weight past that), and no row that holds 1e-3 of the weight's largest
// magnitude or more zeroed by a scale that rounds to 0 in f16 (max|w| under
// 3.8e-6: the detector's BatchNorm-folded convs have such nearly dead rows,
// which zeroing leaves nearly as they are). A scale f16 holds only as a
// subnormal (max|w| under ~1e-3) may round down and clip the row's largest
// codes; that is left to the check.
bool dense_w8a8_applies(const graph::Graph& g, const graph::Node& n) {
  if (!n.domain.empty() || n.op_type != "Conv" || n.name.empty()) return false;
  const Tensor* w = conv_weight(g, n);
  if (!w || w->dtype() != DType::f32 || w->rank() != 4) return false;
  const Shape& s = w->shape();
  const int64_t in = s[1] * s[2] * s[3];
  if (s[0] < 1 || in < 1 || !graph::w8a8_reader(n, s) || in > k::kQ8Q8Conv1x1MaxIn) return false;
  const Tensor c = w->contiguous();
  const float* p = c.data<float>();
  std::vector<float> row_max(static_cast<size_t>(s[0]), 0.0f);
  for (int64_t o = 0; o < s[0]; ++o)
    for (int64_t j = 0; j < in; ++j) {
      if (!std::isfinite(p[o * in + j])) return false;
      row_max[o] = std::max(row_max[o], std::fabs(p[o * in + j]));
    }
  const float conv_max = *std::max_element(row_max.begin(), row_max.end());
  for (float m : row_max) {
    const float scale = round_to_f16(m / 127.0f);
    if (!std::isfinite(scale) || (scale == 0 && m > 1e-3f * conv_max)) return false;
  }
  return true;
}

// The model with every main-graph Conv that is unnamed, or named as an
// earlier Conv is, named "conv#<index>" ("conv#<index>#<k>", k = 2, 3, ...,
// where another Conv has that name): each conv's decisions then have names
// of their own.
graph::Model name_convs(const graph::Model& model) {
  graph::Model m = model;
  std::set<std::string> named;  // the Convs' own names
  for (const graph::Node& n : m.graph.nodes)
    if (is_conv(n) && !n.name.empty()) named.insert(n.name);
  std::set<std::string> seen;
  for (size_t i = 0; i < m.graph.nodes.size(); ++i) {
    graph::Node& n = m.graph.nodes[i];
    if (!is_conv(n)) continue;
    if (n.name.empty() || seen.count(n.name)) {
      const std::string base = "conv#" + std::to_string(i);
      n.name = base;
      for (int k = 2; seen.count(n.name) || named.count(n.name); ++k)
        n.name = base + "#" + std::to_string(k);
    }
    seen.insert(n.name);
  }
  return m;
}

const std::vector<std::string> kPrefixPasses = {"fold", "simplify", "strength", "cse", "hoist"};

}  // namespace

std::optional<k::Conv2dParams> conv_params(const graph::Graph& g, const graph::Node& n,
                                           const ValueShapes& shapes) {
  if (n.inputs.size() < 2 || n.outputs.empty()) return std::nullopt;
  // The weight: an initializer, or a value the run observed (a Constant
  // node's output, which constant folding turns into an initializer).
  const auto wi = g.initializers.find(n.inputs[1]);
  const auto ws = shapes.find(n.inputs[1]);
  const auto xs = shapes.find(n.inputs[0]);
  const auto ys = shapes.find(n.outputs[0]);
  if ((wi == g.initializers.end() && ws == shapes.end()) || xs == shapes.end() ||
      ys == shapes.end())
    return std::nullopt;
  const auto& x = xs->second;
  const auto& y = ys->second;
  const Shape& w = wi != g.initializers.end() ? wi->second.shape() : ws->second;
  if (x.size() != 4 || y.size() != 4 || w.size() != 4) return std::nullopt;
  k::Conv2dParams p;
  p.n = x[0], p.c_in = x[1], p.h = x[2], p.w = x[3];
  p.c_out = w[0], p.kh = w[2], p.kw = w[3];
  p.groups = n.attr_int("group", 1);
  const auto st = n.attr_ints("strides", {1, 1});
  const auto dil = n.attr_ints("dilations", {1, 1});
  if (st.size() != 2 || dil.size() != 2) return std::nullopt;
  p.stride_h = st[0], p.stride_w = st[1], p.dil_h = dil[0], p.dil_w = dil[1];
  // Pads that reproduce the observed output plane (all at the bottom/right:
  // only the plane's size matters to the choices).
  p.pad_bottom = std::max<int64_t>(0, (y[2] - 1) * p.stride_h + p.dil_h * (p.kh - 1) + 1 - p.h);
  p.pad_right = std::max<int64_t>(0, (y[3] - 1) * p.stride_w + p.dil_w * (p.kw - 1) + 1 - p.w);
  if (p.c_out != y[1] || p.groups < 1 || p.out_h() != y[2] || p.out_w() != y[3])
    return std::nullopt;
  return p;
}

k::ConvAlgorithm conv_algorithm_of(const graph::Node& n, const k::Conv2dParams& p) {
  const std::string a = n.attr_string("conv_algorithm", "auto");
  if (a == "winograd") return k::ConvAlgorithm::winograd;
  if (a == "gemm") return k::ConvAlgorithm::gemm;
  return k::conv_default_algorithm(p);
}

bool is_approximate(const Decision& d) {
  return d.kind == "kernel_variant" || d.kind == "fold_scales";
}

double DecisionSpace::points() const {
  double p = 1;
  for (const auto& d : decisions) p *= static_cast<double>(d.choices.size());
  return p;
}

Configuration DecisionSpace::default_configuration() const {
  Configuration c;
  for (const auto& d : decisions) c.push_back(d.default_choice);
  return c;
}

std::string DecisionSpace::key(const Configuration& c) {
  std::string k;
  for (size_t i = 0; i < c.size(); ++i) k += (i ? "." : "") + std::to_string(c[i]);
  return k;
}

int DecisionSpace::find(const std::string& name) const {
  for (size_t i = 0; i < decisions.size(); ++i)
    if (decisions[i].name == name) return static_cast<int>(i);
  return -1;
}

void DecisionSpace::validate(const Configuration& c) const {
  if (c.size() != decisions.size())
    throw Error("configuration", "has " + std::to_string(c.size()) + " choices, the space has " +
                                     std::to_string(decisions.size()) + " decisions");
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] < 0 || c[i] >= static_cast<int>(decisions[i].choices.size()))
      throw Error("configuration", "choice " + std::to_string(c[i]) + " of decision '" +
                                       decisions[i].name + "' is out of range");
}

std::map<std::string, std::string> DecisionSpace::named_choices(const Configuration& c) const {
  validate(c);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < c.size(); ++i)
    out[decisions[i].name] = decisions[i].choices[static_cast<size_t>(c[i])];
  return out;
}

std::vector<Configuration> DecisionSpace::enumerate(double limit) const {
  if (points() > limit)
    throw Error("decision space",
                "has " + std::to_string(points()) + " points, more than " + std::to_string(limit));
  std::vector<Configuration> out;
  Configuration c(decisions.size(), 0);
  while (true) {
    out.push_back(c);
    int i = static_cast<int>(c.size()) - 1;
    while (i >= 0 && ++c[i] == static_cast<int>(decisions[i].choices.size())) c[i--] = 0;
    if (i < 0) break;
  }
  return out;
}

DecisionSpace build_space(const graph::Model& model, const ValueShapes& shapes,
                          const graph::PassOptions& pass_options, const SpaceOptions& options) {
  if (options.max_threads < 1) throw Error("build_space", "max_threads must be >= 1");
  DecisionSpace s;
  const std::vector<std::string> defaults = graph::parse_pass_list("all");
  for (const auto& p : graph::registered_passes()) {
    const bool on = std::find(defaults.begin(), defaults.end(), p.name) != defaults.end();
    s.decisions.push_back({"pass:" + p.name, "pass", {"off", "on"}, on ? 1 : 0});
  }
  // Fusion candidates as fuse() sees them after the passes before it.
  const graph::Model named = name_convs(model);
  const graph::Model pre = graph::run_passes(named, kPrefixPasses, pass_options);
  // simplify's rounded fold of conv scales (PassOptions::fold_rounded_scales),
  // offered where it changes the graph: faster, not bit for bit.
  {
    graph::PassOptions rounded = pass_options;
    rounded.fold_rounded_scales = true;
    if (graph::run_passes(named, {"fold", "simplify"}, rounded).graph.nodes.size() !=
        graph::run_passes(named, {"fold", "simplify"}, pass_options).graph.nodes.size())
      s.decisions.push_back({"fold_scales", "fold_scales", {"exact", "rounded"}, 0});
  }
  for (const auto& fc : graph::fusion_candidates(pre))
    s.decisions.push_back({"fusion:" + fc.id, "fusion", {"off", "on"}, 1});
  // Compressed layers exist once fold has run (graph::run_passes recognises
  // them first); their kernel variant: the weight-only kernel or W8A8. Dense
  // convs (their weights as fold and simplify leave them, BatchNorm folded
  // in): the f32 kernels or W8A8 on the weight's int8-a8 codes.
  for (const auto& n : pre.graph.nodes)
    if (w8a8_variant_applies(n))
      s.decisions.push_back(
          {"kernel_variant:" + n.name, "kernel_variant", {"weight_only", "w8a8"}, 0});
    else if (dense_w8a8_applies(pre.graph, n))
      s.decisions.push_back({"kernel_variant:" + n.name, "kernel_variant", {"dense", "w8a8"}, 0});
  for (const auto& n : named.graph.nodes) {
    if (!is_conv(n) || n.inputs.size() < 2 || n.outputs.empty()) continue;
    auto os = shapes.find(n.outputs[0]);
    auto xs = shapes.find(n.inputs[0]);
    if (os == shapes.end() || xs == shapes.end() || os->second.size() != 4 ||
        xs->second.size() != 4)
      continue;
    const int64_t group = n.attr_int("group", 1);
    if (group == xs->second[1] && group == os->second[1]) continue;  // depthwise: direct kernel
    const int64_t cols = os->second[2] * os->second[3];
    Decision d{"conv_block:" + n.name, "conv_block", {"full"}, 0};
    for (int64_t b : options.column_blocks)
      if (b > 0 && b < cols) d.choices.push_back(std::to_string(b));
    if (d.choices.size() > 1) s.decisions.push_back(d);
  }
  for (const auto& n : named.graph.nodes) {
    if (!is_conv(n)) continue;
    const auto p = conv_params(named.graph, n, shapes);
    if (!p) continue;
    if (k::conv_winograd_eligible(*p)) {
      const bool wino = k::conv_default_algorithm(*p) == k::ConvAlgorithm::winograd;
      s.decisions.push_back(
          {"conv_algo:" + n.name, "conv_algo", {"gemm", "winograd"}, wino ? 1 : 0});
    }
    const int64_t macs =
        p->n * p->c_out * p->out_h() * p->out_w() * (p->c_in / p->groups) * p->kh * p->kw;
    if (options.max_threads > 1 && macs <= options.small_op_macs)
      s.decisions.push_back({"op_threads:" + n.name, "op_threads", {"all", "1"}, 0});
  }
  Decision t{"threads", "threads", {}, 0};
  for (int k = 1; k < options.max_threads; k *= 2) t.choices.push_back(std::to_string(k));
  t.choices.push_back(std::to_string(options.max_threads));
  t.default_choice = static_cast<int>(t.choices.size()) - 1;
  s.decisions.push_back(t);
  return s;
}

Applier::Applier(const graph::Model& model, const DecisionSpace& space,
                 graph::PassOptions pass_options)
    : model_(name_convs(model)), space_(space), options_(std::move(pass_options)) {}

AppliedConfiguration Applier::apply(const Configuration& c) {
  space_.validate(c);
  std::vector<std::string> prefix, suffix;
  std::set<std::string> fusions;
  std::string prefix_key, full_key;
  AppliedConfiguration out;
  std::map<std::string, int64_t> blocks;
  std::map<std::string, std::string> algorithms;
  // Nodes left at a Winograd default: the runtime's automatic rule takes
  // Winograd only on weights packed at load (initializers), so where an
  // earlier choice (fold off) leaves the weight computed, the choice is
  // written out to hold.
  std::set<std::string> default_winograd;
  std::set<std::string> serial;
  std::set<std::string> w8a8;
  bool rounded_scales = false;
  for (size_t i = 0; i < c.size(); ++i) {
    const Decision& d = space_.decisions[i];
    const std::string& choice = d.choices[c[i]];
    if (d.kind == "pass") {
      const std::string name = d.name.substr(5);
      const bool pre =
          std::find(kPrefixPasses.begin(), kPrefixPasses.end(), name) != kPrefixPasses.end();
      if (choice == "on") (pre ? prefix : suffix).push_back(name);
      (pre ? prefix_key : full_key) += name + "=" + choice + ";";
    } else if (d.kind == "fusion") {
      if (choice == "on") fusions.insert(d.name.substr(7));
      full_key += c[i] ? "1" : "0";
    } else if (d.kind == "conv_block") {
      if (choice != "full") blocks[d.name.substr(11)] = std::stoll(choice);
    } else if (d.kind == "conv_algo") {
      if (c[i] != d.default_choice)
        algorithms[d.name.substr(10)] = choice;
      else if (choice == "winograd")
        default_winograd.insert(d.name.substr(10));
    } else if (d.kind == "op_threads") {
      if (choice == "1") serial.insert(d.name.substr(11));
    } else if (d.kind == "kernel_variant") {
      if (choice == "w8a8") w8a8.insert(d.name.substr(15));
    } else if (d.kind == "fold_scales") {
      rounded_scales = choice == "rounded";
      prefix_key += "fold_scales=" + choice + ";";
    } else if (d.kind == "threads") {
      out.threads = std::stoi(choice);
    }
  }
  for (const auto& name : w8a8)  // length-prefixed: names may hold any character
    full_key += "|" + std::to_string(name.size()) + ":" + name;
  full_key = prefix_key + "|" + full_key;
  std::shared_ptr<graph::Model> done;
  if (auto it = prefix_cache_.find(full_key); it != prefix_cache_.end()) {
    done = it->second;
  } else {
    std::shared_ptr<graph::Model> pre;
    if (auto pt = prefix_cache_.find(prefix_key); pt != prefix_cache_.end()) {
      pre = pt->second;
    } else {
      graph::PassOptions po = options_;
      po.fold_rounded_scales = rounded_scales;
      pre = std::make_shared<graph::Model>(graph::run_passes(model_, prefix, po));
      prefix_cache_[prefix_key] = pre;
    }
    if (!w8a8.empty()) {
      // Dense convs taking W8A8 become CompressedConvs of their int8-a8 codes
      // before fuse, which fuses their bias and activation as it does a
      // compressed file's; the codes are kept per prefix (the same weights).
      auto q = std::make_shared<graph::Model>(*pre);
      static const schemes::Scheme a8 = schemes::parse_scheme("int8-a8");
      for (graph::Node& n : q->graph.nodes) {
        if (!w8a8.count(n.name) || n.op_type != "Conv" || !n.domain.empty()) continue;
        // Codes made once per prefix and conv, after the weight's checks
        // (a scan of every element) passed.
        std::shared_ptr<const schemes::Encoded>& e = codes_[prefix_key + "|" + n.name];
        if (!e) {
          if (!dense_w8a8_applies(q->graph, n)) continue;
          e = a8.encode(*conv_weight(q->graph, n));
        }
        if (auto c = graph::compressed_op(q->graph, n, WeightLayout::conv,
                                          conv_weight(q->graph, n)->shape(), e))
          n = std::move(*c);
      }
      pre = q;
    }
    graph::PassOptions o = options_;
    o.fusion_candidates = fusions;
    done = std::make_shared<graph::Model>(graph::run_passes(*pre, suffix, o));
    if (prefix_cache_.size() > 512) {  // bound the memory held
      prefix_cache_.clear();
      codes_.clear();
    }
    prefix_cache_[full_key] = done;
  }
  out.model = *done;
  if (!blocks.empty() || !algorithms.empty() || !default_winograd.empty() || !serial.empty())
    for (graph::Node& n : out.model.graph.nodes) {
      if (!is_conv(n)) continue;
      if (auto it = blocks.find(n.name); it != blocks.end())
        n.set("column_block", graph::Attribute::of_int(it->second));
      if (auto it = algorithms.find(n.name); it != algorithms.end())
        n.set("conv_algorithm", graph::Attribute::of_string(it->second));
      else if (default_winograd.count(n.name) && n.inputs.size() > 1 &&
               out.model.graph.initializers.count(n.inputs[1]) == 0)
        n.set("conv_algorithm", graph::Attribute::of_string("winograd"));
      if (serial.count(n.name)) n.set("threads", graph::Attribute::of_int(1));
    }
  if (!w8a8.empty())
    for (graph::Node& n : out.model.graph.nodes)
      if (is_compressed_layer(n) && w8a8.count(n.name))
        n.set("kernel_variant", graph::Attribute::of_string("w8a8"));
  return out;
}

}  // namespace tailor::tune
