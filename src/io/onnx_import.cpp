// ONNX ModelProto → graph IR.
#include <onnx/onnx_pb.h>

#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>

#include "onnx_types.h"
#include "tailor/core/error.h"
#include "tailor/io/onnx.h"
#include "tailor/io/onnx_reader.h"

namespace tailor::graph {
namespace {

/// Read-only bytes inside a ModelProto's raw_data, kept alive with the proto.
class ProtoStorage final : public Storage {
 public:
  ProtoStorage(std::shared_ptr<const onnx::ModelProto> owner, const std::byte* p, size_t n)
      : owner_(std::move(owner)), p_(p), n_(n) {}
  const std::byte* data() const override { return p_; }
  std::byte* mutable_data() override { return nullptr; }
  size_t size() const override { return n_; }

 private:
  std::shared_ptr<const onnx::ModelProto> owner_;
  const std::byte* p_;
  size_t n_;
};

class Importer {
 public:
  Importer(const ModelFile& file, std::shared_ptr<const onnx::ModelProto> proto)
      : file_(file), proto_(std::move(proto)) {}

  Model run() {
    Model m;
    m.source = file_.path;
    m.proto = proto_;
    m.ir_version = proto_->ir_version();
    m.producer_name = proto_->producer_name();
    m.producer_version = proto_->producer_version();
    bool have_default = false;
    for (const auto& op : proto_->opset_import()) {
      const std::string d = normalise_domain(op.domain());
      if (d.empty()) {
        m.opset = op.version();
        have_default = true;
      } else {
        m.other_opsets[d] = op.version();
      }
    }
    if (!have_default) fail("no opset import for the default ONNX domain");
    if (m.opset < 9 || m.opset > 17)
      fail("opset " + std::to_string(m.opset) + " of the default domain is unsupported (9–17)");
    read_graph(proto_->graph(), m.graph);
    return m;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw Error(file_.path, message); }

  static std::string normalise_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

  ValueType read_type(const onnx::ValueInfoProto& vi) {
    ValueType t;
    if (!vi.has_type() || !vi.type().has_tensor_type()) return t;
    const auto& tt = vi.type().tensor_type();
    if (tt.elem_type() != 0) t.dtype = dtype_of_onnx(tt.elem_type());
    if (tt.has_shape()) {
      SymShape s;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value())
          s.push_back(Dim::known(d.dim_value()));
        else if (d.has_dim_param() && !d.dim_param().empty())
          s.push_back(Dim::named(d.dim_param()));
        else
          s.push_back(Dim::unknown());
      }
      t.shape = std::move(s);
    }
    return t;
  }

