// Shared by the output-damage tests: the classifier they run, its inputs, and
// a model with one weight replaced by its decoded stored form.
#pragma once

#include <cmath>
#include <string>

#include "tailor/compress/compress.h"
#include "tailor/compress/rewrite.h"
#include "tailor/core/tensor.h"
#include "tailor/graph/graph.h"
#include "tailor/graph/weights.h"
#include "test_util.h"

namespace tailor::testing {

/// PP-OCR's text-direction classifier: input [1, 3, 48, 192], a Softmax of
/// two classes.
inline const std::string kCls = model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");

/// A smooth [1, 3, 48, 192] input, different for each k.
inline Tensor wavy(int k) {
  Tensor x = Tensor::zeros(DType::f32, {1, 3, 48, 192});
  float* p = x.mutable_data<float>();
  for (int64_t i = 0; i < x.numel(); ++i)
    p[i] = std::sin(0.002f * static_cast<float>(i) * static_cast<float>(k + 1));
  return x;
}

/// compress on the classifier into dir/out, no cache, 2 threads, dense/int8/int4.
inline compress::CompressOptions cls_options(const TempDir& dir) {
  compress::CompressOptions o;
  o.model = kCls;
  o.out_dir = dir.file("out");
  o.cache = false;
  o.threads = 2;
  o.schemes = {"dense", "int8", "int4"};
  return o;
}

/// Replaces weight `w` of `m` (an initializer or a Constant node's value) by
/// `e`'s decoded stored factors in w's own shape and layout.
inline void with_decoded_weight(graph::Model& m, const graph::WeightView& w,
                                const compress::EncodedLayer& e) {
  Tensor dec = e.encoded->decode().contiguous();
  if (w.layout == WeightLayout::in_out) dec = dec.transpose(0, 1).contiguous();
  dec = dec.reshape(w.tensor.shape());
  if (auto it = m.graph.initializers.find(w.name); it != m.graph.initializers.end()) {
    it->second = dec;
    return;
  }
  for (graph::Node& node : m.graph.nodes)  // a Constant node's value
    if (node.op_type == "Constant" && node.outputs.at(0) == w.name)
      node.set("value", graph::Attribute::of_tensor(dec));
}

}  // namespace tailor::testing
