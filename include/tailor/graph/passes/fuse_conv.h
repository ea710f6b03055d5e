// Fuses what follows a convolution into it: per-channel or scalar affine
// (Mul, Add by constants) into the weights and bias, then one activation into
// the kernel's epilogue.
#pragma once

#include "tailor/graph/graph.h"

namespace tailor::graph {

/// Rewrites, in the main graph (not subgraphs),
///
///   Conv(x, W, b?) ─► Mul(·, s) ─► Add(·, t) ─► act ─►      FusedConv(x, s·W, s·b + t){act}
///
/// (an inference BatchNormalization with constant parameters counts as one
/// such affine step: s = scale/sqrt(var + ε), t = B − mean·s),
/// where s, t are constants (initializers or Constant outputs) holding one
/// value or one per output channel ([C], [C,1,1], [1,C,1,1]), W and b are
/// constants, every intermediate has exactly one consumer (the HardSwish
/// pattern excepted) and is not a graph output, and `act` is one of Relu,
/// Sigmoid, HardSigmoid, HardSwish, Clip with constant bounds, LeakyRelu, or
/// the decomposition x·Clip(x + 3, 0, 6)/6 some exporters emit for HardSwish.
/// Any number of Mul/Add steps (including none) precede the activation.
/// The fused node is op "FusedConv" in domain "ai.tailor": the Conv's
/// attributes plus `activation` (relu, sigmoid, hard_sigmoid, hard_swish,
/// clip, leaky_relu or none) and floats `alpha`, `beta` (the kernels'
/// Activation parameters); it produces the last fused node's output name, so
/// consumers are untouched. A Conv with nothing to fuse is left as is. New
/// weights are owned copies; the original constants stay when other nodes
/// use them. Returns the number of nodes removed. The model computes the same
/// outputs up to f32 rounding (weights scaled before rather than after the sum).
int fuse_conv_epilogues(Model& model);

}  // namespace tailor::graph
