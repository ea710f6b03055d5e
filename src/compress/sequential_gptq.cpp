// Sequential GPTQ with the original outputs as its target
// (sequential_gptq.h): the -gptq layers of a plan encoded in schedule order,
// each fitted to reproduce the original model's products from the inputs the
// already compressed layers feed it.
#include "tailor/compress/sequential_gptq.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>

#include "compress/rewrite_util.h"
#include "tailor/compress/output_damage.h"
#include "tailor/compress/output_profile.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/graph/weights.h"
#include "tailor/linalg/threads.h"
#include "tailor/runtime/calibration.h"
#include "tailor/runtime/executor.h"
#include "tailor/schemes/scheme.h"

namespace tailor::compress {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Rows [X̃ | X] of one layer: the compressed run's activation `xt` and the
/// original's `x` side by side, so that one Gram holds X̃ᵀX̃ and X̃ᵀX. A conv
/// input's channels per group: X̃'s, then X's (im2col keeps that order).
Tensor joint(const runtime::LayerInput& l, const Tensor& xt, const Tensor& x) {
  const Tensor a = xt.contiguous(), b = x.contiguous();
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  if (l.kernel.empty()) {
    const int64_t rows = a.numel() / l.in;
    std::vector<float> out(static_cast<size_t>(rows * 2 * l.in));
    for (int64_t r = 0; r < rows; ++r) {
      std::copy(pa + r * l.in, pa + (r + 1) * l.in, out.begin() + r * 2 * l.in);
      std::copy(pb + r * l.in, pb + (r + 1) * l.in, out.begin() + r * 2 * l.in + l.in);
    }
    return Tensor::from_f32({rows, 2 * l.in}, out);
  }
  const int64_t n = a.dim(0), c = a.dim(1), hw = a.dim(2) * a.dim(3), cg = c / l.group;
  std::vector<float> out(static_cast<size_t>(2 * a.numel()));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t g = 0; g < l.group; ++g) {
      const int64_t src = (i * c + g * cg) * hw, dst = (i * 2 * c + g * 2 * cg) * hw;
      std::copy(pa + src, pa + src + cg * hw, out.begin() + dst);
      std::copy(pb + src, pb + src + cg * hw, out.begin() + dst + cg * hw);
    }
  return Tensor::from_f32({n, 2 * c, a.dim(2), a.dim(3)}, out);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw(), cb.raw(), ca.nbytes()) == 0;
}

}  // namespace

Tensor asymmetric_target(const graph::WeightView& w, const schemes::Gram& h,
                         const std::vector<double>& cross, double damp, double alpha) {
  const int64_t in = h.in;
  const Tensor w32 = w.out_in();
  check(
      w32.dim(1) == in && h.h.size() == static_cast<size_t>(in * in) && cross.size() == h.h.size(),
      w.name, "the Grams do not match the weight's inputs");
  const int64_t out = w32.dim(0);
  MatD wt(in, out);  // Wᵀ
  const float* pw = w32.data<float>();
  for (int64_t r = 0; r < out; ++r)
    for (int64_t j = 0; j < in; ++j) wt(j, r) = pw[r * in + j];
  MatD hd = Eigen::Map<const MatD>(h.h.data(), in, in);
  const double mean_diag = hd.diagonal().mean();
  if (!(mean_diag > 0)) return w.tensor.to(DType::f32);  // no rows to fit: W itself
  const MatD delta = (Eigen::Map<const MatD>(cross.data(), in, in) - hd) * wt;
  hd.diagonal().array() += damp * mean_diag;
  const MatD target = wt + alpha * hd.llt().solve(delta);
  std::vector<float> o(static_cast<size_t>(out * in));
  for (int64_t r = 0; r < out; ++r)
    for (int64_t j = 0; j < in; ++j)
      o[static_cast<size_t>(r * in + j)] = static_cast<float>(target(j, r));
  return detail::to_stored(Tensor::from_f32({out, in}, o), w.layout, w.tensor.shape(), DType::f32);
}

