// A cache of model profiles keyed by content, so profiling a model again with
// the same settings (another budget, another solver) is skipped.
#pragma once

#include <optional>
#include <string>

#include "tailor/profile/model_profile.h"
#include "tailor/profile/profiler.h"

namespace tailor {

/// Version of what the profiler measures and of the cache file layout; bump it
/// whenever a change to the profiler or the scheme catalog changes profiles,
/// so older cache entries stop matching.
inline constexpr int kProfileFormatVersion = 1;

/// The folder cache entries live in: $TAILOR_CACHE_DIR/profiles when that
/// variable is set and non-empty, else $XDG_CACHE_HOME/tailor/profiles, else
/// $HOME/.cache/tailor/profiles. Throws Error when none of the three is set.
std::string profile_cache_dir();

/// The cache key of profiling `model_path` under `options`: the lower-case hex
/// SHA-256 of a canonical JSON text holding kProfileFormatVersion, the SHA-256
/// of the model's bytes (of a folder: every regular file directly in it, by
/// name, with its own SHA-256), the scheme list (sorted and deduplicated: the
/// profile does not depend on its order; empty means the whole catalog),
/// min_params, the layer regex, the SHA-256 of the calibration file (when
/// given), the output-damage key (damage_key: the calibration inputs and
/// metric), the seed and the scheme parameters. The thread count and the
/// progress flag do not enter (the profile does not depend on them). Throws
/// Error naming the model or calibration file when it cannot be read.
std::string profile_cache_key(const std::string& model_path, const ProfileOptions& options);

/// The settings part of profile_cache_key (every field but the model's
/// SHA-256): equal for two runs that profile alike. Throws Error naming the
/// calibration file when it cannot be read.
std::string profile_settings_key(const ProfileOptions& options);

/// The cache key of one layer's profile: the SHA-256 of `settings_key`
/// (profile_settings_key), the layer's `index` among the profiled layers (it
/// seeds the layer's SVDs), its name, layout, dtype, shape and the SHA-256 of
/// its stored bytes; reads only this weight's bytes (of a mapped file: only its
/// pages), so a rank of a sharded profile keys its own layers without reading
/// the rest of the model.
std::string layer_cache_key(const std::string& settings_key, size_t index,
                            const graph::WeightView& weight);

/// The cached profile of one layer under a layer_cache_key, verified as
/// load_cached_profile verifies (nullopt, with a warning, when it fails).
std::optional<LayerProfile> load_cached_layer(const std::string& key);

/// Stores one layer's profile under a layer_cache_key (as store_cached_profile:
/// false, with a warning, when it cannot be written).
bool store_cached_layer(const std::string& key, const LayerProfile& layer);

/// The cached profile for `key`, or nullopt on a miss. The entry is verified
/// before it is used: a file that is not valid JSON, has the wrong format
/// version or key, fails read_profile's validation, or whose SHA-256 of the
/// profile text does not match the one stored beside it is ignored with a
/// one-line warning on stderr (and nullopt is returned, so the caller
/// recomputes). The profile's `model` field is the path it was first made
/// from; callers set it to their own path. Throws Error (source "profile
/// cache") for a key that is not 64 hex digits.
std::optional<ModelProfile> load_cached_profile(const std::string& key);

/// Stores `profile` under `key` (atomically, write_file_atomic; the folder is
/// created when missing). A failure to write (read-only or missing home) is a
/// warning on stderr, not an error: returns false then, true when stored.
/// Throws Error (source "profile cache") for a key that is not 64 hex digits.
bool store_cached_profile(const std::string& key, const ModelProfile& profile);

}  // namespace tailor
