// Edge cases of the ops-nn reference kernels that the ONNX node tests do not reach: error paths
// (mismatched channels, windows that do not fit, bad indices, unsupported dtypes), integer wrap-around,
// storage_order, blocked quantization, NaN coordinates, and inference with symbolic dims.
#include <gtest/gtest.h>

#include "unit/ops/op_test_util.h"

#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::ops {
namespace {

using namespace testing;

OpRun run_op(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}, int opset = 21,
             int num_outputs = 1) {
  return run_node(op, inputs, std::move(attrs), opset, num_outputs);
}

ir::Attribute ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
ir::Attribute int1(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
ir::Attribute str(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}

bool mentions(const Status& s, const std::string& what) { return s.to_string().find(what) != std::string::npos; }

TEST(NnConv, ChannelMismatchAndOversizedKernelAreErrors) {
  Tensor x = Tensor::from_vector<float>(std::vector<float>(2 * 3 * 3), {1, 2, 3, 3});
  Tensor w3 = Tensor::from_vector<float>(std::vector<float>(3 * 3 * 3), {1, 3, 3, 3});
  auto r = run_op("Conv", {x, w3});
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(mentions(r.status, "channels")) << r.status.to_string();
  Tensor wbig = Tensor::from_vector<float>(std::vector<float>(2 * 16), {1, 2, 4, 4});
  r = run_op("Conv", {x, wbig});
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(mentions(r.status, "does not fit")) << r.status.to_string();
  Tensor x4 = Tensor::from_vector<float>(std::vector<float>(16), {1, 1, 2, 2, 2, 2});
  Tensor w4 = Tensor::from_vector<float>(std::vector<float>(16), {1, 1, 2, 2, 2, 2});
  r = run_op("Conv", {x4, w4});
  EXPECT_EQ(r.status.code(), ErrorCode::kNotSupported);
  r = run_op("Conv", {Tensor::from_vector<int32_t>({1, 2, 3}, {1, 1, 3}), Tensor::from_vector<int32_t>({1}, {1, 1, 1})});
  EXPECT_EQ(r.status.code(), ErrorCode::kNotSupported);
}

TEST(NnConv, OneDimensionalGroupedDilated) {
  // Two groups of one channel each; dilation 2, kernel 2: y[c][o] = w0 * x[o] + w1 * x[o + 2].
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 4});
  Tensor w = Tensor::from_vector<float>({1, 10, 2, 3}, {2, 1, 2});
  Tensor b = Tensor::from_vector<float>({0.5f, -1}, {2});
  auto r = run_op("Conv", {x, w, b}, {{"group", int1(2)}, {"dilations", ints({2})}});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  const Tensor& y = r.outputs[0].tensor;
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_FLOAT_EQ(y.data<float>()[0], 0.5f + 1 * 1 + 10 * 3);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 0.5f + 2 + 10 * 4);
  EXPECT_FLOAT_EQ(y.data<float>()[2], -1 + 2 * 10 + 3 * 30);
  EXPECT_FLOAT_EQ(y.data<float>()[3], -1 + 2 * 20 + 3 * 40);
}

TEST(NnConv, SameLowerPutsTheExtraPadFirst) {
  // Kernel 2 on length 3 needs one pad: SAME_UPPER pads the end, SAME_LOWER the start.
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 1, 3});
  Tensor w = Tensor::from_vector<float>({1, 100}, {1, 1, 2});
  auto up = run_op("Conv", {x, w}, {{"auto_pad", str("SAME_UPPER")}});
  auto lo = run_op("Conv", {x, w}, {{"auto_pad", str("SAME_LOWER")}});
  ASSERT_TRUE(up.status.ok() && lo.status.ok());
  EXPECT_FLOAT_EQ(up.outputs[0].tensor.data<float>()[2], 3);    // 3*1 + pad*100
  EXPECT_FLOAT_EQ(lo.outputs[0].tensor.data<float>()[0], 100);  // pad*1 + 1*100
}

