// Tests of the OCR task check: PNG reading, PaddleOCR preprocessing, greedy CTC
// decoding, edit distance, and the fixture set read by onnxruntime running the
// PP-OCRv4 recogniser.
#include "tailor/tasks/ocr.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "ort/ort_runner.h"
#include "tailor/core/error.h"
#include "test_util.h"

namespace tailor::tasks {
namespace {

using testing::TempDir;

Image make_image(int h, int w, const std::function<std::array<uint8_t, 3>(int, int)>& rgb) {
  Image img;
  img.height = h;
  img.width = w;
  img.pixels.resize(static_cast<size_t>(h) * w * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        img.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] = rgb(y, x)[c];
  return img;
}

float at(const Tensor& t, int c, int y, int x) {
  return t.data<float>()[(static_cast<size_t>(c) * t.dim(2) + y) * t.dim(3) + x];
}

TEST(OcrPreprocess, HeightFortyEightKeepsPixelsBgrNormalizedAndPads) {
  // h = 48, w = 24: w/h = 0.5 < 320/48, so W = 320 and resized_w = ceil(48 · 0.5) = 24
  // (no resize); pixel (y, x) = (R = 10x, G = y, B = 255).
  const Image img = make_image(48, 24, [](int y, int x) {
    return std::array<uint8_t, 3>{static_cast<uint8_t>(10 * x), static_cast<uint8_t>(y), 255};
  });
  const Tensor t = ocr_rec_preprocess(img);
  ASSERT_EQ(t.shape(), (Shape{1, 3, 48, 320}));
  for (int y : {0, 17, 47}) {
    for (int x : {0, 5, 23}) {
      EXPECT_FLOAT_EQ(at(t, 0, y, x), 1.0f);                              // B: (1 − 0.5)/0.5
      EXPECT_NEAR(at(t, 1, y, x), (y / 255.0 - 0.5) / 0.5, 1e-6);         // G
      EXPECT_NEAR(at(t, 2, y, x), (10.0 * x / 255.0 - 0.5) / 0.5, 1e-6);  // R
    }
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(at(t, c, y, 24), 0.0f);  // padding
      EXPECT_EQ(at(t, c, y, 319), 0.0f);
    }
  }
  // Black is −1, white +1.
  const Tensor bw = ocr_rec_preprocess(make_image(48, 2, [](int, int x) {
    const uint8_t v = x == 0 ? 0 : 255;
    return std::array<uint8_t, 3>{v, v, v};
  }));
  EXPECT_EQ(at(bw, 1, 10, 0), -1.0f);
  EXPECT_EQ(at(bw, 1, 10, 1), 1.0f);
}

TEST(OcrPreprocess, WidthFollowsPaddleOcr) {
  auto grey = [](int, int) { return std::array<uint8_t, 3>{200, 200, 200}; };
  // h = 24, w = 240: ratio 10, W = int(48 · 10) = 480 = resized_w: no padding.
  Tensor wide = ocr_rec_preprocess(make_image(24, 240, grey));
  EXPECT_EQ(wide.shape(), (Shape{1, 3, 48, 480}));
  EXPECT_NEAR(at(wide, 0, 47, 479), (200 / 255.0 - 0.5) / 0.5, 1e-6);
  // h = 7, w = 50: 48 · 50/7 = 342.86, W = int(...) = 342 < ceil(...) = 343, so resized_w = 342.
  Tensor odd = ocr_rec_preprocess(make_image(7, 50, grey));
  EXPECT_EQ(odd.shape(), (Shape{1, 3, 48, 342}));
  EXPECT_NEAR(at(odd, 2, 0, 341), (200 / 255.0 - 0.5) / 0.5, 1e-6);
  // h = 96, w = 96: ratio 1, resized to 48 × 48, padded to 320.
  Tensor sq = ocr_rec_preprocess(make_image(96, 96, grey));
  EXPECT_EQ(sq.shape(), (Shape{1, 3, 48, 320}));
  EXPECT_NEAR(at(sq, 0, 47, 47), (200 / 255.0 - 0.5) / 0.5, 1e-6);
  EXPECT_EQ(at(sq, 0, 47, 48), 0.0f);
}

TEST(OcrPreprocess, BilinearResizeAsOpenCv) {
  // One row [0, 100] widened to 4: source x = (d + 0.5)/2 − 0.5 = −0.25, 0.25, 0.75, 1.25
  // → clamp 0, 25, 75, clamp 100.
  Image row = make_image(1, 2, [](int, int x) {
    const uint8_t v = x == 0 ? 0 : 100;
    return std::array<uint8_t, 3>{v, v, v};
  });
  Image up = resize_bilinear(row, 1, 4);
  EXPECT_EQ(up.at(0, 0, 0), 0);
  EXPECT_EQ(up.at(0, 1, 1), 25);
  EXPECT_EQ(up.at(0, 2, 2), 75);
  EXPECT_EQ(up.at(0, 3, 0), 100);
  // [0, 100, 200, 40] narrowed to 2: source x = 0.5, 2.5 → 50, (200 + 40)/2 = 120.
  const uint8_t v4[4] = {0, 100, 200, 40};
  Image four = make_image(1, 4, [&](int, int x) { return std::array<uint8_t, 3>{v4[x], 0, 0}; });
  Image down = resize_bilinear(four, 1, 2);
  EXPECT_EQ(down.at(0, 0, 0), 50);
  EXPECT_EQ(down.at(0, 1, 0), 120);
  // Vertically: rows [10; 30] to 4 rows → 10, 15, 25, 30.
  Image col = make_image(2, 1, [](int y, int) {
    const uint8_t v = y == 0 ? 10 : 30;
    return std::array<uint8_t, 3>{v, v, v};
  });
  Image tall = resize_bilinear(col, 4, 1);
  EXPECT_EQ(tall.at(0, 0, 0), 10);
  EXPECT_EQ(tall.at(1, 0, 0), 15);
  EXPECT_EQ(tall.at(2, 0, 0), 25);
  EXPECT_EQ(tall.at(3, 0, 0), 30);
}

TEST(OcrPng, ReadsFixtureAndRejectsBadFiles) {
  // 04_word1.png: greyscale, 48 px high, black "Hello" on white (render-ocr-fixtures.py).
  const std::string f = testing::fixture_path("ocr/04_word1.png");
  const Image img = read_png(f);
  EXPECT_EQ(img.height, 48);
  EXPECT_GT(img.width, 48);
  EXPECT_EQ(img.at(0, 0, 0), 255);  // the margin is white in every channel
  EXPECT_EQ(img.at(0, 0, 2), 255);
  int dark = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      EXPECT_EQ(img.at(y, x, 0), img.at(y, x, 1));  // grey replicated
      dark += img.at(y, x, 0) < 128;
    }
  EXPECT_GT(dark, 100);

