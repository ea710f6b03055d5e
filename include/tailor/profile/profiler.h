// `tailor profile`: every layer of a model measured under every applicable
// compression scheme (DESIGN.md, "Scheme semantics"), low-rank at several
// ranks, in parallel, deterministically.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/graph/weights.h"
#include "tailor/profile/model_profile.h"
#include "tailor/schemes/scheme.h"

namespace tailor {

/// What to profile and how.
struct ProfileOptions {
  /// Schemes to try, by label ("int8", "int4-g64", "lowrank-r32", ...) or by
  /// family: "lowrank" (the ranks of profile_lowrank_ranks) and "int4-g"
  /// (groups 32, 64, 128), "mse" and "gptq" (the data-aware quantizers of
  /// int8, int4, int3, int4-g{G}), "lowrank-q" (lowrank-q{8,4}-r{R} at the
  /// low-rank ranks), "int+r" (int{4,3}+r{8,16,32}[-q8]). Empty: every scheme
  /// of the catalog. Schemes that do
  /// not apply to a layer's shape are left out for that layer.
  std::vector<std::string> schemes;
  /// ECMAScript regex; only weights whose name it matches (std::regex_search)
  /// are profiled. Empty: every weight.
  std::string layer_regex;
  /// Weights with fewer elements than this are not profiled (fixed bytes).
  int64_t min_params = 4096;
  /// Worker threads; 0 means std::thread::hardware_concurrency().
  int threads = 0;
  /// Calibration file (safetensors: one f32 vector of length `in` per layer,
  /// named as the layer, holding the per-input-channel mean x²). Empty: none.
  std::string calib;
  /// What the output damage is measured on (the SHA-256 of the calibration
  /// inputs and the metric); only enters the profile cache key. Empty: none.
  std::string damage_key;
  /// What the candidates' latencies were measured on (profile/latency.h's
  /// latency_key: the input shapes and the clock); only enters the profile
  /// cache key, and only when non-empty, so an entry without latencies is
  /// never read back for a run that wants them. Empty: none measured.
  std::string latency_key;
  /// Base seed; layer i's randomized SVDs use Rng(seed).split(i).
  uint64_t seed = 0x7a11;
  /// Draw a progress bar on stderr (only when stderr is a terminal).
  bool progress = false;
  /// Called after each profiled layer with (layers done, layers to profile),
  /// from the worker that finished it, one call at a time (the Python API's
  /// progress callback). Not part of the profile cache key.
  std::function<void(size_t, size_t)> on_layer;
  /// Defaults of the scheme parameters (tucker rank fraction, tt cores, SVD options).
  schemes::SchemeParams scheme_defaults;
  /// Per layer name, its calibration Gram XᵀX (runtime::gram); a layer found
  /// here gets it as scheme_defaults.gram, which makes the -gptq labels apply.
  std::map<std::string, std::shared_ptr<const schemes::Gram>> grams;
};

/// Low-rank ranks profiled for W [out, in] (f32, contiguous, shape {out, in}):
/// the smallest ranks whose leading singular values hold 90%, 99% and 99.9%
/// of ‖W‖_F² (the energy of the full spectrum), and ⌊p·out·in/(out + in)⌋ for
/// p = 1/2, 1/4, 1/8 (1/p of the dense parameter count), each at least 1;
/// deduplicated, ascending, only ranks R with 4·R·(out + in) < 4·out·in.
/// Small layers (min(out, in) ≤ svd.exact_max_dim) take every σ from one exact
/// gesdd. Larger ones never run a full SVD: a blocked randomized QB
/// (linalg::BlockedQb; Martinsson & Voronin 2016, with power iterations, Halko
/// et al. 2011) grows in blocks — first the largest parameter rank plus
/// svd.oversampling, then max(64, k/4) at a time — and the singular values σ̂
/// of its B (σ̂_i ≤ σ_i) are compared with the exact total ‖W‖_F² (Yu, Gu & Li
/// 2018: ‖W − QB‖_F² = ‖W‖_F² − ‖B‖_F²). A level counts when reached at least
/// svd.oversampling components inside the basis (σ̂ still accurate there);
/// since σ̂ ≤ σ, a rank found this way truly holds its level. The growth stops
/// when all three levels are found, at the largest compressing rank kmax, or
/// when the lowest missing level is estimated out of reach: Σ_{i≤r} σ̂_i² +
/// (kmax − r)·σ̂_r² < level·‖W‖_F² for the settled r (each σ_i, i > r, is at
/// most σ_r); a level not reached by kmax gives no rank. Should the basis have
/// to grow past a third of the smaller side with a level still missing (a flat
/// spectrum, where the sketch would cost more than a full decomposition), or
/// the first block already exceed that, one exact SVD is taken instead: gesdd
/// for a layer under svd.gram_min_elements elements, otherwise the leading
/// eigenpairs of the Gram matrix of the smaller side (linalg::svd_gram, in
/// double), which needs no copy of W. profile_layer cuts every low-rank
/// candidate from one such SVD (holding at least the largest rank), so a
/// layer pays for its SVDs once; a large layer keeps only the smaller side's
/// singular vectors and each candidate forms its other factor from W
/// (schemes::lowrank_from_svd with W).
std::vector<int64_t> profile_lowrank_ranks(const Tensor& w, const linalg::SvdOptions& svd);

/// Activation-aware relative error sqrt(Σ_oj d_j·(W_oj − Ŵ_oj)²) /
/// sqrt(Σ_oj d_j·W_oj²) (DESIGN.md; 0 when the denominator is 0) of W and Ŵ
/// [out, in] f32 with d [in]. Throws Error when the lengths differ.
double activation_rel_error(const Tensor& w, const Tensor& w_hat, std::span<const float> d);

/// Profiles one weight (layout ≠ none): one candidate per selected applicable
/// scheme, low-rank at profile_lowrank_ranks, in the order the catalog lists
/// them. Each candidate's rel_error is measured on the decoded stored factors
/// against W; bytes = Encoded::bytes(), macs = Encoded::macs(1), params = the
/// elements of the stored factors, encode_seconds = wall time of encode (for
/// low-rank: of the shared SVD plus the truncation).
/// `index` seeds the layer's SVDs (Rng(options.seed).split(index)); `importance`
/// (length in, or empty) adds rel_error_activation. Throws Error naming the
/// weight for layout none, an unknown scheme label, or a wrong `importance` length.
/// Weights the encoders cannot take (NaN, ±Inf; values whose scale overflows
/// f16 or whose factors overflow f32: any scheme failing with an Error) keep
/// the layer dense: its only candidate is "dense", kept_dense says why, and a
/// warning line naming the weight goes to stderr.
/// A file-mapped weight's pages are released (madvise) once it is copied to
/// f32; a later read faults them back in unchanged.
LayerProfile profile_layer(const graph::WeightView& weight, const ProfileOptions& options,
                           uint64_t index = 0, std::span<const float> importance = {});

/// Whether `weight` is a layer to plan under `options`: an [out, in] view
/// (layout ≠ none), numel ≥ min_params, and a name the layer regex matches.
bool is_profiled(const graph::WeightView& weight, const ProfileOptions& options);

/// Profiles a model: its weights (graph::weights, which orients them from the
/// graph) that is_profiled accepts, in graph::weights order, on options.threads
/// workers; the output is the same whatever the thread count. Memory: each
/// worker holds one layer's f32 [out, in] copy and its candidates' factors;
/// a file-mapped weight (safetensors, GGUF, llama2.c, ONNX external data) is
/// read through the mapping and its pages are dropped from the resident set
/// (madvise MADV_DONTNEED) as soon as the layer is copied, and each candidate's
/// error is read from one decode against that copy, so peak RSS follows the
/// layers in flight, not the file size. Byte convention:
/// every weight counts 4·numel (its dense f32 size, whatever its stored dtype):
/// dense_bytes sums it over every weight, fixed_bytes over the weights not
/// profiled. Held per layer in flight: W in f32, one candidate's factors and
/// its decode, and for a layer of svd.gram_min_elements or more the Gram
/// matrix (8·min(out, in)² bytes, while the SVD runs) and the kept singular
/// vectors; bench/profile/memory_check.sh checks the bound of 3 × the
/// layer's f32 size × layers in flight + 200 MB.
/// Throws Error for a bad regex or scheme list, and (naming the
/// calibration file and the layer) for a missing, non-f32 or wrong-length
/// calibration vector.
ModelProfile profile_model(const graph::Model& model, const ProfileOptions& options);

/// A part of profile_model's work (a shard of a distributed profile) and a
/// store for finished layers. Indices count the layers is_profiled accepts, in
/// graph::weights order (index i seeds layer i's SVDs whatever the part).
struct LayerSelection {
  /// The layers to profile, ascending and unique; nullopt: every layer.
  std::optional<std::vector<size_t>> only;
  /// Asked before a layer is profiled; a layer it returns is taken as it is
  /// (a cache hit). May be empty.
  std::function<std::optional<LayerProfile>(size_t index, const graph::WeightView&)> lookup;
  /// Called once per layer profiled (not for lookup hits), from the worker
  /// that profiled it, one call at a time. May be empty.
  std::function<void(size_t index, const graph::WeightView&, const LayerProfile&)> done;
};

/// profile_model of the layers `selection` names: the returned profile has
/// the whole model's dense_bytes and fixed_bytes and only those layers, in
/// index order, each equal to its entry in the whole profile_model. Throws as
/// profile_model, and Error (source "profile") for an index past the last
/// profiled layer.
ModelProfile profile_model(const graph::Model& model, const ProfileOptions& options,
                           const LayerSelection& selection);

}  // namespace tailor