TEST(NnConv, AbsurdPadsAreRejected) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 1, 3});
  Tensor w = Tensor::from_vector<float>({1}, {1, 1, 1});
  auto r = run_op("Conv", {x, w}, {{"pads", ints({int64_t{1} << 40, 0})}});
  EXPECT_FALSE(r.status.ok());
  r = run_op("ConvTranspose", {x, w}, {{"strides", ints({int64_t{1} << 40})}});
  EXPECT_FALSE(r.status.ok());
}

TEST(NnMatMul, IntegerWrapsAndOneDimensionalOperands) {
  const int32_t mx = std::numeric_limits<int32_t>::max();
  auto r = run_op("MatMul", {Tensor::from_vector<int32_t>({mx, 1}), Tensor::from_vector<int32_t>({1, 1})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outputs[0].tensor.rank(), 0);
  EXPECT_EQ(r.outputs[0].tensor.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  r = run_op("MatMul", {Tensor::from_vector<float>({1, 2, 3}), Tensor::from_vector<float>({1, 2}, {2, 1})});
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(mentions(r.status, "inner dims")) << r.status.to_string();
}

TEST(NnGemm, BadBiasShapeIsAnError) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  auto r = run_op("Gemm", {a, a, Tensor::from_vector<float>({1, 2, 3}, {3})});
  EXPECT_FALSE(r.status.ok());
  r = run_op("Gemm", {Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2}), Tensor::from_vector<int64_t>({1, 0, 0, 1}, {2, 2}),
                      Tensor::from_vector<int64_t>({10}, {1})},
             {{"transA", int1(1)}});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outputs[0].tensor.data<int64_t>()[1], 13);  // A^T[0][1] = 3, + 10
}

TEST(NnQuantize, UnsupportedTypesAndBadScalesAreClearErrors) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  auto r = run_op("QuantizeLinear", {x, Tensor::scalar<float>(1.0f)}, {{"output_dtype", int1(17)}});
  EXPECT_EQ(r.status.code(), ErrorCode::kNotSupported);
  EXPECT_TRUE(mentions(r.status, "float8")) << r.status.to_string();
  r = run_op("QuantizeLinear", {x, Tensor::from_vector<float>({1, 2, 3})});
  EXPECT_FALSE(r.status.ok());
}

TEST(NnQuantize, BlockedQuantizationUsesOneScalePerBlock) {
  // Blocks of 2 along axis 1: columns {0,1} use scale 1, columns {2} use scale 10.
  Tensor x = Tensor::from_vector<float>({1, 2, 30, 4, 5, 60}, {2, 3});
  Tensor s = Tensor::from_vector<float>({1, 10, 2, 20}, {2, 2});
  Tensor zp = Tensor::from_vector<int8_t>({0, 0, 0, 1}, {2, 2});
  auto r = run_op("QuantizeLinear", {x, s, zp}, {{"axis", int1(1)}, {"block_size", int1(2)}});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  const int8_t* q = r.outputs[0].tensor.data<int8_t>();
  EXPECT_EQ(q[0], 1);
  EXPECT_EQ(q[2], 3);
  EXPECT_EQ(q[3], 2);  // 4 / 2
  EXPECT_EQ(q[5], 4);  // 60 / 20 + 1
  auto d = run_op("DequantizeLinear", {r.outputs[0].tensor, s, zp}, {{"axis", int1(1)}, {"block_size", int1(2)}});
  ASSERT_TRUE(d.status.ok()) << d.status.to_string();
  EXPECT_FLOAT_EQ(d.outputs[0].tensor.data<float>()[5], 60);
}

TEST(NnPool, MaxPoolColumnMajorIndices) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3});  // max 6 at (1, 2)
  auto r = run_op("MaxPool", {x}, {{"kernel_shape", ints({2, 3})}, {"storage_order", int1(1)}}, 12, 2);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_FLOAT_EQ(r.outputs[0].tensor.data<float>()[0], 6);
  EXPECT_EQ(r.outputs[1].tensor.data<int64_t>()[0], 1 + 2 * 2);  // h + w * H
  auto bad = run_op("MaxPool", {x}, {{"kernel_shape", ints({2})}});
  EXPECT_FALSE(bad.status.ok());
}

