// Edge cases of the ops-reduce reference kernels that the ONNX node tests do not reach: integer wrap,
// NaN handling, empty reductions, noop axes, TopK tie order, Einsum diagonals and implicit output, and
// shape inference with constant axes. Wider coverage against the ONNX reference: tests/ops/gen_reduce_cases.py.
#include <gtest/gtest.h>

#include "unit/ops/op_test_util.h"

#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::ops {
namespace {

using namespace testing;

OpRun run_op(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}, int opset = 18,
             int num_outputs = 1) {
  return run_node(op, inputs, std::move(attrs), opset, num_outputs);
}

Tensor axes(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v); }

TEST(Reduce, IntegerSumAndProductWrap) {
  auto sum = run_op("ReduceSum", {Tensor::from_vector<int8_t>({100, 100, 100}), axes({0})});
  ASSERT_TRUE(sum.status.ok()) << sum.status.to_string();
  EXPECT_EQ(sum.outputs[0].tensor.data<int8_t>()[0], static_cast<int8_t>(44));  // 300 mod 256
  auto prod = run_op("ReduceProd", {Tensor::from_vector<int64_t>({int64_t{1} << 62, 4}), axes({0})});
  ASSERT_TRUE(prod.status.ok());
  EXPECT_EQ(prod.outputs[0].tensor.data<int64_t>()[0], 0);
}

TEST(Reduce, MaxPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto r = run_op("ReduceMax", {Tensor::from_vector<float>({1, nan, 3}), axes({0})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(std::isnan(r.outputs[0].tensor.data<float>()[0]));
}

TEST(Reduce, EmptySetGivesIdentity) {
  Tensor empty(DType::kFloat32, {2, 0});
  auto mn = run_op("ReduceMin", {empty, axes({1})});
  ASSERT_TRUE(mn.status.ok());
  EXPECT_EQ(mn.outputs[0].tensor.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(mn.outputs[0].tensor.data<float>()[0], std::numeric_limits<float>::infinity());
  auto lse = run_op("ReduceLogSumExp", {empty, axes({1})});
  ASSERT_TRUE(lse.status.ok());
  EXPECT_EQ(lse.outputs[0].tensor.data<float>()[1], -std::numeric_limits<float>::infinity());
  auto imax = run_op("ReduceMax", {Tensor(DType::kInt16, {0}), axes({0})});
  ASSERT_TRUE(imax.status.ok());
  EXPECT_EQ(imax.outputs[0].tensor.data<int16_t>()[0], std::numeric_limits<int16_t>::min());
}

TEST(Reduce, NoopWithEmptyAxesStillMapsElements) {
  auto r = run_op("ReduceL1", {Tensor::from_vector<float>({-2, 3}, {2}), axes({})},
                  {{"noop_with_empty_axes", int_attr(1)}});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outputs[0].tensor.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(r.outputs[0].tensor.data<float>()[0], 2.0f);
}

TEST(Reduce, AttributeAxesBeforeOpset18) {
  ir::Attribute ax;
  ax.kind = ir::Attribute::Kind::kInts;
  ax.ints = {1};
  auto r = run_op("ReduceMean", {Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2})}, {{"axes", ax}, {"keepdims", int_attr(0)}},
                  13);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outputs[0].tensor.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(r.outputs[0].tensor.data<float>()[1], 3.5f);
}

TEST(Reduce, InferenceUsesConstantAxes) {
  ir::Graph g;
  ir::Node* n = g.add_node("ReduceSum", "n0");
  n->opset = 13;
  ir::Value* x = g.add_value("x");
  x->dtype = DType::kFloat32;
  x->shape = Shape{Dim::symbolic("batch"), Dim(3), Dim(4)};
  ir::Value* a = g.add_value("axes");
  a->dtype = DType::kInt64;
  a->initializer = axes({-1});
  n->inputs = {x, a};
  n->outputs = {g.add_value("y")};
  n->attrs["keepdims"] = int_attr(0);
  InferContext ctx(*n);
  const OpSchema* s = OpRegistry::global().find("", "ReduceSum", 13);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->infer(ctx).ok());
  ASSERT_TRUE(n->outputs[0]->shape.has_value());
  EXPECT_EQ(shape_to_string(*n->outputs[0]->shape), "[batch,3]");
  EXPECT_EQ(n->outputs[0]->dtype, DType::kFloat32);
}

