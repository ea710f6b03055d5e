#include "tailor/io/model.h"

#include "tailor/core/error.h"

namespace tailor {

const char* layout_name(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::out_in:
      return "out_in";
    case WeightLayout::in_out:
      return "in_out";
    case WeightLayout::conv:
      return "conv";
    case WeightLayout::conv_transpose:
      return "conv_transpose";
    case WeightLayout::none:
      return "none";
  }
  return "none";
}

Shape Weight::out_in_shape() const {
  const Shape& s = tensor.shape();
  if (layout == WeightLayout::none || s.size() < 2) return {};
  int64_t rest = 1;
  for (size_t i = 2; i < s.size(); ++i) rest *= s[i];
  switch (layout) {
    case WeightLayout::in_out:
      return {s[1], s[0] * rest};
    case WeightLayout::conv_transpose:
      return {s[1], s[0] * rest};
    default:
      return {s[0], s[1] * rest};
  }
}

Tensor Weight::out_in() const {
  const Shape view = out_in_shape();
  if (view.empty()) throw Error(name, "weight has no [out, in] view (layout none)");
  Tensor t = tensor;
  if (layout == WeightLayout::in_out || layout == WeightLayout::conv_transpose)
    t = t.transpose(0, 1);
  return t.to(DType::f32).reshape(view);
}

const Weight* ModelFile::find(const std::string& n) const {
  for (const Weight& w : weights)
    if (w.name == n) return &w;
  return nullptr;
}

}  // namespace tailor
