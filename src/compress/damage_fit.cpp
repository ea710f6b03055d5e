// Scalable output damage: α(ℓ, family) · e² fitted to measured probes (damage_fit.h).
#include "tailor/compress/damage_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "tailor/core/error.h"
#include "tailor/schemes/registry.h"

namespace tailor::compress {

std::string damage_family(const std::string& label) {
  using K = schemes::SchemeKind;
  schemes::SchemeKind kind;
  try {
    kind = schemes::parse_scheme(label).kind();
  } catch (const Error&) {
    return "";  // a label the catalog does not parse: measured, never fitted
  }
  switch (kind) {
    case K::int8:
    case K::int4:
    case K::int3:
    case K::int4_grouped:
    case K::ternary:
    case K::q8_0:
    case K::q4_0:
      return "rtn";
    case K::quant_mse:
      return "mse";
    case K::quant_gptq:
      return "gptq";
    case K::lowrank:
      return "lowrank";
    case K::lowrank_quant:
      return "lowrank-q";
    case K::quant_lowrank:
      return "int+r";
    default:
      return "";
  }
}

namespace {

/// Per family, its members' indices sorted by rel_error (ties by index).
std::map<std::string, std::vector<size_t>> families(const LayerProfile& layer) {
  std::map<std::string, std::vector<size_t>> out;
  for (size_t c = 0; c < layer.candidates.size(); ++c)
    if (std::string f = damage_family(layer.candidates[c].label); !f.empty()) out[f].push_back(c);
  for (auto& [family, members] : out)
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return layer.candidates[a].rel_error < layer.candidates[b].rel_error;
    });
  return out;
}

/// The probes of one sorted family (damage_probes' rule).
std::vector<size_t> family_probes(const std::vector<size_t>& sorted) {
  const size_t n = sorted.size();
  if (n <= 3) return sorted;
  const size_t p = n <= 5 ? 2 : 3;
  std::vector<size_t> out;
  for (size_t k = 0; k < p; ++k)
    out.push_back(sorted[static_cast<size_t>(
        std::lround(static_cast<double>((k + 1) * (n - 1)) / static_cast<double>(p + 1)))]);
  return out;
}

}  // namespace

std::vector<size_t> damage_probes(const LayerProfile& layer) {
  std::vector<size_t> out;
  for (size_t c = 0; c < layer.candidates.size(); ++c)
    if (layer.candidates[c].label != "dense" && damage_family(layer.candidates[c].label).empty())
      out.push_back(c);
  for (const auto& [family, members] : families(layer))
    for (size_t c : family_probes(members)) out.push_back(c);
  std::sort(out.begin(), out.end());
  return out;
}

void fit_layer_damage(LayerProfile& layer) {
  layer.damage_fits.clear();
  for (const auto& [family, members] : families(layer)) {
    const std::vector<size_t> probes = family_probes(members);
    for (size_t c : probes)
      if (!layer.candidates[c].output_damage)
        throw Error(layer.name,
                    "damage fit: probe '" + layer.candidates[c].label + "' has no measured damage");
    // The measured members: the probes, and any member measured since
    // (measure_fitted_picks), in the family's rel_error order.
    std::vector<size_t> measured;
    for (size_t c : members)
      if (std::find(probes.begin(), probes.end(), c) != probes.end() ||
          (layer.candidates[c].output_damage && !layer.candidates[c].output_damage_fitted))
        measured.push_back(c);
    if (measured.size() == members.size()) continue;  // every member measured
    DamageFit fit;
    fit.family = family;
    double log_sum = 0;
    size_t used = 0;
    for (size_t c : measured) {
      const Candidate& cand = layer.candidates[c];
      fit.probes.push_back(cand.label);
      const double d = *cand.output_damage, e = cand.rel_error;
      if (d > 0 && e > 0) {
        log_sum += std::log(d / (e * e));
        ++used;
      }
    }
    fit.alpha = used > 0 ? std::exp(log_sum / static_cast<double>(used)) : 0.0;
    for (size_t c : measured) {
      const Candidate& cand = layer.candidates[c];
      const double f = fit.alpha * cand.rel_error * cand.rel_error, d = *cand.output_damage;
      // Both floored at 1e-12: finite when one is 0.
      const double ff = std::max(f, 1e-12), dd = std::max(d, 1e-12);
      const double factor = std::max(ff / dd, dd / ff);
      fit.fit_factor = std::max(fit.fit_factor, factor);
    }
    for (size_t c : members)
      if (std::find(measured.begin(), measured.end(), c) == measured.end()) {
        Candidate& cand = layer.candidates[c];
        cand.output_damage = fit.alpha * cand.rel_error * cand.rel_error;
        cand.output_damage_fitted = true;
      }
    layer.damage_fits.push_back(std::move(fit));
  }
}

std::string damage_fit_summary(const ModelProfile& profile) {
  std::vector<double> factors;
  size_t layers = 0, measured = 0, fitted = 0;
  for (const LayerProfile& l : profile.layers) {
    layers += l.damage_fits.empty() ? 0 : 1;
    for (const DamageFit& f : l.damage_fits) factors.push_back(f.fit_factor);
    for (const Candidate& c : l.candidates) {
      if (!c.output_damage || c.label == "dense") continue;
      ++(c.output_damage_fitted ? fitted : measured);
    }
  }
  if (factors.empty()) return "";
  std::sort(factors.begin(), factors.end());
  return fmt::format(
      "fitted damage D ≈ α·e² on {} layers ({} fits): {} candidates measured, {} predicted; fit "
      "factor on the probes median {:.3g}, max {:.3g}",
      layers, factors.size(), measured, fitted, factors[factors.size() / 2], factors.back());
}

}  // namespace tailor::compress