TEST(ArgMax, NaNWinsAndSelectLastIndex) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto r = run_op("ArgMax", {Tensor::from_vector<float>({1, nan, 5, nan})}, {}, 13);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outputs[0].tensor.data<int64_t>()[0], 1);
  auto last = run_op("ArgMin", {Tensor::from_vector<int32_t>({2, 1, 1, 3})}, {{"select_last_index", int_attr(1)}}, 13);
  ASSERT_TRUE(last.status.ok());
  EXPECT_EQ(last.outputs[0].tensor.data<int64_t>()[0], 2);
}

TEST(TopK, TiesKeepLowerIndexFirst) {
  auto r = run_op("TopK", {Tensor::from_vector<float>({1, 3, 3, 2, 3}), axes({2})}, {}, 11, 2);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  const int64_t* idx = r.outputs[1].tensor.data<int64_t>();
  EXPECT_EQ(idx[0], 1);
  EXPECT_EQ(idx[1], 2);
  auto small = run_op("TopK", {Tensor::from_vector<float>({1, 3, 1, 2}), axes({2})}, {{"largest", int_attr(0)}}, 11, 2);
  ASSERT_TRUE(small.status.ok());
  EXPECT_EQ(small.outputs[1].tensor.data<int64_t>()[0], 0);
  EXPECT_EQ(small.outputs[1].tensor.data<int64_t>()[1], 2);
  auto bad = run_op("TopK", {Tensor::from_vector<float>({1, 2}), axes({3})}, {}, 11, 2);
  EXPECT_FALSE(bad.status.ok());
}

TEST(Einsum, DiagonalTraceAndImplicitOutput) {
  Tensor m = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  auto trace = run_op("Einsum", {m}, {{"equation", string_attr("ii")}}, 12);
  ASSERT_TRUE(trace.status.ok()) << trace.status.to_string();
  EXPECT_EQ(trace.outputs[0].tensor.rank(), 0);
  EXPECT_EQ(trace.outputs[0].tensor.data<float>()[0], 5.0f);
  auto transposed = run_op("Einsum", {m}, {{"equation", string_attr("ji")}}, 12);  // implicit output "ij"
  ASSERT_TRUE(transposed.status.ok());
  EXPECT_EQ(transposed.outputs[0].tensor.data<float>()[1], 3.0f);
  auto bad = run_op("Einsum", {m, m}, {{"equation", string_attr("ij->i")}}, 12);
  EXPECT_FALSE(bad.status.ok());
}

TEST(Losses, IgnoredTargetsLeaveTheMean) {
  // log-probabilities [N=2, C=2]; the second sample is ignored.
  Tensor x = Tensor::from_vector<float>({-1, -2, -3, -4}, {2, 2});
  auto r = run_op("NegativeLogLikelihoodLoss", {x, Tensor::from_vector<int64_t>({1, -5})},
                  {{"ignore_index", int_attr(-5)}, {"reduction", string_attr("mean")}}, 13);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outputs[0].tensor.data<float>()[0], 2.0f);
  auto out_of_range = run_op("NegativeLogLikelihoodLoss", {x, Tensor::from_vector<int64_t>({1, 2})}, {}, 13);
  EXPECT_FALSE(out_of_range.status.ok());
}

TEST(Softmax, Pre13CoercesTo2D) {
  // [1, 2, 2] at axis 1: one row of 4 elements, so all four share one softmax.
  auto r = run_op("Softmax", {Tensor::from_vector<float>({0, 0, 0, 0}, {1, 2, 2})}, {{"axis", int_attr(1)}}, 11);
  ASSERT_TRUE(r.status.ok());
  EXPECT_FLOAT_EQ(r.outputs[0].tensor.data<float>()[3], 0.25f);
  auto r13 = run_op("Softmax", {Tensor::from_vector<float>({0, 0, 0, 0}, {1, 2, 2})}, {{"axis", int_attr(1)}}, 13);
  ASSERT_TRUE(r13.status.ok());
  EXPECT_FLOAT_EQ(r13.outputs[0].tensor.data<float>()[3], 0.5f);
}

}  // namespace
}  // namespace ferry::ops
