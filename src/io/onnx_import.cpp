// ONNX file → graph IR: one pass over the ModelProto, every tensor decoded
// once (onnx_tensor.h), permissive about opsets and domains (read_onnx), strict
// where the graph is to be run (import_onnx).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "onnx_tensor.h"
#include "onnx_wire.h"
#include "tailor/core/error.h"
#include "tailor/core/onnx_dtype.h"
#include "tailor/io/onnx.h"

namespace tailor {
namespace {

using io_detail::quote_name;
namespace fs = std::filesystem;

/// Payloads smaller than this stay inline in the mapped mode.
constexpr size_t kMappedMinBytes = 4096;

std::string normalise_domain(const std::string& d) {
  return d == "ai.onnx" ? "" : d;
}

/// The Constant attributes that carry its value.
bool is_constant_value(const std::string& name) {
  static const char* const kinds[] = {"value",         "value_float", "value_floats",
                                      "value_int",     "value_ints",  "value_string",
                                      "value_strings", "sparse_value"};
  for (const char* k : kinds)
    if (name == k) return true;
  return false;
}

class Reader {
 public:
  Reader(std::string path, bool mapped) : path_(std::move(path)), mapped_(mapped) {}

  graph::Model read() {
    const std::shared_ptr<Storage> file = Storage::map_file(path_);
    auto proto = std::make_shared<onnx::ModelProto>();
    if (mapped_) {
      // The structure without the large payloads (each now external data
      // pointing into this file), parsed; the payloads stay in the mapping.
      std::string structure;
      try {
        structure =
            detail::strip_onnx_payloads(std::span<const std::byte>(file->data(), file->size()),
                                        fs::path(path_).filename().string(), kMappedMinBytes);
      } catch (const Error& e) {
        fail("not a valid ONNX model: " + std::string(e.what()));
      }
      if (structure.size() >= (size_t{1} << 31))
        fail("the model's structure without its weight payloads is " +
             std::to_string(structure.size()) + " bytes; protobuf reads at most 2 GiB");
      if (!proto->ParseFromString(structure))
        fail("not a valid ONNX model (protobuf parse failed)");
    } else {
      if (file->size() >= (size_t{1} << 31))
        fail("file is " + std::to_string(file->size()) +
             " bytes; a protobuf ONNX model must be under 2 GiB (larger models keep their "
             "weights in external data files)");
      if (!proto->ParseFromArray(file->data(), static_cast<int>(file->size()))) {
        // The wire walker read_onnx_mapped runs names what is wrong (a
        // truncated field and its byte offset) where it can.
        try {
          detail::strip_onnx_payloads(std::span<const std::byte>(file->data(), file->size()),
                                      fs::path(path_).filename().string(), SIZE_MAX);
        } catch (const Error& e) {
          fail("not a valid ONNX model: " + std::string(e.what()));
        }
        fail("not a valid ONNX model (protobuf parse failed)");
      }
    }
    if (!proto->has_graph()) fail("not a valid ONNX model (no graph)");
    decoder_.emplace(path_, proto, mapped_ ? file : std::shared_ptr<Storage>());

    graph::Model m;
    m.source = path_;
    m.format = "onnx";
    m.proto = proto;
    m.ir_version = proto->ir_version();
    m.producer_name = proto->producer_name();
    m.producer_version = proto->producer_version();
    m.metadata["ir_version"] = std::to_string(proto->ir_version());
    if (!proto->producer_name().empty()) m.metadata["producer_name"] = proto->producer_name();
    if (!proto->producer_version().empty())
      m.metadata["producer_version"] = proto->producer_version();
    for (const auto& op : proto->opset_import()) {
      const std::string d = normalise_domain(op.domain());
      if (d.empty()) {
        m.opset = op.version();
        m.metadata["opset"] = std::to_string(op.version());
      } else {
        m.other_opsets[d] = op.version();
      }
    }
    read_graph(proto->graph(), m.graph);
    return m;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw Error(path_, message); }

  graph::ValueType read_type(const onnx::ValueInfoProto& vi) {
    graph::ValueType t;
    if (!vi.has_type() || !vi.type().has_tensor_type()) return t;
    const auto& tt = vi.type().tensor_type();
    if (tt.elem_type() != 0) t.dtype = dtype_of_onnx(tt.elem_type());
    if (tt.has_shape()) {
      graph::SymShape s;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value())
          s.push_back(graph::Dim::known(d.dim_value()));
        else if (d.has_dim_param() && !d.dim_param().empty())
          s.push_back(graph::Dim::named(d.dim_param()));
        else
          s.push_back(graph::Dim::unknown());
      }
      t.shape = std::move(s);
    }
    return t;
  }