  TempDir dir;
  const std::string junk = dir.file("junk.png");
  testing::write_bytes(junk, "definitely not a png");
  testing::expect_error_naming([&] { read_png(junk); }, junk, "cannot read PNG: not a PNG file");
  const std::string tiny = dir.file("tiny.png");  // shorter than the signature
  testing::write_bytes(tiny, "\x89PNG");
  testing::expect_error_naming([&] { read_png(tiny); }, tiny, "not a PNG file");
  testing::expect_error_naming([&] { read_png(dir.file("none.png")); }, dir.file("none.png"),
                               "no such file");
  // A PNG cut short: the header parses, the image data does not.
  std::ifstream in(f, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = dir.file("cut.png");
  testing::write_bytes(cut, bytes.substr(0, bytes.size() / 2));
  testing::expect_error_naming([&] { read_png(cut); }, cut, "cannot read PNG");
}

TEST(OcrKeys, ReadsPaddleKeyFile) {
  TempDir dir;
  const std::string f = dir.file("keys.txt");
  testing::write_bytes(f, "a\r\nb\n\xe4\xb8\xad");  // a, b, 中; CRLF, no final newline
  const auto k = read_ocr_keys(f);
  EXPECT_EQ(k, (std::vector<std::string>{"", "a", "b", "\xe4\xb8\xad", " "}));
  const std::string bad = dir.file("bad.txt");
  testing::write_bytes(bad, "a\n\nb\n");
  testing::expect_error_naming([&] { read_ocr_keys(bad); }, bad, "line 2 is empty");

  const std::string real = testing::model_path("ppocr_keys_v1.txt");
  if (!std::filesystem::exists(real)) GTEST_SKIP() << "models/ppocr_keys_v1.txt not fetched";
  const auto classes = read_ocr_keys(real);
  ASSERT_EQ(classes.size(), 6625u);  // the recogniser's C: blank + 6623 keys + space
  EXPECT_EQ(classes[0], "");
  EXPECT_EQ(classes[1], "'");  // the file's first line
  EXPECT_EQ(classes[6624], " ");
}

TEST(OcrCtc, GreedyDecodeMergesRepeatsAndDropsBlanks) {
  const std::vector<std::string> classes{"", "a", "b", " ", "\xe4\xb8\xad"};
  // Arg-max path 0 1 1 0 1 2 2 3 4 4 0 → "a", "a" (after a blank), "b", " ", "中".
  const std::vector<int> path{0, 1, 1, 0, 1, 2, 2, 3, 4, 4, 0};
  std::vector<float> logits(path.size() * 5, -1.0f);
  for (size_t t = 0; t < path.size(); ++t) logits[t * 5 + path[t]] = 2.0f + t;
  EXPECT_EQ(ctc_greedy_decode(Tensor::from_f32({1, 11, 5}, logits), classes), "aab \xe4\xb8\xad");
  // A tie picks the lower class: step values equal for 2 and 1 → 1.
  std::vector<float> tie{0, 5, 5, 0, 0};
  EXPECT_EQ(ctc_greedy_decode(Tensor::from_f32({1, 5}, tie), classes), "a");
  // All blanks: empty text.
  std::vector<float> blanks{1, 0, 0, 0, 0, 1, 0, 0, 0, 0};
  EXPECT_EQ(ctc_greedy_decode(Tensor::from_f32({2, 5}, blanks), classes), "");
  // Class count mismatch.
  testing::expect_error_naming(
      [&] {
        ctc_greedy_decode(Tensor::from_f32({1, 2, 4}, std::vector<float>(8)), classes);
      },
      "ctc_greedy_decode", "4 classes, the key list gives 5");
}

TEST(OcrMetric, EditDistanceOnCodePoints) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", "abc"), 0u);
  // 北京大学 vs 北京大学生: one inserted character (3 bytes).
  EXPECT_EQ(edit_distance("\xe5\x8c\x97\xe4\xba\xac\xe5\xa4\xa7\xe5\xad\xa6",
                          "\xe5\x8c\x97\xe4\xba\xac\xe5\xa4\xa7\xe5\xad\xa6\xe7\x94\x9f"),
            1u);
  // ¥388 vs ￥388 (U+00A5 vs U+FFE5): one substitution.
  EXPECT_EQ(edit_distance("\xc2\xa5"
                          "388",
                          "\xef\xbf\xa5"
                          "388"),
            1u);
  EXPECT_EQ(utf8_code_points("\xc2\xa5"
                             "388")
                .size(),
            4u);
  EXPECT_EQ(utf8_code_points("\xff"
                             "a")
                .size(),
            2u);  // a stray byte counts once
  OcrScore s;
  s.chars = 200;
  s.edits = 3;
  s.exact = 9;
  s.lines.resize(10);
  EXPECT_DOUBLE_EQ(s.char_accuracy(), 0.985);
  EXPECT_DOUBLE_EQ(s.line_accuracy(), 0.9);
}

