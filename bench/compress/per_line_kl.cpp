// Where does a compressed recogniser's mean KL come from? (issue 13, the
// uniform guard's calibration and verification halves disagreeing.)
//
//   per_line_kl MODEL KEYS OCR_DIR COMPRESSED.onnx...
//
// Runs the original MODEL and every COMPRESSED model (e.g. the model.onnx of
// `tailor compress -o DIR`) on every line of OCR_DIR (ocr_rec_preprocess) and
// prints, per line, its half (c: even-numbered, compress's calibration; v:
// odd-numbered, its verification), its frames, and each model's mean KL per
// frame (compress::DamageMeter, kl_probabilities) and whether its greedy CTC
// decoding still equals the original's; then each half's mean, median and
// the share of its summed KL carried by its worst line; last, the character
// accuracy against labels.tsv (tasks::OcrScore's, 1 − Σ edits / Σ chars,
// spaces ignored as PaddleOCR's RecMetric does: tasks::ocr_score_line) of
// the original and of every model, per half and over all lines (on a folder
// calibration never saw, e.g. `ocr_lines.py OUT 400 11` without its first 38
// fixture lines, the "all" figure is wholly held out). With two or more
// models, each model's all-lines mean KL over model1's, with a 95% paired
// percentile bootstrap interval (lines resampled with replacement, 10,000
// draws, Efron & Tibshirani 1993, ch. 13; Rng seed 0) and the number of
// lines on which it is lower: whether two files' difference on these lines
// is more than the draw of lines. The same for the character accuracy's
// difference from model1's, with the lines on which each has fewer edits.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tailor/core/bootstrap.h"

#include "tailor/compress/output_damage.h"
#include "tailor/io/load_model.h"
#include "tailor/runtime/executor.h"
#include "tailor/tasks/image.h"
#include "tailor/tasks/ocr.h"

using namespace tailor;

