// Verification of a compressed model against its original (compress.h).
#pragma once

#include <optional>
#include <string>

#include "tailor/compress/compress.h"
#include "tailor/compress/output_damage.h"
#include "tailor/compress/output_profile.h"
#include "tailor/graph/graph.h"

namespace tailor::compress {

/// The calibration inputs of an ONNX model, never its verification inputs:
/// for a recogniser the even-numbered OCR fixture lines (verification reads
/// the odd-numbered ones), for --calib the even-numbered inputs in name order
/// (verification runs the odd-numbered; a single input serves both, said in
/// the description), else `random_inputs` N(0, 1) inputs seeded seed + 2
/// (verification: seed). Metric: KL when the first output is a Softmax over
/// its last axis (detect_damage_metric), else relative error. Throws Error
/// naming a --calib file that holds NaN or Inf, and as verify_onnx does for
/// unreadable inputs. `verification`: the other half instead, the inputs
/// verify_onnx runs (odd-numbered lines or --calib inputs, random ones seeded
/// `seed`).
Calibration onnx_calibration(const graph::Model& original, const CompressOptions& options,
                             bool verification = false);

/// Runs `original` and `compressed` (tailor's runtime) on the verification
/// inputs chosen as compress_model documents (the halves onnx_calibration
/// leaves out); output damage on the calibration metric; per-output relative error and
/// cosine, OCR character accuracy for a recogniser. Also imports and runs the
/// written `standard_path` on the first input and sets `standard_max_abs` to
/// its max |Δ| against `compressed`; adds the seconds each model ran.
/// Fills `result`'s timings, standard_vs_tailor_max_abs and OCR fields.
report::Verification verify_onnx(const graph::Model& original, const graph::Model& compressed,
                                 const std::string& standard_path, const CompressOptions& options,
                                 CompressResult& result);

/// KL divergence and top-1 agreement (llm::compare_models) of `compressed`
/// against `original` (decoder graphs: a llama and its rewrite_tailor form,
/// both run by tailor's executor with a KV cache), and the logits' relative
/// error and cosine over the first two of the same sampled sequences. Also
/// imports the written `standard_path` (rewrite_standard of the same graph),
/// runs it in tailor's runtime on the first of those sequences and sets
/// result.standard_vs_tailor_max_abs (and _max_rel) to its difference from
/// `compressed`'s logits. Fills result.kld.
report::Verification verify_llama(const graph::Model& original, const graph::Model& compressed,
                                  const std::string& standard_path, const CompressOptions& options,
                                  CompressResult& result);

}  // namespace tailor::compress
