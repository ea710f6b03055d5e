// The data-aware and composite labels applied uniformly to an OCR recogniser,
// beside their reference labels (docs/benchmarks.md, "Data-aware quantizers").
//
//   data_aware_check MODEL KEYS OCR_DIR LABEL...
//
// Calibration (the -gptq Grams, runtime::gram): the fixture lines of even
// index in OCR_DIR/labels.tsv; evaluation: the odd ones. Each LABEL replaces
// every weight of ≥ 4096 elements it applies to (the others stay dense), through
// compress::encode_plan and rewrite_tailor (the stored factors, run by their
// kernels). Prints per label: planned bytes, mean rel_error, mean per-layer
// ratio of rel_error to the reference form's (schemes::stored_form; composites
// against the label given after "vs" on the line), mean KL(original ‖ compressed)
// per output frame, character accuracy (tasks::OcrScore's, spaces ignored:
// ocr_score_line), and CPU seconds of encoding.
#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <map>

#include "tailor/compress/rewrite.h"
#include "tailor/core/error.h"
#include "tailor/graph/weights.h"
#include "tailor/io/load_model.h"
#include "tailor/runtime/calibration.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/registry.h"
#include "tailor/tasks/image.h"
#include "tailor/tasks/ocr.h"

using namespace tailor;
using namespace tailor::tasks;

namespace {

double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

struct Eval {
  double kl = 0;
  double char_accuracy = 0;
};

Eval evaluate(const graph::Model& m, const std::vector<Tensor>& inputs,
              const std::vector<Tensor>& reference, const std::vector<std::string>& truth,
              const std::vector<std::string>& classes) {
  runtime::Executor ex(m);
  const std::string in = m.graph.inputs.at(0), out = m.graph.outputs.at(0);
  double kl = 0;
  int64_t frames = 0;
  OcrScore score;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor y = ex.run({{in, inputs[i]}}).at(out).contiguous();
    const std::vector<float> q = y.to_f32_vector(), p = reference[i].to_f32_vector();
    const int64_t c = y.dim(y.rank() - 1), t = y.numel() / c;
    for (int64_t f = 0; f < t; ++f, ++frames)
      for (int64_t k = 0; k < c; ++k) {
        const double pk = p[f * c + k], qk = std::max<double>(q[f * c + k], 1e-30);
        if (pk > 0) kl += pk * std::log(pk / qk);
      }
    const OcrLine line = ocr_score_line("", truth[i], ctc_greedy_decode(y, classes));
    score.edits += line.edits;
    score.chars += line.chars;
  }
  return {kl / static_cast<double>(frames), score.char_accuracy()};
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 5) {
    fmt::print(stderr, "usage: data_aware_check MODEL KEYS OCR_DIR LABEL[:REF]...\n");
    return 2;
  }
  const graph::Model model = load_model(argv[1]);
  const std::vector<std::string> classes = read_ocr_keys(argv[2]);
  const std::string dir = argv[3];
  const auto labels = read_ocr_labels(dir);
  std::vector<std::map<std::string, Tensor>> calib;
  std::vector<Tensor> eval_in;
  std::vector<std::string> truth;
  for (size_t i = 0; i < labels.size(); ++i) {
    const Tensor x = ocr_rec_preprocess(read_png(dir + "/" + labels[i].first));
    if (i % 2 == 0) {
      calib.push_back({{model.graph.inputs.at(0), x}});
    } else {
      eval_in.push_back(x);
      truth.push_back(labels[i].second);
    }
  }
  std::vector<Tensor> reference;
  {
    runtime::Executor ex(model);
    for (const Tensor& x : eval_in)
      reference.push_back(ex.run({{model.graph.inputs.at(0), x}}).at(model.graph.outputs.at(0)));
  }
  const double t0 = cpu_seconds();
  std::map<std::string, std::shared_ptr<const schemes::Gram>> grams;
  for (auto& [name, g] : runtime::gram(model, calib))
    grams[name] = std::make_shared<schemes::Gram>(std::move(g));
  fmt::print("grams of {} layers from {} lines: {:.2f} s CPU; evaluation on {} lines\n",
             grams.size(), calib.size(), cpu_seconds() - t0, eval_in.size());
  const Eval base = evaluate(model, eval_in, reference, truth, classes);
  fmt::print("original: char accuracy {:.4f}\n", base.char_accuracy);

  std::vector<const graph::WeightView*> layers;
  const std::vector<graph::WeightView> weights = graph::weights(model);
  for (const graph::WeightView& w : weights)
    if (w.layout != WeightLayout::none && w.tensor.numel() >= 4096) layers.push_back(&w);

  std::map<std::string, std::map<std::string, double>> errors;  // label → layer → rel_error
  fmt::print("{:<16} {:>10} {:>9} {:>9} {:>10} {:>8} {:>8} {:>7}\n", "label", "bytes", "rel_err",
             "ratio", "KL", "char_acc", "enc_cpu", "fallbk");
  for (int a = 4; a < argc; ++a) {
    std::string label = argv[a], ref = schemes::stored_form(argv[a]);
    if (const auto colon = label.find(':'); colon != std::string::npos) {
      ref = label.substr(colon + 1);
      label = label.substr(0, colon);
    }
    plan::Plan plan;
    int fallback = 0;
    int64_t bytes = 0;
    for (const graph::WeightView* w : layers) {
      schemes::SchemeParams p;
      if (const auto g = grams.find(w->name); g != grams.end()) p.gram = g->second;
      const schemes::Scheme s = schemes::parse_scheme(label, p);
      const Shape shape = w->layout == WeightLayout::conv ? w->tensor.shape() : w->out_in_shape();
      std::string chosen = label;
      if (!s.applicable(shape)) {
        chosen = schemes::stored_form(label);
        if (!schemes::parse_scheme(chosen).applicable(shape)) chosen = "dense";
        ++fallback;
      }
      bytes += chosen == "dense"
                   ? 4 * w->tensor.numel()
                   : static_cast<int64_t>(schemes::parse_scheme(chosen, p).predicted_bytes(shape));
      plan.choices.push_back({w->name, chosen, 0, 0});
    }
    const double c0 = cpu_seconds();
    const std::vector<compress::EncodedLayer> enc =
        compress::encode_plan(model, plan, {}, 0x7a11, 1, grams);
    const double enc_cpu = cpu_seconds() - c0;
    double err = 0, ratio = 0;
    int ratios = 0;
    for (const compress::EncodedLayer& e : enc) {
      errors[label][e.name] = e.rel_error;
      err += e.rel_error;
      if (errors.count(ref) && errors[ref].count(e.name) && errors[ref][e.name] > 0) {
        ratio += e.rel_error / errors[ref][e.name];
        ++ratios;
      }
    }
    const Eval ev =
        evaluate(compress::rewrite_tailor(model, enc), eval_in, reference, truth, classes);
    fmt::print("{:<16} {:>10} {:>9.5f} {:>9} {:>10.5f} {:>8.4f} {:>8.2f} {:>7}\n", label, bytes,
               err / static_cast<double>(enc.size()),
               ratios ? fmt::format("{:.4f}", ratio / ratios) : std::string("-"), ev.kl,
               ev.char_accuracy, enc_cpu, fallback);
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "data_aware_check: {}\n", e.what());
  return 1;
}
