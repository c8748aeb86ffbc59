// SessionOptions: fixed input shapes (checked against the model, shared symbols), opt levels, threads.
#include <gtest/gtest.h>

#include "unit/runtime/tiny_model.h"

namespace ferry::runtime {
namespace {

using testing::TinyModel;

TinyModel add_model() {
  TinyModel t;
  t.input("a", {-1, 3}).input("b", {-1, 3});
  t.node("Add", {"a", "b"}, {"c"});
  t.node("Relu", {"c"}, {"y"});
  t.output("y");
  return t;
}

TEST(SessionOptions, InputShapesAreFixedAndShareSymbols) {
  SessionOptions so;
  so.input_shapes["a"] = {2, 3};
  auto s = add_model().session(so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const ir::Graph& g = (*s)->graph();
  ASSERT_TRUE(g.inputs[0]->shape && g.inputs[1]->shape);
  EXPECT_EQ(shape_to_string(*g.inputs[0]->shape), "[2,3]");
  EXPECT_EQ(shape_to_string(*g.inputs[1]->shape), "[2,3]");  // 'batch' came from a
  EXPECT_EQ(shape_to_string(*g.outputs[0]->shape), "[2,3]");
  Tensor x = Tensor::from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3});
  auto r = (*s)->run_tensors({{"a", x}, {"b", x}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].second.data<float>()[2], 6);
  EXPECT_EQ((*r)[0].second.data<float>()[1], 0);
  auto wrong = (*s)->run_tensors({{"a", Tensor(DType::kFloat32, {1, 3})}, {"b", Tensor(DType::kFloat32, {1, 3})}});
  EXPECT_FALSE(wrong.ok());
}

TEST(SessionOptions, BadInputShapesAreErrors) {
  auto msg = [](std::map<std::string, std::vector<int64_t>> shapes) {
    SessionOptions so;
    so.input_shapes = std::move(shapes);
    auto s = add_model().session(so);
    return s.ok() ? std::string("ok") : s.status().to_string();
  };
  EXPECT_NE(msg({{"q", {1, 3}}}).find("'q' (given a shape, or a file with --input) is not a model input"), std::string::npos);
  EXPECT_NE(msg({{"a", {2, 4}}}).find("dimension 1"), std::string::npos);
  EXPECT_NE(msg({{"a", {2}}}).find("rank 1"), std::string::npos);
}

TEST(SessionOptions, OptLevelsAndThreads) {
  for (int level : {0, 1, 2, 3})
    for (const char* backend : {"reference", "cpu"}) {
      SessionOptions so;
      so.backend = backend;
      so.opt_level = level;
      so.backend_options.threads = 1;
      so.input_shapes["a"] = {1, 3};
      auto s = add_model().session(so);
      ASSERT_TRUE(s.ok()) << backend << " level " << level << ": " << s.status().to_string();
      EXPECT_EQ((*s)->options().opt_level, level);
      Tensor x = Tensor::from_vector<float>({1, -2, 3}, {1, 3});
      auto r = (*s)->run_tensors({{"a", x}, {"b", x}});
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ((*r)[0].second.data<float>()[0], 2);
      EXPECT_EQ((*r)[0].second.data<float>()[1], 0);
    }
  SessionOptions bad;
  bad.opt_level = 4;
  EXPECT_FALSE(add_model().session(bad).ok());
  bad.opt_level = 0;
  bad.backend_options.threads = -1;
  EXPECT_FALSE(add_model().session(bad).ok());
  bad.backend_options.threads = 0;
  bad.backend = "gpu";
  EXPECT_FALSE(add_model().session(bad).ok());
}

}  // namespace
}  // namespace ferry::runtime
