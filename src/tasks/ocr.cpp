// PP-OCR recogniser preprocessing, greedy CTC decoding and accuracy scoring.
#include "tailor/tasks/ocr.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tailor/core/error.h"

namespace tailor::tasks {

namespace {

std::string read_text(const std::string& path) {
  check(std::filesystem::is_regular_file(path), path, "no such file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  check(static_cast<bool>(in), path, "cannot read");
  return ss.str();
}

/// Lines of `text` without their "\n" or "\r\n"; a final newline ends the last line.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    at = nl + 1;
  }
  return lines;
}

/// Runs `fn`; an Error whose source is not `path` is rethrown naming `path`
/// (its own source kept in the message).
template <class F>
auto naming(const std::string& path, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    if (e.source() == path) throw;
    throw Error(path, e.source().empty() ? e.message() : e.source() + ": " + e.message());
  } catch (const std::bad_alloc&) {
    throw Error(path, "out of memory");
  }
}

}  // namespace

std::vector<std::string> read_ocr_keys(const std::string& path) {
  const std::vector<std::string> lines = split_lines(read_text(path));
  check(!lines.empty(), path, "key file is empty");
  std::vector<std::string> classes;
  classes.reserve(lines.size() + 2);
  classes.emplace_back();  // CTC blank
  for (size_t i = 0; i < lines.size(); ++i) {
    check(!lines[i].empty(), path, "line " + std::to_string(i + 1) + " is empty");
    classes.push_back(lines[i]);
  }
  classes.emplace_back(" ");
  return classes;
}

Tensor ocr_rec_preprocess(const Image& image) {
  check(image.height > 0 && image.width > 0, "ocr_rec_preprocess", "empty image");
  constexpr int kH = 48, kW = 320;
  // predict_rec.py: max_wh_ratio = max(imgW / imgH, w / h); resize_norm_img:
  // imgW = int(imgH * max_wh_ratio), resized_w = min(imgW, ceil(imgH * w / h)).
  // Double precision, as Python computes it.
  const double ratio = static_cast<double>(image.width) / image.height;
  const double max_ratio = std::max(static_cast<double>(kW) / kH, ratio);
  const int width = static_cast<int>(kH * max_ratio);
  const double want = std::ceil(kH * ratio);
  const int resized_w = want > width ? width : static_cast<int>(want);
  const Image r = resize_bilinear(image, kH, resized_w);
  Tensor t = Tensor::zeros(DType::f32, {1, 3, kH, width});
  float* p = t.mutable_data<float>();
  const size_t plane = static_cast<size_t>(kH) * width;
  for (int c = 0; c < 3; ++c) {
    const int src_c = 2 - c;  // B, G, R
    for (int y = 0; y < kH; ++y) {
      for (int x = 0; x < resized_w; ++x) {
        const float v = static_cast<float>(r.at(y, x, src_c)) / 255.0f;
        p[c * plane + static_cast<size_t>(y) * width + x] = (v - 0.5f) / 0.5f;
      }
    }
  }
  return t;
}

std::string ctc_greedy_decode(const Tensor& probs, const std::vector<std::string>& classes) {
  const std::string src = "ctc_greedy_decode";
  check(probs.dtype() == DType::f32, src,
        "recogniser output is " + std::string(dtype_name(probs.dtype())) + ", expected f32");
  check(probs.rank() == 2 || (probs.rank() == 3 && probs.dim(0) == 1), src,
        "recogniser output must be [1, T, C] or [T, C]");
  const int64_t T = probs.dim(probs.rank() - 2), C = probs.dim(probs.rank() - 1);
  check(static_cast<size_t>(C) == classes.size(), src,
        "recogniser output has " + std::to_string(C) + " classes, the key list gives " +
            std::to_string(classes.size()));
  const Tensor c = probs.contiguous();
  const float* p = c.data<float>();
  std::string text;
  int64_t prev = -1;
  for (int64_t t = 0; t < T; ++t) {
    const float* row = p + t * C;
    const int64_t best = std::max_element(row, row + C) - row;  // first maximum
    if (best != prev && best != 0) text += classes[best];
    prev = best;
  }
  return text;
}

