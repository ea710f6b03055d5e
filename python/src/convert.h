// tailor's result structs as plain Python values (dicts, lists, numbers,
// strings) for the pure-Python layer (python/tailor/__init__.py) to wrap.
#pragma once

#include <pybind11/pybind11.h>

#include "tailor/compress/compress.h"
#include "tailor/plan/plan.h"
#include "tailor/profile/model_profile.h"

namespace tailor::python {

/// {"model", "dense_bytes", "fixed_bytes", "output_metric", "calibration",
///  "layers": [{"name", "shape_out_in", "numel", "dense_bytes", "kept_dense",
///  "candidates": [{"label", "bytes", "rel_error", "macs", "params",
///  "encode_seconds", "rel_error_activation", "output_damage"}]}]};
/// absent optionals are None.
pybind11::dict profile_dict(const ModelProfile& profile);

/// {"model", "solver", "objective_name", "objective", "budget_bytes",
///  "fixed_bytes", "total_bytes", "seed", "lower_bound", "gap",
///  "proven_optimal", "seconds", "nodes", "choices": [{"layer", "label",
///  "rel_error", "bytes"}]}; a NaN lower bound is None.
pybind11::dict plan_dict(const plan::Plan& plan);

/// What `tailor compress` prints: {"kind", "out_dir", "seconds",
///  "profile_cached", "damage_seconds", "verification": {"inputs", "outputs":
///  [{"name", "rel_error", "cosine"}], "metric": {"name", "original",
///  "compressed"} | None, "saliency": {...} | None, "predicted_error",
///  "measured_error", "damage_metric", "predicted_damage",
///  "measured_damage"}, "rewrites": {layer: form}, "files": {name: bytes},
///  "ocr": {"exact_original", "exact_compressed", "differences": [...]} | None,
///  "kld": {...} | None, "standard_vs_tailor_max_abs",
///  "standard_vs_tailor_max_rel"}; NaNs stay NaN (float('nan')). The plan and
/// the profile are added by the caller (as handles).
pybind11::dict result_dict(const compress::CompressResult& result);

}  // namespace tailor::python
