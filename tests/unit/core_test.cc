#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"

namespace ferry {

TEST(Status, ContextChainsOutermostFirst) {
  Status s = Status::invalid("bad kernel_shape");
  s.with_context("while importing node 'Conv_12'").with_context("model.onnx");
  EXPECT_EQ(s.to_string(), "model.onnx: while importing node 'Conv_12': bad kernel_shape");
}

TEST(Float16, RoundTripsAndRounds) {
  EXPECT_EQ(float(float16(1.0f)), 1.0f);
  EXPECT_EQ(float(float16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(float(float16(70000.0f))));
  EXPECT_EQ(float(float16(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(float(bfloat16(1.0f)), 1.0f);
}

TEST(Tensor, AbsurdShapeIsAnError) {
  auto r = Tensor::create(DType::kFloat32, {int64_t{1} << 20, int64_t{1} << 20});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("limit"), std::string::npos);
}

TEST(Shape, EmptyShapeWithHugeDimsIsAnError) {
  // Found by the npy fuzzer: a 0 dim made the count 0, and the tensor then multiplied the other dims
  // in order (signed overflow).
  EXPECT_EQ(checked_numel({4, 0, 5}).value(), 0);
  auto r = checked_numel({int64_t{1} << 59, 221, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("non-zero dimensions"), std::string::npos) << r.status().message();
  EXPECT_FALSE(Tensor::create(DType::kFloat32, {int64_t{1} << 59, 221, 0}).ok());
}

TEST(Shape, Broadcast) {
  auto r = broadcast_dims({2, 1, 3}, {4, 1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<int64_t>{2, 4, 3}));
  EXPECT_FALSE(broadcast_dims({2}, {3}).ok());
}

}  // namespace ferry