std::u32string utf8_code_points(const std::string& text) {
  std::u32string out;
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char b = byte(i);
    int n = -1;  // continuation bytes
    char32_t cp = 0;
    if (b < 0x80) {
      n = 0;
      cp = b;
    } else if ((b & 0xE0) == 0xC0) {
      n = 1;
      cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      n = 2;
      cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      n = 3;
      cp = b & 0x07;
    }
    bool ok = n >= 0 && i + static_cast<size_t>(n) < text.size();
    for (int k = 1; ok && k <= n; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (ok) {
      out.push_back(cp);
      i += static_cast<size_t>(n) + 1;
    } else {
      out.push_back(b);
      i += 1;
    }
  }
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  const std::u32string x = utf8_code_points(a), y = utf8_code_points(b);
  std::vector<size_t> row(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= x.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= y.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (x[i - 1] == y[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[y.size()];
}

OcrLine ocr_score_line(std::string file, std::string truth, std::string text) {
  const auto without_spaces = [](const std::string& t) {
    std::string out;
    for (char c : t)
      if (c != ' ') out.push_back(c);  // UTF-8: 0x20 is never part of another code point
    return out;
  };
  const std::string scored_truth = without_spaces(truth);
  OcrLine line;
  line.edits = edit_distance(scored_truth, without_spaces(text));
  line.chars = utf8_code_points(scored_truth).size();
  line.file = std::move(file);
  line.truth = std::move(truth);
  line.text = std::move(text);
  return line;
}

double OcrScore::char_accuracy() const {
  if (chars == 0) return 0.0;
  // Reading more than is there can cost more edits than there are characters.
  return std::max(0.0, 1.0 - static_cast<double>(edits) / static_cast<double>(chars));
}

double OcrScore::line_accuracy() const {
  return lines.empty() ? 0.0 : static_cast<double>(exact) / static_cast<double>(lines.size());
}

std::vector<std::pair<std::string, std::string>> read_ocr_labels(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "labels.tsv").string();
  const std::vector<std::string> lines = split_lines(read_text(path));
  std::vector<std::pair<std::string, std::string>> labels;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const size_t tab = lines[i].find('\t');
    check(tab != std::string::npos, path, "line " + std::to_string(i + 1) + " has no tab");
    check(tab > 0, path, "line " + std::to_string(i + 1) + " has an empty file name");
    labels.emplace_back(lines[i].substr(0, tab), lines[i].substr(tab + 1));
  }
  check(!labels.empty(), path, "no fixture lines");
  return labels;
}

OcrScore ocr_read_lines(const OcrBatchRecognizer& run, const std::string& dir,
                        const std::vector<std::string>& classes, const std::vector<size_t>& only) {
  auto labels = read_ocr_labels(dir);
  if (!only.empty()) {
    std::vector<std::pair<std::string, std::string>> kept;
    for (size_t i : only) {
      check(i < labels.size(), dir,
            "line " + std::to_string(i) + " of " + std::to_string(labels.size()) + " asked for");
      kept.push_back(labels[i]);
    }
    labels = std::move(kept);
  }
  std::vector<Tensor> inputs;
  inputs.reserve(labels.size());
  for (const auto& [file, truth] : labels) {
    const std::string path = (std::filesystem::path(dir) / file).string();
    inputs.push_back(naming(path, [&] { return ocr_rec_preprocess(read_png(path)); }));
  }
  const std::vector<Tensor> outputs = run(inputs);
  check(outputs.size() == inputs.size(), dir,
        "recogniser returned " + std::to_string(outputs.size()) + " outputs for " +
            std::to_string(inputs.size()) + " lines");
  OcrScore score;
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto& [file, truth] = labels[i];
    OcrLine line = ocr_score_line(file, truth,
                                  naming((std::filesystem::path(dir) / file).string(),
                                         [&] { return ctc_greedy_decode(outputs[i], classes); }));
    score.chars += line.chars;
    score.edits += line.edits;
    score.exact += line.edits == 0 ? 1 : 0;
    score.lines.push_back(std::move(line));
  }
  return score;
}

OcrScore ocr_read_lines(const OcrRecognizer& run, const std::string& dir,
                        const std::vector<std::string>& classes, const std::vector<size_t>& only) {
  return ocr_read_lines(OcrBatchRecognizer([&](const std::vector<Tensor>& inputs) {
                          std::vector<Tensor> outputs;
                          outputs.reserve(inputs.size());
                          for (const Tensor& x : inputs) outputs.push_back(run(x));
                          return outputs;
                        }),
                        dir, classes, only);
}

}  // namespace tailor::tasks