// Reading "ab" as "xxxxxx" costs 2 substitutions + 4 insertions = 6 edits for
// 2 characters: 1 − 6/2 = −2 was printed as the accuracy; it floors at 0.
// 3 edits for 3 characters is exactly 0, 1 edit for 4 is 0.75.
TEST(OcrTask, CharAccuracyFloorsAtZero) {
  EXPECT_EQ(edit_distance("ab", "xxxxxx"), 6u);
  OcrScore s;
  s.chars = 2;
  s.edits = 6;
  EXPECT_EQ(s.char_accuracy(), 0.0);
  s.chars = 3;
  s.edits = 3;
  EXPECT_EQ(s.char_accuracy(), 0.0);
  s.chars = 4;
  s.edits = 1;
  EXPECT_DOUBLE_EQ(s.char_accuracy(), 0.75);
  s.chars = 0;
  s.edits = 5;
  EXPECT_EQ(s.char_accuracy(), 0.0);
}

TEST(OcrTask, LabelsFileErrors) {
  TempDir dir;
  testing::write_bytes(dir.file("labels.tsv"), "a.png\tok\nno tab here\n");
  testing::expect_error_naming([&] { read_ocr_labels(dir.path().string()); },
                               dir.file("labels.tsv"), "line 2 has no tab");
}

