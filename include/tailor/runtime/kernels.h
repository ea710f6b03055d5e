// The CPU compute kernels of the runtime: raw-pointer, f32, NCHW, one free
// function per ONNX operator family with an explicit shape/attribute struct
// (the operators), each calling the micro-kernels that registry.h picks for
// the CPU (f32_conv_gemm_6x16_avx2, f32_maxpool_ref, ...).
// Kernels validate their parameters and throw tailor::Error without a source;
// the executor wraps calls in attribute_errors(node_name, ...) so the message
// names the node. Threading is OpenMP over fixed work partitions (OpenBLAS
// made serial by linalg::set_threads); every output element is computed by one
// thread in a fixed order, so results do not depend on the thread count.
#pragma once

#include "tailor/runtime/kernels/conv.h"
#include "tailor/runtime/kernels/elementwise.h"
#include "tailor/runtime/kernels/gemm.h"
#include "tailor/runtime/kernels/lstm.h"
#include "tailor/runtime/kernels/pool.h"
#include "tailor/runtime/kernels/registry.h"
#include "tailor/runtime/kernels/resize.h"
