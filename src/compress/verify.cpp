#include "compress/verify.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "tailor/core/error.h"
#include "tailor/core/finite.h"
#include "tailor/core/rng.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "tailor/llm/kld.h"
#include "tailor/llm/llama.h"
#include "tailor/runtime/executor.h"
#include "tailor/tasks/ocr.h"
#include "tailor/tasks/saliency.h"

namespace tailor::compress {
namespace fs = std::filesystem;

namespace {

using Inputs = std::map<std::string, Tensor>;

/// Fails verification (Error naming the output `name`) when `t`, the output
/// of the `which` model on `input`, holds NaN or ±Inf: no error or cosine
/// can be computed from it, and a comparison would hide it.
void require_finite(const Tensor& t, const std::string& name, const char* which,
                    const std::string& input) {
  const NonFinite bad = find_non_finite(t);
  if (bad.count == 0) return;
  throw Error(name, fmt::format("the {} model's output holds {} non-finite value{} (element {} "
                                "is {}) on input {}; verification cannot compare it",
                                which, bad.count, bad.count == 1 ? "" : "s", bad.first,
                                bad.first_value, input));
}

/// Running sums of one output over all inputs.
struct ErrorSums {
  double yy = 0, hh = 0, yh = 0, dd = 0;
  /// y: the original's output, h: the compressed model's, on `input`.
  void add(const Tensor& y, const Tensor& h, const std::string& name, const std::string& input) {
    if (y.shape() != h.shape())
      throw Error(name, fmt::format("compressed output shape {} differs from the original's {}",
                                    shape_to_string(h.shape()), shape_to_string(y.shape())));
    require_finite(y, name, "original", input);
    require_finite(h, name, "compressed", input);
    const std::vector<float> a = y.to_f32_vector(), b = h.to_f32_vector();
    for (size_t i = 0; i < a.size(); ++i) {
      yy += double(a[i]) * a[i];
      hh += double(b[i]) * b[i];
      yh += double(a[i]) * b[i];
      dd += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    }
  }
  report::OutputError result(const std::string& name) const {
    report::OutputError e;
    e.name = name;
    e.rel_error = yy > 0 ? std::sqrt(dd / yy) : std::sqrt(dd);
    e.cosine = yy > 0 && hh > 0 ? yh / std::sqrt(yy * hh) : (dd == 0 ? 1.0 : 0.0);
    return e;
  }
};

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_f32_vector(), y = b.to_f32_vector();
  if (x.size() != y.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(double(x[i]) - y[i]));
  return m;
}

/// The declared [1, 3, H, W] shape of a model's only input, or nullopt.
std::optional<Shape> image_input_shape(const graph::Model& m) {
  if (m.graph.inputs.size() != 1) return std::nullopt;
  const graph::ValueType* t = m.graph.type_of(m.graph.inputs[0]);
  if (!t || !t->shape || t->shape->size() != 4) return std::nullopt;
  Shape s;
  for (const graph::Dim& d : *t->shape) {
    if (!d.is_known()) return std::nullopt;
    s.push_back(d.value);
  }
  if (s[0] != 1 || s[1] != 3) return std::nullopt;
  return s;
}

/// `x` read from `f` for input `name`: its dtype and rank/known dims must be
/// the declared ones and its values finite (else an Error naming the file,
/// not the graph input).
Tensor checked_npy(const fs::path& f, const std::string& name, const graph::Model& m) {
  Tensor x = read_npy(f.string());
  check_finite_inputs({{name, x}}, f.string());
  const graph::ValueType* t = m.graph.type_of(name);
  if (!t) return x;
  if (t->dtype && *t->dtype != x.dtype())
    throw Error(f.string(), fmt::format("--calib: input '{}' has dtype {}, the model declares {}",
                                        name, dtype_name(x.dtype()), dtype_name(*t->dtype)));
  if (t->shape) {
    bool ok = t->shape->size() == x.shape().size();
    std::vector<std::string> want;
    for (size_t k = 0; k < t->shape->size(); ++k) {
      const graph::Dim& d = (*t->shape)[k];
      want.push_back(d.is_known() ? std::to_string(d.value) : "?");
      if (ok && d.is_known() && d.value != x.shape()[k]) ok = false;
    }
    if (!ok)
      throw Error(f.string(),
                  fmt::format("--calib: input '{}' has shape [{}], the model declares [{}]", name,
                              fmt::join(x.shape(), ", "), fmt::join(want, ", ")));
  }
  return x;
}

std::vector<Inputs> calib_inputs(const std::string& dir, const graph::Model& m,
                                 const CompressOptions& o, std::vector<std::string>& labels) {
  const std::vector<std::string>& names = m.graph.inputs;
  if (!fs::is_directory(dir)) throw Error(dir, "--calib: not a folder");
  std::vector<Inputs> runs;
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) subdirs.push_back(e.path());
  std::sort(subdirs.begin(), subdirs.end());
  if (names.size() == 1 && subdirs.empty()) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && (e.path().extension() == ".npy" || e.path().extension() == ".png"))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    const std::optional<Shape> image = image_input_shape(m);
    const graph::ValueType* t = m.graph.type_of(names[0]);
    for (const fs::path& f : files) {
      if (f.extension() == ".npy") {
        runs.push_back({{names[0], checked_npy(f, names[0], m)}});
      } else {
        if (!image)
          throw Error(f.string(),
                      "--calib: a .png input needs a model input of declared shape "
                      "[1, 3, H, W]");
        Tensor x = tasks::image_to_nchw(tasks::read_png(f.string()), static_cast<int>((*image)[2]),
                                        static_cast<int>((*image)[3]), o.image_mean, o.image_std);
        if (t && t->dtype && *t->dtype != DType::f32) x = x.to(*t->dtype);
        runs.push_back({{names[0], std::move(x)}});
      }
      labels.push_back(f.filename().string());
    }
  } else {
    // One layout: files at the top (one model input) or one subfolder per run;
    // files beside the subfolders were ignored without a word.
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && (e.path().extension() == ".npy" || e.path().extension() == ".png"))
        throw Error(e.path().string(),
                    "--calib: a file beside subfolders; give files (one model input) or one "
                    "subfolder per input set, not both");
    for (const fs::path& d : subdirs) {
      Inputs in;
      for (const std::string& n : names) {
        const fs::path f = d / (n + ".npy");
        if (!fs::exists(f)) throw Error(f.string(), "--calib: missing input '" + n + "'");
        in[n] = checked_npy(f, n, m);
      }
      runs.push_back(std::move(in));
      labels.push_back(d.filename().string());
    }
  }
  if (runs.empty())
    throw Error(dir, names.size() == 1 ? "--calib: no .npy or .png files"
                                       : "--calib: no subfolders holding <input>.npy files");
  return runs;
}