// PaddleOCR's RecMetric (ignore_space=True) removes every U+0020 from both
// texts before the edit distance; the counts below are by hand.
TEST(OcrTask, ScoresALineWithoutItsSpaces) {
  const OcrLine margins = ocr_score_line("a.png", "Open the door", " Open the door ");
  EXPECT_EQ(margins.edits, 0u);
  EXPECT_EQ(margins.chars, 11u);               // "Openthedoor"
  EXPECT_EQ(margins.text, " Open the door ");  // kept as read
  EXPECT_EQ(margins.truth, "Open the door");
  EXPECT_EQ(margins.file, "a.png");
  // A space lost inside a number costs nothing either.
  EXPECT_EQ(ocr_score_line("", "82541 25477", "8254125477").edits, 0u);
  // "¥" (U+00A5) read as "￥" (U+FFE5): one substitution of one code point.
  const OcrLine yen = ocr_score_line("",
                                     "\xc2\xa5"
                                     "388",
                                     "\xef\xbf\xa5"
                                     "388");
  EXPECT_EQ(yen.edits, 1u);
  EXPECT_EQ(yen.chars, 4u);
  // "a b c" scores as "abc" against "ab": one insertion, over 2 characters.
  const OcrLine extra = ocr_score_line("", "ab", "a b c");
  EXPECT_EQ(extra.edits, 1u);
  EXPECT_EQ(extra.chars, 2u);
  // Only U+0020: the ideographic space U+3000 is a character like any other.
  EXPECT_EQ(
      ocr_score_line("", "\xe5\xa4\xa7\xe5\xad\xa6", "\xe5\xa4\xa7\xe3\x80\x80\xe5\xad\xa6").edits,
      1u);
  // A line of spaces only has no characters to read: nothing read is exact,
  // anything read is an insertion.
  EXPECT_EQ(ocr_score_line("", "  ", "").chars, 0u);
  EXPECT_EQ(ocr_score_line("", "  ", "").edits, 0u);
  EXPECT_EQ(ocr_score_line("", "  ", "x").edits, 1u);
}

/// One-hot [1, T, C] output spelling `path` (class indices per step).
Tensor one_hot(const std::vector<int>& path, int classes) {
  std::vector<float> v(path.size() * classes, 0.0f);
  for (size_t t = 0; t < path.size(); ++t) v[t * classes + path[t]] = 1.0f;
  return Tensor::from_f32({1, static_cast<int64_t>(path.size()), classes}, v);
}

TEST(OcrTask, ScoresAnyRecognizer) {
  // Two fixture images, labels "Hello" and "lo", read by a stand-in recogniser
  // that answers "Hello" (exact) and "lox" (one insertion): 7 characters, 1 edit.
  TempDir dir;
  std::filesystem::copy_file(testing::fixture_path("ocr/04_word1.png"), dir.file("a.png"));
  std::filesystem::copy_file(testing::fixture_path("ocr/05_word2.png"), dir.file("b.png"));
  testing::write_bytes(dir.file("labels.tsv"), "a.png\tHello\nb.png\tlo\n");
  const std::vector<std::string> classes{"", "H", "e", "l", "o", "x", " "};
  int calls = 0;
  const OcrRecognizer fake = [&](const Tensor& x) {
    EXPECT_EQ(x.dim(2), 48);
    return ++calls == 1 ? one_hot({1, 2, 3, 0, 3, 4, 0}, 7) : one_hot({3, 3, 4, 5}, 7);
  };
  const OcrScore s = ocr_read_lines(fake, dir.path().string(), classes);
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(s.lines.size(), 2u);
  EXPECT_EQ(s.lines[0].text, "Hello");
  EXPECT_EQ(s.lines[1].text, "lox");
  EXPECT_EQ(s.chars, 7u);
  EXPECT_EQ(s.edits, 1u);
  EXPECT_EQ(s.exact, 1u);
  EXPECT_DOUBLE_EQ(s.char_accuracy(), 1.0 - 1.0 / 7.0);
  EXPECT_DOUBLE_EQ(s.line_accuracy(), 0.5);
  // A line read with a margin space ("lo" as " lo") is scored exact, and the
  // truth's space ("He llo") is not a character: 7 characters, no edits.
  testing::write_bytes(dir.file("labels.tsv"), "a.png\tHe llo\nb.png\tlo\n");
  calls = 0;
  const OcrRecognizer spaced = [&](const Tensor&) {
    return ++calls == 1 ? one_hot({1, 2, 3, 0, 3, 4, 0}, 7) : one_hot({6, 3, 0, 4}, 7);
  };
  const OcrScore sp = ocr_read_lines(spaced, dir.path().string(), classes);
  ASSERT_EQ(sp.lines.size(), 2u);
  EXPECT_EQ(sp.lines[0].text, "Hello");
  EXPECT_EQ(sp.lines[1].text, " lo");  // kept as read
  EXPECT_EQ(sp.chars, 7u);             // "Hello" + "lo"
  EXPECT_EQ(sp.edits, 0u);
  EXPECT_EQ(sp.exact, 2u);
  EXPECT_DOUBLE_EQ(sp.char_accuracy(), 1.0);
  // A wrong class count names the image whose output it was.
  const OcrRecognizer wrong = [&](const Tensor&) { return one_hot({1}, 5); };
  testing::expect_error_naming([&] { ocr_read_lines(wrong, dir.path().string(), classes); },
                               dir.file("a.png"), "5 classes, the key list gives 7");
}