  void read_graph(const onnx::GraphProto& gp, graph::Graph& g) {
    g.name = gp.name();
    if (gp.sparse_initializer_size() > 0)
      fail("sparse initializer " + quote_name(gp.sparse_initializer(0).values().name()) +
           " is unsupported");
    // Weight names (initializers and Constant outputs) are unique per graph.
    std::unordered_set<std::string> weights;
    auto claim = [&](const std::string& name) {
      if (name.empty()) fail("a weight in graph " + quote_name(gp.name()) + " has an empty name");
      if (!weights.insert(name).second)
        fail("weight name " + quote_name(name) + " is defined twice in graph " +
             quote_name(gp.name()));
    };
    for (const auto& t : gp.initializer()) {
      claim(t.name());
      g.add_initializer(t.name(), decoder_->decode(t, t.name()));
    }
    for (const auto& np : gp.node())
      if (np.op_type() == "Constant" && normalise_domain(np.domain()).empty()) {
        if (np.output_size() < 1 || np.output(0).empty())
          fail("Constant node " + quote_name(np.name()) + " has no output name");
        claim(np.output(0));
      }
    for (const auto& vi : gp.input()) {
      if (g.initializers.count(vi.name())) continue;  // an initializer listed as input (IR < 4)
      g.inputs.push_back(vi.name());
      g.types[vi.name()] = read_type(vi);
    }
    for (const auto& vi : gp.value_info()) g.types[vi.name()] = read_type(vi);
    for (const auto& vi : gp.output()) {
      g.outputs.push_back(vi.name());
      g.types[vi.name()] = read_type(vi);
    }
    g.nodes.reserve(static_cast<size_t>(gp.node_size()));
    for (const auto& np : gp.node()) g.nodes.push_back(read_node(np));
    sort_topologically(g);
  }

  /// ONNX requires nodes in topological order, but some exporters write them
  /// otherwise (the ISNet model): reorders them by Kahn's algorithm, always
  /// taking the earliest ready node in file order, so an ordered graph keeps
  /// its order. Values defined outside the graph (inputs, initializers, outer
  /// scope) are ready from the start. A cycle is an Error naming a node on it.
  void sort_topologically(graph::Graph& g) {
    const size_t n = g.nodes.size();
    std::unordered_map<std::string, size_t> producer;
    for (size_t i = 0; i < n; ++i)
      for (const auto& o : g.nodes[i].outputs)
        if (!o.empty()) producer.emplace(o, i);
    std::vector<std::vector<size_t>> users(n);
    std::vector<size_t> pending(n, 0);
    bool sorted = true;
    for (size_t i = 0; i < n; ++i) {
      std::set<size_t> deps;
      for (const auto& in : g.nodes[i].inputs) {
        auto it = producer.find(in);
        if (it != producer.end()) deps.insert(it->second);
      }
      for (const auto& name : subgraph_reads(g.nodes[i])) {
        auto it = producer.find(name);
        if (it != producer.end()) deps.insert(it->second);
      }
      deps.erase(i);
      for (size_t d : deps) {
        users[d].push_back(i);
        if (d > i) sorted = false;
      }
      pending[i] = deps.size();
    }
    if (sorted) return;
    std::set<size_t> ready;
    for (size_t i = 0; i < n; ++i)
      if (pending[i] == 0) ready.insert(i);
    std::vector<graph::Node> out;
    out.reserve(n);
    while (!ready.empty()) {
      const size_t i = *ready.begin();
      ready.erase(ready.begin());
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.insert(u);
      out.push_back(std::move(g.nodes[i]));
    }
    if (out.size() != n) {
      for (size_t i = 0; i < n; ++i)
        if (pending[i] > 0) fail(g.nodes[i].label() + " is on a cycle of the graph");
    }
    g.nodes = std::move(out);
  }

  /// Names the subgraphs of `node` read (they may come from this graph).
  static std::set<std::string> subgraph_reads(const graph::Node& node) {
    std::set<std::string> out;
    std::function<void(const graph::Graph&)> walk = [&](const graph::Graph& sub) {
      for (const graph::Node& n : sub.nodes) {
        out.insert(n.inputs.begin(), n.inputs.end());
        for (const auto& [k, a] : n.attributes) {
          if (a.kind == graph::Attribute::Kind::g) walk(*a.g);
          for (const auto& s : a.graphs) walk(*s);
        }
      }
      out.insert(sub.outputs.begin(), sub.outputs.end());
    };
    for (const auto& [k, a] : node.attributes) {
      if (a.kind == graph::Attribute::Kind::g) walk(*a.g);
      for (const auto& s : a.graphs) walk(*s);
    }
    return out;
  }

  graph::Node read_node(const onnx::NodeProto& np) {
    graph::Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = normalise_domain(np.domain());
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    if (n.op_type == "Constant" && n.domain.empty()) check_constant(np);
    for (const auto& ap : np.attribute()) n.attributes.emplace_back(ap.name(), read_attr(ap, n));
    return n;
  }