std::vector<Inputs> random_inputs(const graph::Model& m, int count, uint64_t seed) {
  std::vector<Inputs> runs;
  Rng rng(seed);
  for (int k = 0; k < count; ++k) {
    Inputs in;
    for (const std::string& name : m.graph.inputs) {
      const graph::ValueType* t = m.graph.type_of(name);
      if (!t || !t->dtype || !t->shape)
        throw Error(m.source, "input '" + name + "' has no declared type; give --calib");
      Shape s;
      for (size_t d = 0; d < t->shape->size(); ++d) {
        const graph::Dim& dim = (*t->shape)[d];
        s.push_back(dim.is_known() ? dim.value : (d == 0 ? 1 : 64));
      }
      Tensor x = Tensor::zeros(*t->dtype, s);
      if (*t->dtype == DType::f32) {
        float* p = x.mutable_data<float>();
        for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<float>(rng.normal());
      } else if (is_floating(*t->dtype)) {
        std::vector<float> v(static_cast<size_t>(x.numel()));
        for (float& f : v) f = static_cast<float>(rng.normal());
        x = Tensor::from_f32(s, v).to(*t->dtype);
      }
      in[name] = std::move(x);
    }
    runs.push_back(std::move(in));
  }
  return runs;
}

/// The OCR fixture folder shipped with tailor: share/tailor/ocr beside the
/// installed executable (bin/../share/tailor/ocr), else tests/fixtures/ocr of
/// the source tree this build came from; never the working folder. Empty
/// when neither holds labels.tsv.
std::string shipped_ocr_lines() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "tailor" / "ocr");
#ifdef TAILOR_SOURCE_FIXTURES
  candidates.push_back(fs::path(TAILOR_SOURCE_FIXTURES) / "ocr");