TEST(NnPool, MaxUnpoolRejectsOutOfRangeIndices) {
  Tensor x = Tensor::from_vector<float>({1}, {1, 1, 1, 1});
  Tensor i = Tensor::from_vector<int64_t>({4}, {1, 1, 1, 1});
  auto r = run_op("MaxUnpool", {x, i}, {{"kernel_shape", ints({2, 2})}}, 11);
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(mentions(r.status, "index 4")) << r.status.to_string();
}

TEST(NnRoiAlign, BadBatchIndexAndNanRoisDoNotCrash) {
  Tensor x = Tensor::from_vector<float>(std::vector<float>(16, 1.0f), {1, 1, 4, 4});
  Tensor rois = Tensor::from_vector<float>({0, 0, 2, 2}, {1, 4});
  auto r = run_op("RoiAlign", {x, rois, Tensor::from_vector<int64_t>({3}, {1})}, {}, 16);
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(mentions(r.status, "batch index 3")) << r.status.to_string();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor nan_rois = Tensor::from_vector<float>({nan, 0, 2, nan}, {1, 4});
  r = run_op("RoiAlign", {x, nan_rois, Tensor::from_vector<int64_t>({0}, {1})}, {{"sampling_ratio", int1(2)}}, 16);
  EXPECT_TRUE(r.status.ok()) << r.status.to_string();
}

TEST(NnSampling, NanCoordinatesDoNotCrash) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor grid = Tensor::from_vector<float>({nan, 0, 1e30f, -1e30f}, {1, 1, 2, 2});
  for (const char* pad : {"zeros", "border", "reflection"})
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      auto r = run_op("GridSample", {x, grid}, {{"mode", str(mode)}, {"padding_mode", str(pad)}}, 20);
      EXPECT_TRUE(r.status.ok()) << mode << " " << pad << ": " << r.status.to_string();
    }
  Tensor roi = Tensor::from_vector<float>({0, 0, nan, 0, 1, 1, 1, 1});
  auto r = run_op("Resize", {x, roi, Tensor::from_vector<float>({1, 1, 2, 2})},
                  {{"coordinate_transformation_mode", str("tf_crop_and_resize")}, {"mode", str("linear")}}, 19);
  EXPECT_TRUE(r.status.ok()) << r.status.to_string();
  r = run_op("Resize", {x, Tensor(), Tensor::from_vector<float>({1, 1, 2, 2})}, {{"mode", str("bogus")}}, 19);
  EXPECT_FALSE(r.status.ok());
}

TEST(NnNms, ShapesAreChecked) {
  Tensor boxes = Tensor::from_vector<float>({0, 0, 1, 1, 0, 0, 1, 1}, {1, 2, 4});
  Tensor scores = Tensor::from_vector<float>({0.9f, 0.8f}, {1, 1, 2});
  auto r = run_op("NonMaxSuppression", {boxes, scores, Tensor::from_vector<int64_t>({5}, {1})}, {}, 11);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outputs[0].tensor.dims(), (std::vector<int64_t>{1, 3}));  // the identical box is suppressed
  r = run_op("NonMaxSuppression", {boxes, Tensor::from_vector<float>({0.9f}, {1, 1, 1})}, {}, 11);
  EXPECT_FALSE(r.status.ok());
}

TEST(NnInfer, ConvKeepsSymbolicBatch) {
  ir::Graph g;
  ir::Node* n = g.add_node("Conv", "c");
  n->opset = 17;
  ir::Value* x = g.add_value("x");
  x->dtype = DType::kFloat32;
  x->shape = Shape{Dim::symbolic("N"), Dim(3), Dim(224), Dim(224)};
  ir::Value* w = g.add_value("w");
  w->initializer = Tensor(DType::kFloat32, {64, 3, 7, 7});
  w->dtype = DType::kFloat32;
  w->shape = to_shape({64, 3, 7, 7});
  n->inputs = {x, w};
  n->outputs = {g.add_value("y")};
  n->attrs = {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}};
  InferContext ctx(*n);
  ASSERT_TRUE(OpRegistry::global().find("", "Conv", 17)->infer(ctx).ok());
  ASSERT_TRUE(n->outputs[0]->shape.has_value());
  EXPECT_EQ(shape_to_string(*n->outputs[0]->shape), "[N,64,112,112]");
}

}  // namespace
}  // namespace ferry::ops
