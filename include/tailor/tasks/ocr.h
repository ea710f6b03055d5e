// The OCR task-level check of the PP-OCR text recogniser (PP-OCRv4 rec):
// PaddleOCR's preprocessing, greedy CTC decoding with its key list, and the
// character and line accuracy over a folder of text-line fixtures. A runtime is
// scored through a callable, so onnxruntime and tailor's runtime are measured
// the same way.
//
// Follows PaddleOCR 2.x tools/infer/predict_rec.py (TextRecognizer with
// rec_algorithm "SVTR_LCNet", rec_image_shape "3,48,320", batch of one) and
// ppocr/postprocess/rec_postprocess.py (CTCLabelDecode, use_space_char=True).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tailor/core/tensor.h"
#include "tailor/tasks/image.h"

namespace tailor::tasks {

/// The recogniser's classes from a PaddleOCR key file (one character per line,
/// UTF-8, e.g. models/ppocr_keys_v1.txt; "\r\n" accepted, a final newline
/// optional): index 0 is the CTC blank (""), 1..N the file's lines in order,
/// N+1 the space " " (use_space_char=True). ppocr_keys_v1.txt gives 6625
/// classes. Throws Error naming the file when it is missing, empty or holds an
/// empty line.
std::vector<std::string> read_ocr_keys(const std::string& path);

/// PaddleOCR's resize_norm_img for one image (batch of one, rec_image_shape
/// 3×48×320): target width W = int(48 · max(320/48, w/h)); the image is resized
/// to 48 × min(W, ceil(48·w/h)) (resize_bilinear), its channels put in B, G, R
/// order (PaddleOCR reads images with cv2.imread, which gives BGR), scaled
/// (x/255 − 0.5)/0.5 into [−1, 1], laid out CHW and padded on the right with 0
/// up to width W. Returns f32 [1, 3, 48, W], W ≥ 320.
/// Throws Error for an empty image.
Tensor ocr_rec_preprocess(const Image& image);

/// Greedy CTC decoding (Graves et al., 2006, best path) of recogniser output
/// `probs` [1, T, C] or [T, C] (f32; softmax probabilities or logits, only the
/// arg-max matters): per step the class of largest value (the lowest index on
/// ties), repeats merged, blanks (class 0) dropped, the rest mapped through
/// `classes` (read_ocr_keys) and concatenated. Throws Error when C differs from
/// classes.size() or the shape or dtype is not as above.
std::string ctc_greedy_decode(const Tensor& probs, const std::vector<std::string>& classes);

/// The Unicode code points of UTF-8 `text` (a malformed byte counts as one
/// code point of its own value, so every input has a length).
std::u32string utf8_code_points(const std::string& text);

/// Levenshtein distance (unit cost insert, delete, substitute) between the
/// code-point sequences of `a` and `b`.
size_t edit_distance(const std::string& a, const std::string& b);

/// One fixture line read by a recogniser.
struct OcrLine {
  std::string file;   ///< image file name in the fixture folder
  std::string truth;  ///< ground-truth text
  std::string text;   ///< what was read (as decoded, spaces kept)
  size_t edits = 0;   ///< edit_distance of the two texts without their spaces (ocr_score_line)
  size_t chars = 0;   ///< code points of truth without its spaces
};

/// Scores one line with its spaces ignored as PaddleOCR's RecMetric ignores
/// them (ignore_space=True, its default; ppocr/metrics/rec_metric.py): every
/// space (U+0020) is removed from `truth` and `text` before the edit distance,
/// so a line read with an extra space, which the recogniser often adds at the
/// crop's margins, is read exactly, and `chars` counts the truth's other code
/// points. (RecMetric's own normalised edit distance averages per line; the
/// accuracy here pools edits over characters, OcrScore::char_accuracy.)
/// `text` is kept as read. `truth` and `text` are UTF-8: removing byte 0x20
/// never splits a code point of valid UTF-8.
OcrLine ocr_score_line(std::string file, std::string truth, std::string text);

/// Scores over a fixture set.
struct OcrScore {
  std::vector<OcrLine> lines;  ///< in labels.tsv order
  size_t chars = 0;            ///< Σ truth code points but spaces
  size_t edits = 0;            ///< Σ edit distances, spaces ignored (ocr_score_line)
  size_t exact = 0;            ///< lines read exactly, spaces ignored (edits = 0)
  /// Character accuracy max(0, 1 − Σ edits / Σ chars): 1 − the normalised
  /// edit distance, floored at 0 (reading far more than is there can cost
  /// more edits than there are characters). 0 when chars = 0.
  double char_accuracy() const;
  /// Exact-line accuracy: exact / lines.
  double line_accuracy() const;
};

/// The fixture lines of `dir`/labels.tsv: (file, text) per line, `file<TAB>text`,
/// UTF-8. Throws Error naming labels.tsv for a missing file, a line without a
/// tab, an empty file name or an empty set.
std::vector<std::pair<std::string, std::string>> read_ocr_labels(const std::string& dir);

/// One recogniser call: input f32 [1, 3, 48, W] → output [1, T, C].
using OcrRecognizer = std::function<Tensor(const Tensor& input)>;
/// Many recogniser calls at once (one per input, outputs in the same order),
/// for runtimes that pay a start-up per call (an onnxruntime process).
using OcrBatchRecognizer = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

/// Reads every fixture line of `dir` (read_ocr_labels, read_png,
/// ocr_rec_preprocess), runs the recogniser on each and decodes the outputs
/// with `classes` (ctc_greedy_decode); returns the scores. `only`, when not
/// empty, reads just those lines (0-based indices into labels.tsv, in that
/// order): a calibration or verification half. Errors of reading,
/// preprocessing or decoding name the file concerned (an index past the last
/// line names labels.tsv's folder).
OcrScore ocr_read_lines(const OcrBatchRecognizer& run, const std::string& dir,
                        const std::vector<std::string>& classes,
                        const std::vector<size_t>& only = {});
/// As above with a recogniser called once per line.
OcrScore ocr_read_lines(const OcrRecognizer& run, const std::string& dir,
                        const std::vector<std::string>& classes,
                        const std::vector<size_t>& only = {});

}  // namespace tailor::tasks