#endif
  for (const fs::path& c : candidates)
    if (fs::is_regular_file(c / "labels.tsv", ec)) return c.string();
  return {};
}

/// The OCR key file and fixture folder when `m` is a PaddleOCR recogniser.
/// `why` says why it is not, for an error when the OCR check was asked for.
bool ocr_task(const graph::Model& m, const CompressOptions& o, std::string& keys,
              std::string& lines, std::vector<std::string>& classes, std::string& why) {
  if (m.graph.inputs.size() != 1 || m.graph.outputs.size() != 1) {
    why = "not a PaddleOCR recogniser (one input and one output)";
    return false;
  }
  keys = !o.ocr_keys.empty() ? o.ocr_keys
                             : (fs::path(o.model).parent_path() / "ppocr_keys_v1.txt").string();
  lines = !o.ocr_lines.empty() ? o.ocr_lines : shipped_ocr_lines();
  if (!fs::exists(keys)) {
    why = "no key file " + keys + " (give --ocr-keys)";
    return false;
  }
  if (lines.empty() || !fs::exists(fs::path(lines) / "labels.tsv")) {
    why = "no OCR fixture lines (labels.tsv) found; give --ocr-lines";
    return false;
  }
  const graph::ValueType* t = m.graph.type_of(m.graph.outputs[0]);
  classes = tasks::read_ocr_keys(keys);
  if (!t || !t->shape || t->shape->empty() ||
      t->shape->back().value != static_cast<int64_t>(classes.size())) {
    why = fmt::format("not a PaddleOCR recogniser for {} ({} classes in the last output axis)",
                      keys, classes.size());
    return false;
  }
  return true;
}

/// A check asked for (--task ocr, --ocr-lines, --ocr-keys) that cannot run
/// is an error, never a silent fall-back to random inputs.
void refuse_impossible_ocr(const CompressOptions& o, bool ocr, const std::string& why) {
  const bool asked =
      o.task == "ocr" || (o.task == "auto" && (!o.ocr_lines.empty() || !o.ocr_keys.empty()));
  if (asked && !ocr)
    throw Error(o.model,
                "the OCR check was asked for (--task ocr, --ocr-lines or --ocr-keys) "
                "but cannot run: " +
                    (!o.calib_dir.empty() ? std::string("--calib was given") : why));
}

/// The node producing `value` in the main graph, or nullptr.
const graph::Node* producer(const graph::Model& m, const std::string& value) {
  for (const graph::Node& n : m.graph.nodes)
    if (std::find(n.outputs.begin(), n.outputs.end(), value) != n.outputs.end()) return &n;
  return nullptr;
}

/// Whether the first output is declared N×1×H×W (H, W > 1 or symbolic).
bool mask_shaped(const graph::Model& m) {
  if (m.graph.outputs.empty()) return false;
  const graph::ValueType* t = m.graph.type_of(m.graph.outputs[0]);
  if (!t || !t->shape || t->shape->size() != 4) return false;
  const auto& s = *t->shape;
  auto big = [](const graph::Dim& d) { return !d.is_known() || d.value > 1; };
  return s[1].is_known() && s[1].value == 1 && big(s[2]) && big(s[3]);
}

/// Automatic saliency detection, conservative: one image input, the first
/// output N×1×H×W and computed by a Sigmoid (through Cast/Identity nodes).
bool looks_like_saliency(const graph::Model& m) {
  if (!mask_shaped(m) || m.graph.inputs.size() != 1) return false;
  const graph::Node* n = producer(m, m.graph.outputs[0]);
  for (int hops = 0; n && hops < 4 && (n->op_type == "Cast" || n->op_type == "Identity"); ++hops)
    n = n->inputs.empty() ? nullptr : producer(m, n->inputs[0]);
  return n && n->op_type == "Sigmoid" && n->domain.empty();
}

/// A copy computing in f32 (f16 graphs such as ISNet; f32 graphs unchanged).
graph::Model promoted(const graph::Model& m) {
  graph::Model c = m;
  graph::promote_f16_to_f32(c);
  return c;
}

/// The indices of `n` items in calibration (`parity` 0: even-numbered) or
/// verification (1: odd-numbered) half; a single item serves both.
std::vector<size_t> half(size_t n, int parity) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i)
    if (n == 1 || static_cast<int>(i % 2) == parity) out.push_back(i);
  return out;
}

