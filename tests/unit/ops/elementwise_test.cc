// Edge cases of the elementwise reference kernels that the ONNX node tests do not reach: integer
// overflow and division by zero, float -> int casts of NaN and out-of-range values, correctly
// rounded double -> float16, and the errors for unsupported types.
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

TEST(Elementwise, IntegerArithmeticWraps) {
  const int32_t mn = std::numeric_limits<int32_t>::min(), mx = std::numeric_limits<int32_t>::max();
  auto add = run_op("Add", {Tensor::from_vector<int32_t>({mx}), Tensor::from_vector<int32_t>({1})});
  ASSERT_TRUE(add.status.ok()) << add.status.to_string();
  EXPECT_EQ(add.outputs[0].tensor.data<int32_t>()[0], mn);
  auto div = run_op("Div", {Tensor::from_vector<int32_t>({mn, -7}), Tensor::from_vector<int32_t>({-1, 2})});
  ASSERT_TRUE(div.status.ok()) << div.status.to_string();
  EXPECT_EQ(div.outputs[0].tensor.data<int32_t>()[0], mn);
  EXPECT_EQ(div.outputs[0].tensor.data<int32_t>()[1], -3);  // truncates toward zero
  auto abs = run_op("Abs", {Tensor::from_vector<int8_t>({-128, -5})});
  ASSERT_TRUE(abs.status.ok());
  EXPECT_EQ(abs.outputs[0].tensor.data<int8_t>()[1], 5);
  auto mul = run_op("Mul", {Tensor::from_vector<uint16_t>({65535}), Tensor::from_vector<uint16_t>({65535})});
  ASSERT_TRUE(mul.status.ok());
  EXPECT_EQ(mul.outputs[0].tensor.data<uint16_t>()[0], 1);
}

TEST(Elementwise, IntegerDivisionByZeroIsAnError) {
  auto div = run_op("Div", {Tensor::from_vector<int64_t>({1, 2}), Tensor::from_vector<int64_t>({1, 0})});
  EXPECT_FALSE(div.status.ok());
  EXPECT_NE(div.status.message().find("division by zero"), std::string::npos);
  auto mod = run_op("Mod", {Tensor::from_vector<uint8_t>({3}), Tensor::from_vector<uint8_t>({0})});
  EXPECT_FALSE(mod.status.ok());
}

TEST(Elementwise, ModSignFollowsDivisorUnlessFmod) {
  auto m = run_op("Mod", {Tensor::from_vector<int32_t>({-7, 7}), Tensor::from_vector<int32_t>({3, -3})});
  ASSERT_TRUE(m.status.ok());
  EXPECT_EQ(m.outputs[0].tensor.data<int32_t>()[0], 2);
  EXPECT_EQ(m.outputs[0].tensor.data<int32_t>()[1], -2);
  auto f = run_op("Mod", {Tensor::from_vector<int32_t>({-7, 7}), Tensor::from_vector<int32_t>({3, -3})},
                  {{"fmod", int_attr(1)}});
  ASSERT_TRUE(f.status.ok());
  EXPECT_EQ(f.outputs[0].tensor.data<int32_t>()[0], -1);
  EXPECT_EQ(f.outputs[0].tensor.data<int32_t>()[1], 1);
}

TEST(Elementwise, CastFloatToIntIsDefinedEverywhere) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto c = run_op("Cast", {Tensor::from_vector<float>({nan, inf, -inf, -1.0f, 300.0f, -2.7f})},
                  {{"to", int_attr(2)}});  // UINT8
  ASSERT_TRUE(c.status.ok()) << c.status.to_string();
  const uint8_t* p = c.outputs[0].tensor.data<uint8_t>();
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[1], 255);
  EXPECT_EQ(p[2], 0);
  EXPECT_EQ(p[3], 255);  // wraps like numpy on x86
  EXPECT_EQ(p[4], 44);
  EXPECT_EQ(p[5], 254);
  auto i = run_op("Cast", {Tensor::from_vector<double>({1e30, -3.9})}, {{"to", int_attr(7)}});  // INT64
  ASSERT_TRUE(i.status.ok());
  EXPECT_EQ(i.outputs[0].tensor.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i.outputs[0].tensor.data<int64_t>()[1], -3);
}

TEST(Elementwise, CastDoubleToFloat16RoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint of two float16 values: it must round up. Going
  // through float first lands exactly on the midpoint and rounds to even (down).
  const double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  auto c = run_op("Cast", {Tensor::from_vector<double>({v})}, {{"to", int_attr(10)}});  // FLOAT16
  ASSERT_TRUE(c.status.ok());
  EXPECT_EQ(static_cast<float>(c.outputs[0].tensor.data<float16>()[0]), 1.0f + std::ldexp(1.0f, -10));
}

TEST(Elementwise, UnsupportedTypesAreClearErrors) {
  auto c = run_op("Cast", {Tensor::from_vector<float>({1.0f})}, {{"to", int_attr(17)}});
  EXPECT_FALSE(c.status.ok());
  EXPECT_NE(c.status.message().find("float8e4m3fn"), std::string::npos);
  auto s = run_op("Sqrt", {Tensor::from_vector<int32_t>({4})});
  EXPECT_FALSE(s.status.ok());
  EXPECT_NE(s.status.message().find("int32"), std::string::npos);
  auto mixed = run_op("Add", {Tensor::from_vector<float>({1.0f}), Tensor::from_vector<double>({1.0})});
  EXPECT_FALSE(mixed.status.ok());
  auto shape = run_op("Add", {Tensor::from_vector<float>({1, 2, 3}), Tensor::from_vector<float>({1, 2})});
  EXPECT_FALSE(shape.status.ok());
}

TEST(Elementwise, ClipBoundsAndWhereBroadcast) {
  auto c = run_op("Clip", {Tensor::from_vector<int8_t>({-100, 0, 100}), Tensor::scalar<int8_t>(-5),
                           Tensor::scalar<int8_t>(5)});
  ASSERT_TRUE(c.status.ok()) << c.status.to_string();
  EXPECT_EQ(c.outputs[0].tensor.data<int8_t>()[0], -5);
  EXPECT_EQ(c.outputs[0].tensor.data<int8_t>()[2], 5);
  auto bad = run_op("Clip", {Tensor::from_vector<float>({1}), Tensor::from_vector<float>({0, 1})});
  EXPECT_FALSE(bad.status.ok());
  Tensor cond = Tensor::from_vector<bool>({true, false}, {2, 1});
  auto w = run_op("Where", {cond, Tensor::from_vector<int64_t>({1, 2, 3}), Tensor::scalar<int64_t>(0)});
  ASSERT_TRUE(w.status.ok()) << w.status.to_string();
  EXPECT_EQ(w.outputs[0].tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.outputs[0].tensor.data<int64_t>()[2], 3);
  EXPECT_EQ(w.outputs[0].tensor.data<int64_t>()[3], 0);
}

}  // namespace
}  // namespace ferry::ops