std::vector<EncodedLayer> encode_plan_sequential(
    const graph::Model& weights_model, const graph::Model& run_model, const plan::Plan& plan,
    const schemes::SchemeParams& defaults, uint64_t seed, int threads,
    const std::vector<std::map<std::string, Tensor>>& feeds, std::optional<DType> stored_dtype,
    GptqFit fit) {
  plan::Plan rest = plan;
  for (plan::PlanChoice& ch : rest.choices)
    if (reads_gram(ch.label)) ch.label = "dense";  // encoded below
  std::vector<EncodedLayer> done = encode_plan(weights_model, rest, defaults, seed, threads);
  if (stored_dtype)
    for (EncodedLayer& e : done) e.stored_dtype = *stored_dtype;
  const std::set<std::string> gptq = gram_weights(plan);
  if (gptq.empty()) return done;
  if (feeds.empty()) throw Error("calibration", "no calibration inputs for the Grams");

  graph::Model m = run_model;
  graph::promote_f16_to_f32(m);
  std::vector<runtime::LayerInput> readers = runtime::layer_inputs(m);
  std::erase_if(readers, [&](const runtime::LayerInput& l) { return !gptq.count(l.weight); });
  std::map<std::string, DType> run_dtype;
  for (const graph::WeightView& w : graph::weights(m)) run_dtype[w.name] = w.tensor.dtype();
  const runtime::Executor ex(std::move(m));
  // runs: the compressed model so far; orig: the original, for the target.
  std::vector<runtime::CutRun> runs, orig;
  runs.reserve(feeds.size());
  orig.reserve(feeds.size());
  // Per layer, the compressed runs keep the original weights: X̃ = X.
  const bool sequential = fit == GptqFit::sequential;
  for (const auto& feed : feeds) {
    runs.emplace_back(ex, feed);
    if (sequential) orig.emplace_back(ex, feed);
  }
  const size_t workers =
      std::min(static_cast<size_t>(linalg::resolve_threads(threads)), runs.size());
  const std::vector<graph::WeightView> views = graph::weights(weights_model);
  std::map<std::string, size_t> plan_index;
  for (size_t i = 0; i < plan.choices.size(); ++i) plan_index.emplace(plan.choices[i].layer, i);

  // The decoded weights of `layers` in the compressed runs, from the cut on.
  auto put = [&](const std::vector<EncodedLayer>& layers) {
    if (!sequential) return;
    std::map<std::string, Tensor> values;
    for (const EncodedLayer& e : layers)
      if (const auto dt = run_dtype.find(e.name); dt != run_dtype.end())
        values[e.name] =
            detail::to_stored(e.encoded->decode(), e.layout, e.stored_shape, dt->second);
    for (runtime::CutRun& r : runs) r.replace(values);
  };
  put(done);

  // Readers by the step that first reads their activation; a weight is
  // encoded at its last reader's.
  std::map<size_t, std::vector<const runtime::LayerInput*>> at_step;
  std::map<std::string, size_t> last_step;
  for (const runtime::LayerInput& l : readers) {
    const size_t s = runs[0].first_reader(l.value);
    at_step[s].push_back(&l);
    size_t& last = last_step.try_emplace(l.weight, s).first->second;
    last = std::max(last, s);
  }
  // Per weight: [X̃ | X]'s Gram (2·in columns), or X̃ᵀX̃ alone while every
  // input it has seen is the original's (nothing compressed before it).
  struct Pending {
    schemes::Gram gram;
    bool joint = false;
  };
  std::map<std::string, Pending> pending;
  for (const auto& [step, group] : at_step) {
    detail::for_each_input(runs.size(), workers, [&](size_t k) {
      runs[k].advance(step);
      if (sequential) orig[k].advance(step);
    });
    // A value whose compressed and original activations agree bit for bit in
    // every run adds X̃ᵀX̃ (= X̃ᵀX); the others add [X̃ | X].
    std::map<std::string, bool> differs;
    for (const runtime::LayerInput* l : group) {
      bool& d = differs.try_emplace(l->value, false).first->second;
      for (size_t k = 0; k < orig.size() && !d; ++k)
        d = !same_bits(runs[k].value(l->value), orig[k].value(l->value));
    }
    std::vector<runtime::LayerInput> plain, paired;
    for (const runtime::LayerInput* l : group) {
      // A weight read at several steps stays joint once any reader differs.
      const auto p = pending.find(l->weight);
      if (differs.at(l->value) || (p != pending.end() && p->second.joint)) {
        paired.push_back(*l);
        paired.back().in *= 2;
      } else {
        plain.push_back(*l);
      }
    }
    runtime::InputStats plain_stats(plain, true), paired_stats(paired, true);
    for (size_t k = 0; k < runs.size(); ++k) {
      std::map<std::string, Tensor> xp, xj;
      for (const runtime::LayerInput& l : plain) xp.emplace(l.value, runs[k].value(l.value));
      for (const runtime::LayerInput& l : paired)
        if (!xj.count(l.value)) {
          runtime::LayerInput one = l;
          one.in /= 2;
          xj.emplace(l.value, joint(one, runs[k].value(l.value), orig[k].value(l.value)));
        }
      plain_stats.add(xp);
      paired_stats.add(xj);
    }
    auto merge = [&](std::map<std::string, schemes::Gram> grams, bool is_joint) {
      for (auto& [w, g] : grams) {
        Pending& p = pending[w];
        if (p.gram.h.empty()) {
          p = {std::move(g), is_joint};
          continue;
        }
        if (is_joint && !p.joint) {  // earlier rows were X̃ = X: widen them to [X | X]
          const int64_t in = p.gram.in;
          std::vector<double> wide(static_cast<size_t>(4 * in * in));
          for (int64_t i = 0; i < 2 * in; ++i)
            for (int64_t j = 0; j < 2 * in; ++j)
              wide[static_cast<size_t>(i * 2 * in + j)] = p.gram.h[(i % in) * in + (j % in)];
          p.gram = {2 * in, p.gram.rows, std::move(wide)};
          p.joint = true;
        }
        for (size_t i = 0; i < g.h.size(); ++i) p.gram.h[i] += g.h[i];
        p.gram.rows += g.rows;
      }
    };
    merge(plain_stats.take_grams(), false);
    merge(paired_stats.take_grams(), true);

    // The weights whose last reader is here: encoded now, in parallel.
    std::vector<std::string> ready;
    for (const runtime::LayerInput* l : group)
      if (last_step.at(l->weight) == step &&
          std::find(ready.begin(), ready.end(), l->weight) == ready.end())
        ready.push_back(l->weight);
    std::vector<EncodedLayer> now(ready.size());
    detail::for_each_input(ready.size(), std::min(ready.size(), workers), [&](size_t r) {
      const linalg::ThreadLimit serial(1);  // the same bits on any thread count
      const std::string& w = ready[r];
      Pending p = std::move(pending.at(w));
      for (double v : p.gram.h)
        if (!std::isfinite(v))
          throw Error("calibration",
                      fmt::format("layer {}: calibration activations hold NaN or Inf", w));
      const size_t i = plan_index.at(w);
      const graph::WeightView& view = *graph::find_weight(views, w);
      graph::WeightView target = view;
      auto h = std::make_shared<schemes::Gram>();
      if (p.joint) {
        const int64_t in = p.gram.in / 2;
        *h = {in, p.gram.rows, std::vector<double>(static_cast<size_t>(in * in))};
        std::vector<double> cross(h->h.size());
        for (int64_t a = 0; a < in; ++a)
          for (int64_t b = 0; b < in; ++b) {
            h->h[static_cast<size_t>(a * in + b)] = p.gram.h[static_cast<size_t>(a * 2 * in + b)];
            cross[static_cast<size_t>(a * in + b)] =
                p.gram.h[static_cast<size_t>(a * 2 * in + in + b)];  // (X̃ᵀX)_ab
          }
        target.tensor = asymmetric_target(view, *h, cross, defaults.damp, kAsymmetricAlpha);
      } else {
        *h = std::move(p.gram);
      }
      schemes::SchemeParams params = defaults;
      params.gram = h;
      EncodedLayer e = encode_layer(target, plan.choices[i].label, params, seed, i);
      const Tensor wv = view.out_in();
      e.rel_error = schemes::rel_error(
          view.layout == WeightLayout::conv ? wv.reshape(view.tensor.shape()) : wv, *e.encoded);
      e.stored_dtype = stored_dtype ? *stored_dtype : view.tensor.dtype();
      now[r] = std::move(e);
    });
    for (const std::string& w : ready) pending.erase(w);
    put(now);
    for (EncodedLayer& e : now) done.push_back(std::move(e));
  }
  // A -gptq weight no reader multiplies: encode_plan's error for a missing Gram.
  plan::Plan unread = plan;
  for (plan::PlanChoice& ch : unread.choices)
    if (!gptq.count(ch.layer) || last_step.count(ch.layer)) ch.label = "dense";
  for (EncodedLayer& e : encode_plan(weights_model, unread, defaults, seed, threads))
    done.push_back(std::move(e));

  std::stable_sort(done.begin(), done.end(), [&](const EncodedLayer& a, const EncodedLayer& b) {
    return plan_index.at(a.name) < plan_index.at(b.name);
  });
  return done;
}

const char* gptq_fit_name(GptqFit fit) {
  return fit == GptqFit::sequential ? "sequential" : "per layer";
}

}  // namespace tailor::compress
