// Graph IR → ONNX ModelProto.
#include <onnx/onnx_pb.h>

#include <limits>
#include <set>

#include "onnx_types.h"
#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"
#include "tailor/io/onnx.h"
#include "tailor/schemes/scheme.h"

namespace tailor::graph {

namespace {

void write_tensor(const Tensor& t, const std::string& name, onnx::TensorProto& tp) {
  tp.set_name(name);
  tp.set_data_type(onnx_of_dtype(t.dtype()));
  for (int64_t d : t.shape()) tp.add_dims(d);
  const Tensor c = t.contiguous();
  tp.set_raw_data(reinterpret_cast<const char*>(c.raw()), c.nbytes());
}

void write_type(const std::string& name, const ValueType* vt, onnx::ValueInfoProto& vi) {
  vi.set_name(name);
  if (!vt || (!vt->dtype && !vt->shape)) return;  // no type recorded (allowed in subgraphs)
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(vt && vt->dtype ? onnx_of_dtype(*vt->dtype) : 0);
  if (vt && vt->shape) {
    auto* sp = tt->mutable_shape();
    for (const Dim& d : *vt->shape) {
      auto* dp = sp->add_dim();
      if (d.is_known())
        dp->set_dim_value(d.value);
      else if (!d.symbol.empty())
        dp->set_dim_param(d.symbol);
    }
  }
}

void write_graph(const Graph& g, onnx::GraphProto& gp);

void write_attr(const std::string& name, const Attribute& a, const Node& n,
                onnx::AttributeProto& ap) {
  using AP = onnx::AttributeProto;
  ap.set_name(name);
  switch (a.kind) {
    case Attribute::Kind::f:
      ap.set_type(AP::FLOAT);
      ap.set_f(a.f);
      break;
    case Attribute::Kind::i:
      ap.set_type(AP::INT);
      ap.set_i(a.i);
      break;
    case Attribute::Kind::s:
      ap.set_type(AP::STRING);
      ap.set_s(a.s);
      break;
    case Attribute::Kind::t:
      ap.set_type(AP::TENSOR);
      write_tensor(a.t, n.outputs.empty() ? "" : n.outputs[0], *ap.mutable_t());
      break;
    case Attribute::Kind::g:
      ap.set_type(AP::GRAPH);
      write_graph(*a.g, *ap.mutable_g());
      break;
    case Attribute::Kind::floats:
      ap.set_type(AP::FLOATS);
      for (float v : a.floats) ap.add_floats(v);
      break;
    case Attribute::Kind::ints:
      ap.set_type(AP::INTS);
      for (int64_t v : a.ints) ap.add_ints(v);
      break;
    case Attribute::Kind::strings:
      ap.set_type(AP::STRINGS);
      for (const auto& v : a.strings) ap.add_strings(v);
      break;
    case Attribute::Kind::graphs:
      ap.set_type(AP::GRAPHS);
      for (const auto& sub : a.graphs) write_graph(*sub, *ap.add_graphs());
      break;
    case Attribute::Kind::encoded:
      // Written by write_encoded (several ONNX attributes).
      break;
  }
}

/// A compressed weight as ONNX attributes: `<name>` = the scheme label,
/// `<name>.out`, `<name>.in`, and one TENSOR attribute `<name>.<factor>` per
/// stored factor (in the scheme's order).
void write_encoded(const std::string& name, const schemes::Encoded& e, onnx::NodeProto& np) {
  using AP = onnx::AttributeProto;
  auto* label = np.add_attribute();
  label->set_name(name);
  label->set_type(AP::STRING);
  label->set_s(e.label());
  for (const auto& [suffix, v] : {std::pair{".out", e.out()}, std::pair{".in", e.in()}}) {
    auto* a = np.add_attribute();
    a->set_name(name + suffix);
    a->set_type(AP::INT);
    a->set_i(v);
  }
  for (const schemes::Factor& f : e.factors()) {
    auto* a = np.add_attribute();
    a->set_name(name + "." + f.name);
    a->set_type(AP::TENSOR);
    write_tensor(f.tensor, f.name, *a->mutable_t());
  }
}

void write_graph(const Graph& g, onnx::GraphProto& gp) {
  gp.set_name(g.name);
  std::set<std::string> listed;
  for (const auto& in : g.inputs) {
    write_type(in, g.type_of(in), *gp.add_input());
    listed.insert(in);
  }
  for (const auto& out : g.outputs) {
    write_type(out, g.type_of(out), *gp.add_output());
    listed.insert(out);
  }
  for (const auto& name : g.initializer_order) {
    write_tensor(g.initializers.at(name), name, *gp.add_initializer());
    listed.insert(name);
  }
  for (const auto& [name, vt] : g.types)
    if (!listed.count(name)) write_type(name, &vt, *gp.add_value_info());
  for (const Node& n : g.nodes) {
    auto* np = gp.add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    for (const auto& i : n.inputs) np->add_input(i);
    for (const auto& o : n.outputs) np->add_output(o);
    for (const auto& [name, a] : n.attributes) {
      if (a.kind == Attribute::Kind::encoded)
        write_encoded(name, *a.encoded, *np);
      else
        write_attr(name, a, n, *np->add_attribute());
    }
  }
}

}  // namespace

std::shared_ptr<onnx::ModelProto> export_onnx(const Model& model) {
  auto mp = std::make_shared<onnx::ModelProto>();
  mp->set_ir_version(model.ir_version);
  mp->set_producer_name(model.producer_name.empty() ? "tailor" : model.producer_name);
  if (!model.producer_version.empty()) mp->set_producer_version(model.producer_version);
  auto* op = mp->add_opset_import();
  op->set_domain("");
  op->set_version(model.opset);
  for (const auto& [d, v] : model.other_opsets) {
    auto* o = mp->add_opset_import();
    o->set_domain(d);
    o->set_version(v);
  }
  write_graph(model.graph, *mp->mutable_graph());
  return mp;
}

void write_onnx(const Model& model, const std::string& path) {
  const auto mp = export_onnx(model);
  const size_t size = mp->ByteSizeLong();
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw Error(path, "model of " + std::to_string(size) + " bytes exceeds protobuf's 2 GiB limit");
  std::string bytes;
  if (!mp->SerializeToString(&bytes)) throw Error(path, "protobuf serialisation failed");
  write_file_atomic(path, bytes);
}

}  // namespace tailor::graph
