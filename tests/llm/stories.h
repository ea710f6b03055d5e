// stories260K (tests/fixtures, README) as a decoder graph, for the llm, io and
// compress tests: the fixed token sequence of tests/llm/reference_logits.py,
// logits through the executor, and a plan's labels encoded for the rewrites.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tailor/compress/rewrite.h"
#include "tailor/io/llama_graph.h"
#include "tailor/llm/llama.h"
#include "tailor/schemes/registry.h"
#include "test_util.h"

namespace tailor::testing {

inline std::string stories_path() {
  return fixture_path("stories260K.bin");
}

// The token sequence of tests/llm/reference_logits.py (stories260K_logits.npy):
// BOS + "Once upon a time" and more, any in-vocabulary tokens test the arithmetic.
inline const std::vector<int32_t> kStoriesTokens = {1, 403, 407, 261, 378, 11, 300,
                                                    7, 88,  500, 2,   261, 42, 299};

inline Tensor ids_tensor(const std::vector<int32_t>& tokens) {
  Tensor t = Tensor::zeros(DType::i64, {1, static_cast<int64_t>(tokens.size())});
  std::copy(tokens.begin(), tokens.end(), t.mutable_data<int64_t>());
  return t;
}

/// Next-token logits [n, vocab] of `tokens` in one step from empty caches.
inline std::vector<float> logits_of(const graph::Model& m, const std::vector<int32_t>& tokens) {
  llm::Decoder d(m);
  return d.forward(tokens);
}

/// max |a − b| / max |a|.
inline double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num = std::max(num, std::fabs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::fabs(static_cast<double>(a[i])));
  }
  return num / den;
}

/// The weight `name` of `m` as an f32 [out, in] tensor.
inline const Tensor& weight_of(const graph::Model& m, const std::string& name) {
  return m.graph.initializers.at(name);
}

/// Each weight of `labels` (name → scheme label; "dense" left out) encoded
/// from `m`'s initializer [out, in] as compress's encode_plan does, ready for
/// rewrite_standard / rewrite_tailor.
inline std::vector<compress::EncodedLayer> encode_labels(
    const graph::Model& m, const std::map<std::string, std::string>& labels) {
  std::vector<compress::EncodedLayer> layers;
  for (const auto& [name, label] : labels) {
    if (label == "dense") continue;
    const Tensor& w = weight_of(m, name);
    compress::EncodedLayer e;
    e.name = name;
    e.layout = WeightLayout::out_in;
    e.stored_shape = w.shape();
    e.stored_dtype = DType::f32;
    e.encoded = schemes::parse_scheme(label).encode(w);
    layers.push_back(std::move(e));
  }
  return layers;
}

/// `m` with every encoded layer's weight replaced by its decoded form, a dense
/// f32 initializer: the reference a compressed rewrite must compute.
inline graph::Model with_decoded(const graph::Model& m,
                                 const std::vector<compress::EncodedLayer>& layers) {
  graph::Model r = m;
  for (const compress::EncodedLayer& l : layers)
    r.graph.add_initializer(l.name, l.encoded->decode().contiguous().clone());
  return r;
}

}  // namespace tailor::testing