/// The outputs the damage metric compares: the distribution alone for KL.
std::vector<std::string> damage_outputs(const graph::Model& m, DamageMetric metric) {
  std::vector<std::string> outs = m.graph.outputs;
  if (metric != DamageMetric::relative_error && !outs.empty()) outs.resize(1);
  return outs;
}

/// The damage metric of an ONNX model: KL when its first output is a softmax.
DamageMetric onnx_metric(const graph::Model& m) {
  return m.graph.outputs.empty() ? DamageMetric::relative_error
                                 : detect_damage_metric(m, m.graph.outputs[0]);
}

}  // namespace

Calibration onnx_calibration(const graph::Model& original, const CompressOptions& o,
                             bool verification) {
  const int parity = verification ? 1 : 0;
  const char* which = verification ? "odd" : "even";
  Calibration c;
  c.metric = onnx_metric(original);
  c.outputs = damage_outputs(original, c.metric);
  std::string keys, lines, why;
  std::vector<std::string> classes;
  const bool ocr = (o.task == "auto" || o.task == "ocr") && o.calib_dir.empty() &&
                   ocr_task(original, o, keys, lines, classes, why);
  refuse_impossible_ocr(o, ocr, why);
  if (ocr) {
    const auto labels = tasks::read_ocr_labels(lines);
    for (size_t i : half(labels.size(), parity)) {
      const std::string path = (fs::path(lines) / labels[i].first).string();
      c.inputs.push_back({{original.graph.inputs[0], attribute_errors(path, [&] {
                             return tasks::ocr_rec_preprocess(tasks::read_png(path));
                           })}});
      c.labels.push_back(path);
    }
    c.description = fmt::format("{} OCR fixture lines ({}-numbered lines of {})", c.inputs.size(),
                                which, lines);
  } else if (!o.calib_dir.empty()) {
    std::vector<std::string> labels;
    const std::vector<Inputs> runs = calib_inputs(o.calib_dir, original, o, labels);
    for (size_t i : half(runs.size(), parity)) {
      c.inputs.push_back(runs[i]);
      c.labels.push_back((fs::path(o.calib_dir) / labels[i]).string());
    }
    c.description =
        runs.size() == 1
            ? fmt::format("the one --calib input of {} (verified on the same input)", o.calib_dir)
            : fmt::format("{} --calib inputs ({}-numbered of {})", c.inputs.size(), which,
                          o.calib_dir);
  } else {
    const uint64_t seed = verification ? o.seed : o.seed + 2;
    c.inputs = random_inputs(original, o.random_inputs, seed);
    for (size_t k = 0; k < c.inputs.size(); ++k) c.labels.push_back(fmt::format("random-{}", k));
    for (const std::string& name : original.graph.inputs)
      if (const graph::ValueType* t = original.graph.type_of(name); t && t->shape)
        for (size_t d = 1; d < t->shape->size(); ++d)
          c.guessed_shape = c.guessed_shape || !(*t->shape)[d].is_known();
    c.description = fmt::format("{} random N(0, 1) inputs (seed {})", c.inputs.size(), seed);
  }
  return c;
}

namespace {}  // namespace