int main(int argc, char** argv) try {
  if (argc < 5) {
    fmt::print(stderr, "usage: per_line_kl MODEL KEYS OCR_DIR COMPRESSED.onnx...\n");
    return 2;
  }
  const graph::Model model = load_model(argv[1]);
  const std::vector<std::string> classes = tasks::read_ocr_keys(argv[2]);
  const std::string dir = argv[3];
  const auto labels = tasks::read_ocr_labels(dir);
  const std::string in = model.graph.inputs.at(0), out = model.graph.outputs.at(0);
  std::vector<std::map<std::string, Tensor>> inputs, reference;
  runtime::Executor original(model);
  for (const auto& [file, text] : labels) {
    inputs.push_back({{in, tasks::ocr_rec_preprocess(tasks::read_png(dir + "/" + file))}});
    reference.push_back(original.run(inputs.back()));
  }
  // kl[m][i]: model m's KL on line i; same[m][i]: its decoding equals the original's;
  // edits[m][i]: edit distance of its decoding to the truth (m = kl.size(): the original).
  std::vector<std::vector<double>> kl(static_cast<size_t>(argc - 4));
  std::vector<std::vector<bool>> same(kl.size());
  std::vector<std::vector<size_t>> edits(kl.size() + 1);
  std::vector<size_t> chars;
  std::vector<std::string> reference_text;  // the original's decoding of each line
  for (size_t i = 0; i < inputs.size(); ++i) {
    const tasks::OcrLine line = tasks::ocr_score_line(
        labels[i].first, labels[i].second, tasks::ctc_greedy_decode(reference[i].at(out), classes));
    chars.push_back(line.chars);
    reference_text.push_back(line.text);
    edits.back().push_back(line.edits);
  }
  for (size_t m = 0; m < kl.size(); ++m) {
    runtime::Executor ex(load_model(argv[4 + m]));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto y = ex.run(inputs[i]);
      compress::DamageMeter meter(compress::DamageMetric::kl_probabilities, {out});
      meter.add(reference[i], y);
      kl[m].push_back(meter.value());
      const std::string text = tasks::ctc_greedy_decode(y.at(out), classes);
      same[m].push_back(text == reference_text[i]);
      edits[m].push_back(tasks::ocr_score_line(labels[i].first, labels[i].second, text).edits);
    }
  }
  fmt::print("{:>4} {:>4} {:>6}", "line", "half", "frames");
  for (size_t m = 0; m < kl.size(); ++m) fmt::print(" {:>12}", fmt::format("model{}", m + 1));
  fmt::print("\n");
  for (size_t i = 0; i < inputs.size(); ++i) {
    fmt::print("{:>4} {:>4} {:>6}", i, i % 2 ? "v" : "c", reference[i].at(out).shape()[1]);
    for (size_t m = 0; m < kl.size(); ++m)
      fmt::print(" {:>11.3e}{}", kl[m][i], same[m][i] ? " " : "*");
    fmt::print("\n");
  }
  for (int half = 0; half < 2; ++half)
    for (size_t m = 0; m < kl.size(); ++m) {
      std::vector<double> v;
      for (size_t i = static_cast<size_t>(half); i < inputs.size(); i += 2) v.push_back(kl[m][i]);
      if (v.empty()) continue;  // one line: no verification half
      double sum = 0;
      for (double x : v) sum += x;
      std::sort(v.begin(), v.end());
      fmt::print("{} model{}: mean {:.3e} median {:.3e} worst line's share {:.2f}\n",
                 half ? "verification" : "calibration", m + 1, sum / double(v.size()),
                 v[v.size() / 2], v.back() / sum);
    }
  // Paired ratios of the all-lines means against model1, bootstrapped over lines.
  const size_t lines = inputs.size();
  for (size_t m = 1; m < kl.size(); ++m) {
    const auto ratio_of = [&](const std::vector<size_t>& pick) {
      double a = 0, b = 0;
      for (size_t i : pick) a += kl[0][i], b += kl[m][i];
      return b / a;
    };
    std::vector<size_t> all(lines);
    for (size_t i = 0; i < lines; ++i) all[i] = i;
    const Interval ratio = bootstrap_interval(lines, ratio_of, 0, 10000);
    size_t lower = 0;
    for (size_t i = 0; i < lines; ++i) lower += kl[m][i] < kl[0][i];
    fmt::print(
        "model{} / model1, all lines: mean KL ratio {:.3f}, paired bootstrap 95% interval "
        "{:.3f}-{:.3f}; lower on {} of {} lines\n",
        m + 1, ratio_of(all), ratio.low, ratio.high, lower, lines);
    // The character accuracy's difference, model m minus model1, over the
    // same kind of draws: tasks::OcrScore's accuracy of each (1 − Σ edits /
    // Σ chars, floored at 0, as the accuracies below print).
    const auto accuracy_gain = [&](const std::vector<size_t>& lines_drawn) {
      tasks::OcrScore first, other;
      for (size_t i : lines_drawn) {
        first.edits += edits[0][i];
        other.edits += edits[m][i];
        first.chars += chars[i];
        other.chars += chars[i];
      }
      return other.char_accuracy() - first.char_accuracy();
    };
    const Interval gain = bootstrap_interval(lines, accuracy_gain, 0, 10000);
    size_t better = 0, worse = 0;
    for (size_t i = 0; i < lines; ++i) {
      better += edits[m][i] < edits[0][i];
      worse += edits[m][i] > edits[0][i];
    }
    fmt::print(
        "model{} − model1, all lines: character accuracy {:+.4f}, paired bootstrap 95% interval "
        "{:+.4f} to {:+.4f}; fewer edits on {} lines, more on {}\n",
        m + 1, accuracy_gain(all), gain.low, gain.high, better, worse);
  }
  // Character accuracy per half (0: calibration, 1: verification) and over all lines (2).
  for (int half = 0; half < 3; ++half) {
    fmt::print("{} character accuracy:", half == 0   ? "calibration"
                                         : half == 1 ? "verification"
                                                     : "all lines");
    for (size_t m = 0; m < edits.size(); ++m) {
      tasks::OcrScore score;
      for (size_t i = half == 1 ? 1 : 0; i < inputs.size(); i += half == 2 ? 1 : 2) {
        score.edits += edits[m][i];
        score.chars += chars[i];
      }
      fmt::print(" {} {:.4f} ({} edits / {} chars)",
                 m == kl.size() ? std::string("original") : fmt::format("model{}", m + 1),
                 score.char_accuracy(), score.edits, score.chars);
    }
    fmt::print("\n");
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "per_line_kl: {}\n", e.what());
  return 1;
}
