// The one ONNX TensorProto.DataType table, against the codes of onnx.proto
// (as libonnx's generated enum numbers them).
#include "tailor/core/onnx_dtype.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

namespace tailor {
namespace {

TEST(OnnxDType, CodesMatchOnnxProto) {
  using TP = onnx::TensorProto;
  const std::pair<int, DType> pairs[] = {
      {TP::FLOAT, DType::f32},  {TP::FLOAT16, DType::f16}, {TP::BFLOAT16, DType::bf16},
      {TP::DOUBLE, DType::f64}, {TP::INT8, DType::i8},     {TP::UINT8, DType::u8},
      {TP::INT16, DType::i16},  {TP::UINT16, DType::u16},  {TP::INT32, DType::i32},
      {TP::INT64, DType::i64},  {TP::BOOL, DType::boolean}};
  for (const auto& [code, dt] : pairs) {
    EXPECT_EQ(dtype_of_onnx(code), dt) << code;
    EXPECT_EQ(onnx_of_dtype(dt), code) << dtype_name(dt);
  }
  for (int code :
       {TP::UNDEFINED, TP::STRING, TP::UINT32, TP::UINT64, TP::COMPLEX64, TP::COMPLEX128})
    EXPECT_EQ(dtype_of_onnx(code), std::nullopt) << code;
  EXPECT_EQ(dtype_of_onnx(-1), std::nullopt);
  EXPECT_EQ(dtype_of_onnx(1000), std::nullopt);
  EXPECT_EQ(onnx_type_name(TP::FLOAT16), "FLOAT16");
  EXPECT_EQ(onnx_type_name(TP::STRING), "STRING");
  EXPECT_EQ(onnx_type_name(19), "FLOAT8E5M2");
  EXPECT_EQ(onnx_type_name(23), "FLOAT4E2M1");
  EXPECT_EQ(onnx_type_name(24), "unknown");
}

}  // namespace
}  // namespace tailor