report::Verification verify_onnx(const graph::Model& original, const graph::Model& compressed,
                                 const std::string& standard_path, const CompressOptions& o,
                                 CompressResult& result) {
  double& original_seconds = result.original_seconds;
  double& compressed_seconds = result.compressed_seconds;
  double& standard_max_abs = result.standard_vs_tailor_max_abs;
  using Clock = std::chrono::steady_clock;
  auto timed = [](double& acc, auto&& fn) {
    const auto t0 = Clock::now();
    auto r = fn();
    acc += std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
  };
  static const std::vector<std::string> kTasks{"auto", "saliency", "ocr", "none"};
  if (std::find(kTasks.begin(), kTasks.end(), o.task) == kTasks.end())
    throw Error("--task", "unknown task '" + o.task + "' (auto, saliency, ocr, none)");
  runtime::Executor ex_orig(promoted(original));
  runtime::Executor ex_comp(promoted(compressed));
  const std::vector<std::string>& outs = original.graph.outputs;
  std::vector<ErrorSums> sums(outs.size());
  report::Verification v;
  Inputs first;
  std::map<std::string, Tensor> first_out;

  std::string keys, lines, why;
  std::vector<std::string> classes;
  const bool ocr = (o.task == "auto" || o.task == "ocr") && o.calib_dir.empty() &&
                   ocr_task(original, o, keys, lines, classes, why);
  refuse_impossible_ocr(o, ocr, why);
  if (o.task == "saliency" && !mask_shaped(original))
    throw Error(o.model, "--task saliency: the first output '" +
                             (outs.empty() ? std::string() : outs[0]) +
                             "' is not declared N×1×H×W");
  const bool saliency =
      o.task == "saliency" || (o.task == "auto" && !ocr && looks_like_saliency(original));
  const DamageMetric metric = onnx_metric(original);
  const DamageMeter no_damage(metric, damage_outputs(original, metric));
  std::vector<DamageMeter> damage;  // one per verification input, for the interval
  auto add_damage = [&](const std::map<std::string, Tensor>& y,
                        const std::map<std::string, Tensor>& h) {
    damage.push_back(no_damage);
    damage.back().add(y, h);
  };
  if (ocr) {
    const std::string in_name = original.graph.inputs[0], out_name = outs[0];
    std::vector<Tensor> orig_out;
    const tasks::OcrScore s0 = tasks::ocr_read_lines(
        [&](const Tensor& x) {
          if (first.empty()) first[in_name] = x;
          orig_out.push_back(timed(original_seconds, [&] {
                               return ex_orig.run({{in_name, x}});
                             }).at(out_name));
          return orig_out.back();
        },
        lines, classes, half(tasks::read_ocr_labels(lines).size(), 1));
    size_t k = 0;
    const tasks::OcrScore s1 = tasks::ocr_read_lines(
        [&](const Tensor& x) {
          Tensor y = timed(compressed_seconds, [&] {
                       return ex_comp.run({{in_name, x}});
                     }).at(out_name);
          if (k == 0) first_out[out_name] = y;
          add_damage({{out_name, orig_out.at(k)}}, {{out_name, y}});
          sums[0].add(orig_out.at(k), y, out_name, fmt::format("line {}", k + 1));
          ++k;
          return y;
        },
        lines, classes, half(tasks::read_ocr_labels(lines).size(), 1));
    v.inputs = static_cast<int64_t>(s0.lines.size());
    v.metric = report::TaskMetric{"OCR character accuracy", s0.char_accuracy(), s1.char_accuracy()};
    result.ocr_exact_original = static_cast<int64_t>(s0.exact);
    result.ocr_exact_compressed = static_cast<int64_t>(s1.exact);
    for (size_t i = 0; i < s0.lines.size() && i < s1.lines.size(); ++i)
      if (s0.lines[i].text != s1.lines[i].text)
        result.ocr_differences.push_back(
            {s0.lines[i].file, s0.lines[i].truth, s0.lines[i].text, s1.lines[i].text});
  } else {
    std::vector<std::string> labels;
    std::vector<Inputs> runs;
    if (!o.calib_dir.empty()) {
      // The odd-numbered inputs: the even ones calibrated the plan (onnx_calibration).
      std::vector<std::string> all_labels;
      const std::vector<Inputs> all = calib_inputs(o.calib_dir, original, o, all_labels);
      for (size_t i : half(all.size(), 1)) {
        runs.push_back(all[i]);
        labels.push_back(all_labels[i]);
      }
    } else {
      runs = random_inputs(original, o.random_inputs, o.seed);
    }
    report::SaliencyCheck sal;
    sal.output = outs.empty() ? std::string() : outs[0];
    for (size_t k = 0; k < runs.size(); ++k) {
      const Inputs& in = runs[k];
      const std::string label = k < labels.size() ? labels[k] : fmt::format("random-{}", k);
      std::map<std::string, Tensor> y, h;
      try {
        y = timed(original_seconds, [&] { return ex_orig.run(in); });
        h = timed(compressed_seconds, [&] { return ex_comp.run(in); });
      } catch (const Error& e) {  // a node's error on this input: name the input too
        throw Error(o.calib_dir.empty() ? label : (fs::path(o.calib_dir) / label).string(),
                    e.what());
      }
      if (first.empty()) {
        first = in;
        first_out = h;
      }
      for (size_t i = 0; i < outs.size(); ++i)
        sums[i].add(y.at(outs[i]), h.at(outs[i]), outs[i], label);
      add_damage(y, h);
      if (saliency) {
        const tasks::MaskAgreement a =
            tasks::compare_masks(y.at(outs[0]), h.at(outs[0]), sal.threshold);
        sal.inputs.push_back({label, a.mae, a.iou});
        sal.mae += a.mae / static_cast<double>(runs.size());
        sal.iou += a.iou / static_cast<double>(runs.size());
      }
    }
    v.inputs = static_cast<int64_t>(runs.size());
    if (saliency) {
      v.metric = report::TaskMetric{"saliency mask IoU (> 0.5) vs original", 1.0, sal.iou};
      v.saliency = std::move(sal);
    }
  }
  double mean_sq = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    v.outputs.push_back(sums[i].result(outs[i]));
    mean_sq += v.outputs.back().rel_error * v.outputs.back().rel_error;
  }
  v.measured_error = outs.empty() ? 0.0 : mean_sq / static_cast<double>(outs.size());
  v.damage_metric = damage_metric_name(metric);
  DamageMeter total = no_damage;
  for (const DamageMeter& m : damage) total.merge(m);
  v.measured_damage = total.value();
  v.measured_interval = damage_interval(damage, o.seed);

  // The written file itself, run by tailor's runtime.
  runtime::Executor ex_std(promoted(graph::import_onnx(standard_path)));
  const auto s = ex_std.run(first);
  standard_max_abs = 0;
  for (const auto& [name, t] : first_out)
    standard_max_abs = std::max(standard_max_abs, max_abs_diff(s.at(name), t));
  return v;
}