  void read_graph(const onnx::GraphProto& gp, Graph& g) {
    g.name = gp.name();
    for (const auto& t : gp.initializer()) {
      if (t.name().empty()) fail("an initializer of graph '" + gp.name() + "' has no name");
      if (g.initializers.count(t.name()))
        fail("initializer '" + t.name() + "' is defined twice in graph '" + gp.name() + "'");
      g.add_initializer(t.name(), read_tensor(t, t.name()));
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
  void sort_topologically(Graph& g) {
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
    std::vector<Node> out;
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
  static std::set<std::string> subgraph_reads(const Node& node) {
    std::set<std::string> out;
    std::function<void(const Graph&)> walk = [&](const Graph& sub) {
      for (const Node& n : sub.nodes) {
        out.insert(n.inputs.begin(), n.inputs.end());
        for (const auto& [k, a] : n.attributes) {
          if (a.kind == Attribute::Kind::g) walk(*a.g);
          for (const auto& s : a.graphs) walk(*s);
        }
      }
      out.insert(sub.outputs.begin(), sub.outputs.end());
    };
    for (const auto& [k, a] : node.attributes) {
      if (a.kind == Attribute::Kind::g) walk(*a.g);
      for (const auto& s : a.graphs) walk(*s);
    }
    return out;
  }

  Node read_node(const onnx::NodeProto& np) {
    Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = normalise_domain(np.domain());
    if (!n.domain.empty() && n.domain != "ai.tailor")
      fail(n.label() + " is in domain '" + n.domain +
           "'; only the default ONNX domain and ai.tailor are supported");
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (const auto& ap : np.attribute()) n.attributes.emplace_back(ap.name(), read_attr(ap, n));
    return n;
  }

  Attribute read_attr(const onnx::AttributeProto& ap, const Node& n) {
    using AP = onnx::AttributeProto;
    switch (ap.type()) {
      case AP::FLOAT:
        return Attribute::of_float(ap.f());
      case AP::INT:
        return Attribute::of_int(ap.i());
      case AP::STRING:
        return Attribute::of_string(ap.s());
      case AP::TENSOR:
        return Attribute::of_tensor(read_tensor(ap.t(), n.outputs.empty() ? n.name : n.outputs[0]));
      case AP::GRAPH: {
        auto g = std::make_shared<Graph>();
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
          auto g = std::make_shared<Graph>();
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

  Tensor read_tensor(const onnx::TensorProto& tp, const std::string& name) {
    const std::string who = "tensor '" + name + "'";
    const std::optional<DType> dt = dtype_of_onnx(tp.data_type());
    if (!dt) fail(who + " has unsupported ONNX data type " + std::to_string(tp.data_type()));
    Shape shape(tp.dims().begin(), tp.dims().end());
    const int64_t numel = attribute_errors(file_.path, [&] { return shape_numel(shape); });
    const size_t bytes = static_cast<size_t>(numel) * dtype_size(*dt);
    if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
      const Weight* w = file_.find(name);
      if (!w || w->tensor.shape() != shape || w->tensor.dtype() != *dt)
        fail(who + " has external data the model file did not load under that name");
      return w->tensor;
    }
    if (tp.has_raw_data()) {
      const std::string& raw = tp.raw_data();
      if (raw.size() != bytes)
        fail(who + ": raw_data holds " + std::to_string(raw.size()) + " bytes, shape " +
             shape_to_string(shape) + " needs " + std::to_string(bytes));
      const auto* p = reinterpret_cast<const std::byte*>(raw.data());
      if (bytes > 0 && reinterpret_cast<uintptr_t>(p) % dtype_size(*dt) == 0) {
        auto storage = std::make_shared<ProtoStorage>(proto_, p, bytes);
        return Tensor::view(std::move(storage), 0, *dt, std::move(shape));
      }
      Tensor t = Tensor::zeros(*dt, std::move(shape));
      if (bytes) std::memcpy(t.mutable_raw(), p, bytes);
      return t;
    }
    Tensor t = Tensor::zeros(*dt, std::move(shape));
    if (numel == 0) return t;
    std::byte* dst = t.mutable_raw();
    auto need = [&](int have, const char* field) {
      if (have != numel)
        fail(who + ": " + field + " holds " + std::to_string(have) + " values, shape " +
             shape_to_string(t.shape()) + " needs " + std::to_string(numel));
    };
    switch (*dt) {
      case DType::f32:
        need(tp.float_data_size(), "float_data");
        std::memcpy(dst, tp.float_data().data(), bytes);
        break;
      case DType::f64:
        need(tp.double_data_size(), "double_data");
        std::memcpy(dst, tp.double_data().data(), bytes);
        break;
      case DType::i64:
        need(tp.int64_data_size(), "int64_data");
        std::memcpy(dst, tp.int64_data().data(), bytes);
        break;
      case DType::i32:
        need(tp.int32_data_size(), "int32_data");
        std::memcpy(dst, tp.int32_data().data(), bytes);
        break;
      default: {
        need(tp.int32_data_size(), "int32_data");
        const size_t es = dtype_size(*dt);
        for (int64_t i = 0; i < numel; ++i) {
          const int32_t v = tp.int32_data(static_cast<int>(i));
          if (es == 1) {
            dst[i] = static_cast<std::byte>(static_cast<uint8_t>(v));
          } else {
            const uint16_t u = static_cast<uint16_t>(v);
            std::memcpy(dst + 2 * i, &u, 2);
          }
        }
      }
    }
    return t;
  }

  const ModelFile& file_;
  std::shared_ptr<const onnx::ModelProto> proto_;
};

}  // namespace

Model import_onnx(const ModelFile& file) {
  if (file.format != "onnx" || !file.onnx) throw Error(file.path, "not an ONNX model");
  return Importer(file, file.onnx).run();
}

Model import_onnx(const std::string& path) {
  return import_onnx(read_onnx(path));
}

}  // namespace tailor::graph
