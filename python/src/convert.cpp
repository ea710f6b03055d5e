// tailor's result structs as plain Python values (convert.h).
#include "convert.h"

#include <pybind11/stl.h>

#include <cmath>

namespace py = pybind11;

namespace tailor::python {
namespace {

template <class T>
py::object optional_value(const std::optional<T>& v) {
  return v ? py::cast(*v) : py::none();
}

}  // namespace

py::dict profile_dict(const ModelProfile& p) {
  py::list layers;
  for (const LayerProfile& l : p.layers) {
    py::list candidates;
    for (const Candidate& c : l.candidates) {
      py::dict d;
      d["label"] = c.label;
      d["bytes"] = c.bytes;
      d["rel_error"] = c.rel_error;
      d["macs"] = c.macs;
      d["params"] = c.params;
      d["encode_seconds"] = c.encode_seconds;
      d["rel_error_activation"] = optional_value(c.rel_error_activation);
      d["output_damage"] = optional_value(c.output_damage);
      candidates.append(d);
    }
    py::dict d;
    d["name"] = l.name;
    d["shape_out_in"] = py::tuple(py::cast(l.shape_out_in));
    d["numel"] = l.numel;
    d["dense_bytes"] = l.dense_bytes;
    d["kept_dense"] = l.kept_dense.empty() ? py::object(py::none()) : py::cast(l.kept_dense);
    d["candidates"] = candidates;
    layers.append(d);
  }
  py::dict d;
  d["model"] = p.model;
  d["dense_bytes"] = p.dense_bytes;
  d["fixed_bytes"] = p.fixed_bytes;
  d["output_metric"] = p.output_metric.empty() ? py::object(py::none()) : py::cast(p.output_metric);
  d["calibration"] = p.calibration.empty() ? py::object(py::none()) : py::cast(p.calibration);
  d["layers"] = layers;
  return d;
}

py::dict plan_dict(const plan::Plan& p) {
  py::list choices;
  for (const plan::PlanChoice& c : p.choices) {
    py::dict d;
    d["layer"] = c.layer;
    d["label"] = c.label;
    d["rel_error"] = c.rel_error;
    d["bytes"] = c.bytes;
    choices.append(d);
  }
  py::dict d;
  d["model"] = p.model;
  d["solver"] = p.solver;
  d["objective_name"] = p.objective;
  d["objective"] = p.objective_value;
  d["budget_bytes"] = p.budget_bytes;
  d["fixed_bytes"] = p.fixed_bytes;
  d["total_bytes"] = p.total_bytes;
  d["seed"] = p.seed;
  d["lower_bound"] = std::isnan(p.lower_bound) ? py::object(py::none()) : py::cast(p.lower_bound);
  d["gap"] = p.gap;
  d["proven_optimal"] = p.proven_optimal;
  d["seconds"] = p.seconds;
  d["nodes"] = p.nodes;
  d["choices"] = choices;
  return d;
}

py::dict result_dict(const compress::CompressResult& r) {
  const report::Verification& v = r.verification;
  py::list outputs;
  for (const report::OutputError& e : v.outputs) {
    py::dict d;
    d["name"] = e.name;
    d["rel_error"] = e.rel_error;
    d["cosine"] = e.cosine;
    outputs.append(d);
  }
  py::object metric = py::none();
  if (v.metric) {
    py::dict d;
    d["name"] = v.metric->name;
    d["original"] = v.metric->original;
    d["compressed"] = v.metric->compressed;
    metric = d;
  }
  py::object saliency = py::none();
  if (v.saliency) {
    py::list inputs;
    for (const report::MaskScore& m : v.saliency->inputs) {
      py::dict d;
      d["input"] = m.input;
      d["mae"] = m.mae;
      d["iou"] = m.iou;
      inputs.append(d);
    }
    py::dict d;
    d["output"] = v.saliency->output;
    d["threshold"] = v.saliency->threshold;
    d["mae"] = v.saliency->mae;
    d["iou"] = v.saliency->iou;
    d["inputs"] = inputs;
    saliency = d;
  }
  py::dict verification;
  verification["inputs"] = v.inputs;
  verification["outputs"] = outputs;
  verification["metric"] = metric;
  verification["saliency"] = saliency;
  verification["predicted_error"] = v.predicted_error;
  verification["measured_error"] = v.measured_error;
  verification["damage_metric"] =
      v.damage_metric.empty() ? py::object(py::none()) : py::cast(v.damage_metric);
  verification["predicted_damage"] = v.predicted_damage;
  verification["measured_damage"] = v.measured_damage;
  verification["measured_damage_interval"] =
      py::make_tuple(v.measured_interval.low, v.measured_interval.high);
  verification["calibration_damage"] = v.calibration_damage;
  verification["calibration_damage_interval"] =
      py::make_tuple(v.calibration_interval.low, v.calibration_interval.high);

  py::dict rewrites;
  for (const compress::LayerRewrite& w : r.rewrites) rewrites[py::str(w.layer)] = w.form;
  py::dict files;
  for (const auto& [name, bytes] : r.file_bytes) files[py::str(name)] = bytes;
  py::object ocr = py::none();
  if (v.metric && r.kind == "onnx" && v.metric->name == "OCR character accuracy") {
    py::list differences;
    for (const auto& diff : r.ocr_differences) {
      py::dict d;
      d["file"] = diff.file;
      d["truth"] = diff.truth;
      d["original"] = diff.original;
      d["compressed"] = diff.compressed;
      differences.append(d);
    }
    py::dict d;
    d["exact_original"] = r.ocr_exact_original;
    d["exact_compressed"] = r.ocr_exact_compressed;
    d["differences"] = differences;
    ocr = d;
  }
  py::object kld = py::none();
  if (r.kld) {
    const llm::CompareResult& k = *r.kld;
    py::dict d;
    d["mean_kl"] = k.mean_kl;
    d["kl_stderr"] = k.kl_stderr;
    d["kl_median"] = k.kl_median;
    d["kl_p99"] = k.kl_p99;
    d["max_kl"] = k.max_kl;
    d["top1_agreement"] = k.top1_agreement;
    d["top1_stderr"] = k.top1_stderr;
    d["ppl_original"] = k.ppl_orig;
    d["ppl_compressed"] = k.ppl_comp;
    d["positions"] = k.positions;
    kld = d;
  }
  py::dict d;
  d["kind"] = r.kind;
  d["out_dir"] = r.out_dir;
  d["seconds"] = r.seconds;
  d["profile_cached"] = r.profile_cached;
  d["damage_seconds"] = r.damage_seconds;
  d["verification"] = verification;
  d["rewrites"] = rewrites;
  d["files"] = files;
  d["ocr"] = ocr;
  d["kld"] = kld;
  d["standard_vs_tailor_max_abs"] = r.standard_vs_tailor_max_abs;
  d["standard_vs_tailor_max_rel"] = r.standard_vs_tailor_max_rel;
  return d;
}

}  // namespace tailor::python