// The PP-OCRv4 recogniser in onnxruntime reads the fixture lines. Measured once
// independently of tailor (Pillow + NumPy preprocessing, argmax decode in
// Python, onnxruntime-node 1.30.0): 36 of 38 lines read as written;
// 12_sentence3 is read with a leading space and 18_price3's "¥" (U+00A5) as
// the full-width "￥" (U+FFE5). Scored as PaddleOCR's RecMetric scores
// (ignore_space=True: spaces removed from both texts), the leading space costs
// nothing: 1 edit over 332 characters (labels.tsv's 360 less its 28 spaces),
// 37 lines exact.
TEST(OcrTask, OnnxruntimeReadsFixtureLines) {
  if (auto why = testing::ort_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const std::string model = testing::model_path("ch_PP-OCRv4_rec_infer.onnx");
  const std::string keys = testing::model_path("ppocr_keys_v1.txt");
  if (!std::filesystem::exists(model) || !std::filesystem::exists(keys)) {
    GTEST_SKIP() << "PP-OCRv4 recogniser not fetched (scripts/fetch-models.sh)";
  }
  const auto classes = read_ocr_keys(keys);
  const OcrBatchRecognizer ort = [&](const std::vector<Tensor>& inputs) {
    std::vector<std::vector<std::pair<std::string, Tensor>>> runs;
    for (const Tensor& x : inputs) runs.push_back({{"x", x}});
    std::vector<Tensor> outputs;
    for (auto& out : testing::run_ort_batch(model, runs, 1))
      outputs.push_back(out.at("softmax_11.tmp_0"));
    return outputs;
  };
  const OcrScore score = ocr_read_lines(ort, testing::fixture_path("ocr"), classes);
  ASSERT_EQ(score.lines.size(), 38u);
  EXPECT_EQ(score.chars, 332u);
  std::set<std::string> read_otherwise, misread;
  for (const OcrLine& l : score.lines) {
    if (l.text != l.truth) read_otherwise.insert(l.file);
    if (l.edits) misread.insert(l.file);
    RecordProperty(l.file, l.text);
  }
  EXPECT_EQ(read_otherwise, (std::set<std::string>{"12_sentence3.png", "18_price3.png"}));
  EXPECT_EQ(misread, (std::set<std::string>{"18_price3.png"}));
  EXPECT_EQ(score.edits, 1u);
  EXPECT_EQ(score.exact, 37u);
  EXPECT_NEAR(score.char_accuracy(), 1.0 - 1.0 / 332.0, 1e-12);
  EXPECT_NEAR(score.line_accuracy(), 37.0 / 38.0, 1e-12);
  for (const OcrLine& l : score.lines) {
    if (l.file == "12_sentence3.png") {
      EXPECT_EQ(l.text, " Open the door slowly.");
    }
    if (l.file == "18_price3.png") {
      EXPECT_EQ(l.text,
                "\xef\xbf\xa5"
                "388");
    }
  }
}

}  // namespace
}  // namespace tailor::tasks
