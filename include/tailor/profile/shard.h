// A profile split across processes: which layers each of N shards (MPI ranks
// or array-job tasks) measures, the shard file one writes, and the merge that
// makes one profile.json equal to a one-process run.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tailor/graph/graph.h"
#include "tailor/profile/model_profile.h"
#include "tailor/profile/profiler.h"

namespace tailor {

namespace mpi {
class World;
}

/// One layer of a model to profile, as a shard plan sees it.
struct PlannedLayer {
  /// Weight name as in the model file.
  std::string name;
  /// Shape of the [out, in] view.
  int64_t out = 0, in = 0;
  /// Estimated profiling cost (layer_cost), arbitrary units.
  double cost = 0;
};

/// Estimated cost of profiling an [out, in] layer: out·in·(64 + min(out, in)).
/// The quantizers pass over the out·in weights a few dozen times; the SVD that
/// serves the low-rank candidates costs out·in·min(out, in) (a full one; the
/// randomized one a fraction of it). Only its order matters (shard_layers).
double layer_cost(int64_t out, int64_t in);

/// The layers profile_model measures (is_profiled under `options`), in its
/// order: index i here is index i of LayerSelection. Reads no weight bytes.
/// Throws Error for a bad layer regex.
std::vector<PlannedLayer> plan_layers(const graph::Model& model, const ProfileOptions& options);

/// The shard (0 … shards − 1) of every layer: layers taken by cost, largest
/// first (ties: the lower index), each to the shard with the least cost so far
/// (ties: the lower shard), Graham's LPT rule. Deterministic. Throws Error
/// (source "--shard") when shards < 1.
std::vector<int> shard_layers(const std::vector<PlannedLayer>& layers, int shards);

/// The indices shard_layers gives to `shard`, ascending.
std::vector<size_t> layers_of_shard(const std::vector<int>& owner, int shard);

/// One shard's part of a profile: what `tailor profile --shard I/N` writes.
struct ProfileShard {
  /// This shard (0-based) and the shard count.
  int index = 0, count = 1;
  /// profile_cache_key of the model and settings: shards merge only when equal.
  std::string key;
  /// Every profiled layer's name, in profile order (the whole model's list).
  std::vector<std::string> layers;
  /// The layers this shard measured, with the whole model's byte totals.
  ModelProfile part;
};

/// "I/N" → {I, N}: 0 ≤ I < N. Throws Error (source "--shard") otherwise.
std::pair<int, int> parse_shard(const std::string& text);

/// Writes `shard` (JSON; format "tailor-profile-shard", docs/formats.md)
/// atomically. Throws Error naming `path` on I/O failure.
void write_shard(const std::string& path, const ProfileShard& shard);

/// Reads and validates a shard file. Throws Error naming `path` for bad JSON,
/// another format, missing fields or a part that read_profile refuses.
ProfileShard read_shard(const std::string& path);

/// The whole profile from every shard of one run: `shards[k]` read from
/// `paths[k]`, any order. Throws a one-line Error naming the file at fault
/// when the shards come from another model or other settings (key), disagree
/// on the shard count or the layer list, repeat or miss a shard, or hold a
/// layer of another shard or not all of their own.
ModelProfile merge_shards(const std::vector<ProfileShard>& shards,
                          const std::vector<std::string>& paths);

/// A LayerSelection of the layers `only` (nullopt: all) whose finished layers
/// go to the profile cache (store_cached_layer under layer_cache_key with
/// `settings_key`) and whose cached layers are taken from it, so that a run
/// cut short (a rank that died, a task killed) does only the rest when run
/// again. `reused`, when given, counts the layers taken from the cache.
/// A cache folder that cannot be written is a warning per layer, not an error.
LayerSelection cached_selection(std::optional<std::vector<size_t>> only,
                                const std::string& settings_key,
                                std::shared_ptr<std::atomic<size_t>> reused = nullptr);

/// Profiles `model` on every rank of `world` (every rank calls it, the model
/// loaded by each, mapped: a rank reads only its own layers' bytes): rank 0
/// lists the layers (plan_layers) and deals them out (shard_layers over
/// world.size()), each rank profiles its own (through the profile cache when
/// `cache`: cached_selection), and rank 0 gathers the parts. Returns on rank 0
/// the profile profile_model gives in one process (the same layers, numbers
/// and JSON bytes; encode_seconds kept only for rank 0's layers, 0 for the
/// rest, as profile.json never holds them), nullopt on the
/// others. A rank whose layers fail sends its error instead: rank 0 throws
/// Error "rank R: …" (the layers finished anywhere stay in the cache); a rank
/// whose model lists other layers than rank 0's makes rank 0 throw too.
/// `finish`, when given, is called on every rank with its own part (the
/// layers it profiled, in index order) and their indices before the gather
/// (the output damage of those layers, tailor profile --objective output);
/// what it throws is that rank's error. Rank 0's returned profile takes
/// rank 0's part's output_metric and calibration.
std::optional<ModelProfile> profile_model_world(
    const graph::Model& model, const ProfileOptions& options, const mpi::World& world, bool cache,
    const std::function<void(ModelProfile& part, const std::vector<size_t>& indices)>& finish = {});

}  // namespace tailor