  /// A Constant has exactly one value attribute, not a sparse one.
  void check_constant(const onnx::NodeProto& np) {
    const std::string& out = np.output(0);
    const onnx::AttributeProto* value = nullptr;
    for (const auto& a : np.attribute()) {
      if (!is_constant_value(a.name())) continue;
      if (value)
        fail("Constant " + quote_name(out) + " has two value attributes (" + value->name() + ", " +
             a.name() + ")");
      value = &a;
    }
    if (!value) fail("Constant " + quote_name(out) + " has no value attribute");
    if (value->name() == "sparse_value")
      fail("Constant " + quote_name(out) + ": sparse_value is unsupported");
    if (value->name() == "value" && !value->has_t())
      fail("Constant " + quote_name(out) + ": attribute 'value' holds no tensor");
  }

  /// The kind of an attribute written without `type` (files before IR 3 and
  /// hand-built protos): the one payload field it sets.
  static onnx::AttributeProto::AttributeType kind_of_untyped(const onnx::AttributeProto& ap) {
    using AP = onnx::AttributeProto;
    if (ap.has_t()) return AP::TENSOR;
    if (ap.has_g()) return AP::GRAPH;
    if (ap.has_sparse_tensor()) return AP::SPARSE_TENSOR;
    if (ap.floats_size() > 0) return AP::FLOATS;
    if (ap.ints_size() > 0) return AP::INTS;
    if (ap.strings_size() > 0) return AP::STRINGS;
    if (ap.graphs_size() > 0) return AP::GRAPHS;
    if (ap.has_s()) return AP::STRING;
    if (ap.has_f()) return AP::FLOAT;
    if (ap.has_i()) return AP::INT;
    return AP::UNDEFINED;
  }

  graph::Attribute read_attr(const onnx::AttributeProto& ap, const graph::Node& n) {
    using AP = onnx::AttributeProto;
    using graph::Attribute;
    switch (ap.type() != AP::UNDEFINED ? ap.type() : kind_of_untyped(ap)) {
      case AP::FLOAT:
        return Attribute::of_float(ap.f());
      case AP::INT:
        return Attribute::of_int(ap.i());
      case AP::STRING:
        return Attribute::of_string(ap.s());
      case AP::TENSOR: {
        // A STRING tensor (a label table) is no weight: kept as its strings.
        if (ap.t().data_type() == onnx::TensorProto::STRING)
          return Attribute::of_strings({ap.t().string_data().begin(), ap.t().string_data().end()});
        return Attribute::of_tensor(
            decoder_->decode(ap.t(), n.outputs.empty() ? n.name : n.outputs[0]));
      }
      case AP::GRAPH: {
        auto g = std::make_shared<graph::Graph>();
        read_graph(ap.g(), *g);
        return Attribute::of_graph(std::move(g));
      }
      case AP::FLOATS:
        return Attribute::of_floats({ap.floats().begin(), ap.floats().end()});
      case AP::INTS:
        return Attribute::of_ints({ap.ints().begin(), ap.ints().end()});
      case AP::STRINGS:
        return Attribute::of_strings({ap.strings().begin(), ap.strings().end()});
      case AP::GRAPHS: {
        Attribute a;
        a.kind = Attribute::Kind::graphs;
        for (const auto& gp : ap.graphs()) {
          auto g = std::make_shared<graph::Graph>();
          read_graph(gp, *g);
          a.graphs.push_back(std::move(g));
        }
        return a;
      }
      default:
        fail(n.label() + ": attribute '" + ap.name() + "' has unsupported type " +
             std::to_string(static_cast<int>(ap.type())));
    }
  }

  std::string path_;
  bool mapped_ = false;
  std::optional<io_detail::OnnxTensorDecoder> decoder_;
};

graph::Model read(const std::string& path, bool mapped) {
  return attribute_errors(path, [&] { return Reader(path, mapped).read(); });
}

/// Throws for a node outside the default and ai.tailor domains, in `g` or its subgraphs.
void check_domains(const graph::Graph& g, const std::string& path) {
  for (const graph::Node& n : g.nodes) {
    if (!n.domain.empty() && n.domain != "ai.tailor")
      throw Error(path, n.label() + " is in domain '" + n.domain +
                            "'; only the default ONNX domain and ai.tailor are supported");
    for (const auto& [k, a] : n.attributes) {
      if (a.kind == graph::Attribute::Kind::g) check_domains(*a.g, path);
      for (const auto& s : a.graphs) check_domains(*s, path);
    }
  }
}

}  // namespace

graph::Model read_onnx(const std::string& path) {
  return read(path, false);
}

graph::Model read_onnx_mapped(const std::string& path) {
  return read(path, true);
}

void check_onnx_support(const graph::Model& model) {
  const std::string& path = model.source;
  if (model.format == "onnx" && !model.metadata.count("opset"))
    throw Error(path, "no opset import for the default ONNX domain");
  if (model.opset < 9 || model.opset > 17)
    throw Error(path, "opset " + std::to_string(model.opset) +
                          " of the default domain is unsupported (9–17)");
  check_domains(model.graph, path);
}

namespace graph {

Model import_onnx(const std::string& path) {
  Model m = read_onnx(path);
  check_onnx_support(m);
  return m;
}

}  // namespace graph
}  // namespace tailor