report::Verification verify_llama(const graph::Model& original, const graph::Model& compressed,
                                  const std::string& standard_path, const CompressOptions& o,
                                  CompressResult& result) {
  std::optional<llm::CompareResult>& kld = result.kld;
  llm::Decoder orig(original), comp(compressed);
  llm::CompareOptions co;
  co.seed = o.seed + 1;
  co.sequences = o.kld_sequences;
  co.length = o.kld_length;
  if (const int64_t context = orig.signature().context; context > 0)
    co.length = static_cast<int32_t>(std::min<int64_t>(co.length, context - 1));
  kld = llm::compare_models(original, compressed, co);

  // Logits' relative error and cosine on the first two sampled sequences.
  llm::CompareOptions few = co;
  few.sequences = std::min<int32_t>(2, co.sequences);
  ErrorSums sums;
  bool first = true;
  int sequence = 0;
  for (const auto& seq : llm::sample_sequences(orig, few)) {
    const std::span<const int32_t> tokens(seq.data(), seq.size() - 1);
    orig.reset();
    comp.reset();
    const std::vector<float> la = orig.forward(tokens), lb = comp.forward(tokens);
    const Shape shape{static_cast<int64_t>(la.size())};
    sums.add(Tensor::from_f32(shape, la), Tensor::from_f32(shape, lb), "logits",
             fmt::format("sampled sequence {}", ++sequence));
    if (first && !standard_path.empty()) {
      // The written model.onnx, run by tailor's runtime on the same tokens.
      llm::Decoder standard(graph::import_onnx(standard_path));
      const std::vector<float> y = standard.forward(tokens);
      const Tensor want = Tensor::from_f32(shape, lb);
      result.standard_vs_tailor_max_abs = max_abs_diff(Tensor::from_f32(shape, y), want);
      double peak = 0;
      for (float f : lb) peak = std::max(peak, std::abs(double(f)));
      result.standard_vs_tailor_max_rel =
          peak > 0 ? result.standard_vs_tailor_max_abs / peak : result.standard_vs_tailor_max_abs;
    }
    first = false;
  }
  report::Verification v;
  v.inputs = kld->positions;
  v.outputs.push_back(sums.result("logits"));
  v.measured_error = v.outputs[0].rel_error * v.outputs[0].rel_error;
  v.damage_metric = damage_metric_name(DamageMetric::kl_logits);
  v.measured_damage = kld->mean_kl;
  v.measured_interval = llm::mean_kl_interval(*kld, o.seed);
  v.metric = report::TaskMetric{"top-1 agreement", 1.0, kld->top1_agreement};
  return v;
}

}  // namespace tailor::compress
