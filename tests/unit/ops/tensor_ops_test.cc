// Tensor-manipulation ops: error paths and opset differences the ONNX node tests do not reach, the
// inference-time folding of shape subgraphs, and (when the node-test data is present) a check that the
// shapes inference derives agree with the expected outputs of the node tests.
#include <gtest/gtest.h>

#include "unit/ops/op_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "frontend/onnx/import.h"
#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::ops {
namespace {

using namespace testing;

OpRun run_op(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}, int opset = 21,
             int num_outputs = 1) {
  return run_node(op, inputs, std::move(attrs), opset, num_outputs);
}

std::vector<int64_t> ints_of(const OpRun& r, int i = 0) { return r.outputs[i].tensor.to_int64_vector(); }

Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v); }
Tensor f32(std::vector<float> v, std::vector<int64_t> dims) { return Tensor::from_vector<float>(v, dims); }

TEST(TensorOps, GatherOutOfRangeIndexIsAnError) {
  auto r = run_op("Gather", {f32({1, 2, 3}, {3}), i64({0, 3})});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("indices[1] = 3"), std::string::npos) << r.status.message();
  auto neg = run_op("Gather", {f32({1, 2, 3}, {3}), i64({-1, -3})});
  ASSERT_TRUE(neg.status.ok()) << neg.status.to_string();
  EXPECT_EQ(neg.outputs[0].tensor.data<float>()[0], 3.f);
  EXPECT_FALSE(run_op("Gather", {f32({1, 2, 3}, {3}), i64({-4})}).status.ok());
  EXPECT_FALSE(run_op("GatherElements", {f32({1, 2}, {2}), i64({2})}).status.ok());
  EXPECT_FALSE(run_op("GatherND", {f32({1, 2, 3, 4}, {2, 2}), Tensor::from_vector<int64_t>({0, 2}, {1, 2})}).status.ok());
}

TEST(TensorOps, ScatterOutOfRangeIndexIsAnError) {
  EXPECT_FALSE(run_op("ScatterElements", {f32({1, 2}, {2}), i64({5}), f32({9}, {1})}).status.ok());
  EXPECT_FALSE(
      run_op("ScatterND", {f32({1, 2}, {2}), Tensor::from_vector<int64_t>({-3}, {1, 1}), f32({9}, {1})}).status.ok());
  auto add = run_op("ScatterND", {f32({1, 2}, {2}), Tensor::from_vector<int64_t>({1, 1}, {2, 1}), f32({3, 4}, {2})},
                    {{"reduction", string_attr("add")}});
  ASSERT_TRUE(add.status.ok()) << add.status.to_string();
  EXPECT_EQ(add.outputs[0].tensor.data<float>()[1], 9.f);
  EXPECT_FALSE(run_op("ScatterND", {f32({1}, {1}), Tensor::from_vector<int64_t>({0}, {1, 1}), f32({3}, {1})},
                      {{"reduction", string_attr("avg")}})
                   .status.ok());
}

TEST(TensorOps, ReshapeRules) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  auto r = run_op("Reshape", {x, i64({0, -1})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outputs[0].tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(run_op("Reshape", {x, i64({-1, -1})}).status.ok());
  EXPECT_FALSE(run_op("Reshape", {x, i64({4, -1})}).status.ok());
  EXPECT_FALSE(run_op("Reshape", {x, i64({7})}).status.ok());
  EXPECT_FALSE(run_op("Reshape", {x, i64({-2, 3})}).status.ok());
  // allowzero: 0 is a literal zero, which cannot hold 6 elements.
  EXPECT_FALSE(run_op("Reshape", {x, i64({0, 6})}, {{"allowzero", int_attr(1)}}).status.ok());
  auto huge = run_op("Reshape", {x, i64({int64_t{1} << 62, int64_t{1} << 62})});
  EXPECT_FALSE(huge.status.ok());
}

TEST(TensorOps, SqueezeAndUnsqueezeAcrossOpsets) {
  Tensor x = f32({1, 2, 3}, {1, 3, 1});
  auto s11 = run_op("Squeeze", {x}, {{"axes", ints_attr({0})}}, 11);
  ASSERT_TRUE(s11.status.ok()) << s11.status.to_string();
  EXPECT_EQ(s11.outputs[0].tensor.dims(), (std::vector<int64_t>{3, 1}));
  auto s13 = run_op("Squeeze", {x, i64({-1})}, {}, 13);
  ASSERT_TRUE(s13.status.ok());
  EXPECT_EQ(s13.outputs[0].tensor.dims(), (std::vector<int64_t>{1, 3}));
  auto all = run_op("Squeeze", {x}, {}, 13);
  EXPECT_EQ(all.outputs[0].tensor.dims(), (std::vector<int64_t>{3}));
  EXPECT_FALSE(run_op("Squeeze", {x, i64({1})}, {}, 13).status.ok());  // size 3
  EXPECT_FALSE(run_op("Squeeze", {x, i64({3})}, {}, 13).status.ok());  // out of range
  auto u = run_op("Unsqueeze", {x}, {{"axes", ints_attr({0, 4})}}, 11);
  ASSERT_TRUE(u.status.ok());
  EXPECT_EQ(u.outputs[0].tensor.dims(), (std::vector<int64_t>{1, 1, 3, 1, 1}));
  EXPECT_FALSE(run_op("Unsqueeze", {x, i64({0, 0})}, {}, 13).status.ok());
  EXPECT_FALSE(run_op("Unsqueeze", {x}, {}, 13).status.ok());
}

TEST(TensorOps, SliceOpsetsAndClamping) {
  Tensor x = f32({0, 1, 2, 3, 4}, {5});
  auto old = run_op("Slice", {x}, {{"starts", ints_attr({1})}, {"ends", ints_attr({100})}}, 9);
  ASSERT_TRUE(old.status.ok()) << old.status.to_string();
  EXPECT_EQ(old.outputs[0].tensor.numel(), 4);
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  auto rev = run_op("Slice", {x, i64({big}), i64({small}), i64({0}), i64({-2})});
  ASSERT_TRUE(rev.status.ok()) << rev.status.to_string();
  EXPECT_EQ(rev.outputs[0].tensor.to_double_vector(), (std::vector<double>{4, 2, 0}));
  auto step_min = run_op("Slice", {x, i64({-1}), i64({small}), i64({0}), i64({small})});
  ASSERT_TRUE(step_min.status.ok());
  EXPECT_EQ(step_min.outputs[0].tensor.numel(), 1);
  EXPECT_FALSE(run_op("Slice", {x, i64({0}), i64({3}), i64({0}), i64({0})}).status.ok());
  EXPECT_FALSE(run_op("Slice", {x, i64({0}), i64({3}), i64({1})}).status.ok());
  EXPECT_FALSE(run_op("Slice", {x, i64({0, 1}), i64({3})}).status.ok());
}

TEST(TensorOps, SplitSizes) {
  Tensor x = f32({0, 1, 2, 3, 4, 5, 6}, {7});
  auto s18 = run_op("Split", {x}, {{"num_outputs", int_attr(3)}}, 18, 3);
  ASSERT_TRUE(s18.status.ok()) << s18.status.to_string();
  EXPECT_EQ(s18.outputs[2].tensor.numel(), 1);
  EXPECT_FALSE(run_op("Split", {x}, {}, 13, 3).status.ok());  // uneven before 18
  auto s11 = run_op("Split", {x}, {{"split", ints_attr({2, 5})}}, 11, 2);
  ASSERT_TRUE(s11.status.ok());
  EXPECT_EQ(s11.outputs[1].tensor.numel(), 5);
  EXPECT_FALSE(run_op("Split", {x, i64({2, 4})}, {}, 13, 2).status.ok());
  EXPECT_FALSE(run_op("Split", {x, i64({-1, 8})}, {}, 13, 2).status.ok());
}

TEST(TensorOps, PadModesAndOldOpset) {
  Tensor x = f32({1, 2, 3}, {3});
  auto reflect = run_op("Pad", {x, i64({4, 0})}, {{"mode", string_attr("reflect")}});
  ASSERT_TRUE(reflect.status.ok()) << reflect.status.to_string();
  EXPECT_EQ(reflect.outputs[0].tensor.to_double_vector(), (std::vector<double>{1, 2, 3, 2, 1, 2, 3}));
  auto wrap = run_op("Pad", {x, i64({1, 2})}, {{"mode", string_attr("wrap")}});
  EXPECT_EQ(wrap.outputs[0].tensor.to_double_vector(), (std::vector<double>{3, 1, 2, 3, 1, 2}));
  auto crop = run_op("Pad", {x, i64({-1, 1})});
  EXPECT_EQ(crop.outputs[0].tensor.to_double_vector(), (std::vector<double>{2, 3, 0}));
  ir::Attribute value;
  value.kind = ir::Attribute::Kind::kFloat;
  value.f = 7;
  auto old = run_op("Pad", {x}, {{"pads", ints_attr({1, 0})}, {"value", value}}, 2);
  ASSERT_TRUE(old.status.ok()) << old.status.to_string();
  EXPECT_EQ(old.outputs[0].tensor.to_double_vector(), (std::vector<double>{7, 1, 2, 3}));
  EXPECT_FALSE(run_op("Pad", {x, i64({-4, 0})}).status.ok());
  EXPECT_FALSE(run_op("Pad", {x, i64({1})}).status.ok());
  EXPECT_FALSE(run_op("Pad", {x, i64({1, 1})}, {{"mode", string_attr("mirror")}}).status.ok());
}

TEST(TensorOps, ConstantStringIsUnsupported) {
  auto r = run_op("Constant", {}, {{"value_string", string_attr("hi")}}, 13);
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), ErrorCode::kNotSupported);
  auto ints = run_op("Constant", {}, {{"value_ints", ints_attr({3, 4})}}, 13);
  ASSERT_TRUE(ints.status.ok());
  EXPECT_EQ(ints_of(ints), (std::vector<int64_t>{3, 4}));
}

TEST(TensorOps, AbsurdSizesAreErrors) {
  EXPECT_FALSE(run_op("ConstantOfShape", {i64({int64_t{1} << 40, int64_t{1} << 40})}).status.ok());
  EXPECT_FALSE(run_op("Expand", {f32({1}, {1}), i64({int64_t{1} << 40, int64_t{1} << 30})}).status.ok());
  EXPECT_FALSE(run_op("Tile", {f32({1}, {1}), i64({int64_t{1} << 62})}).status.ok());
  EXPECT_FALSE(run_op("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(1e30f), Tensor::scalar<float>(1)})
                   .status.ok());
  EXPECT_FALSE(run_op("Range", {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(0)})
                   .status.ok());
  EXPECT_FALSE(run_op("OneHot", {i64({0}), Tensor::scalar<int64_t>(-3), f32({0, 1}, {2})}).status.ok());
}

TEST(TensorOps, UniqueUnsorted) {
  auto r = run_op("Unique", {f32({2, 1, 1, 3, 4, 3}, {6})}, {{"sorted", int_attr(0)}}, 11, 4);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outputs[0].tensor.to_double_vector(), (std::vector<double>{2, 1, 3, 4}));
  EXPECT_EQ(ints_of(r, 1), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(ints_of(r, 2), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ints_of(r, 3), (std::vector<int64_t>{1, 2, 2, 1}));
}

TEST(TensorOps, DropoutInferenceIsIdentity) {
  Tensor x = f32({1, 2, 3}, {3});
  auto r = run_op("Dropout", {x, Tensor::scalar<float>(0.5f)}, {}, 13, 2);
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.outputs[0].tensor.same_as(x));
  EXPECT_EQ(r.outputs[1].tensor.dtype(), DType::kBool);
  auto old = run_op("Dropout", {x}, {}, 7, 2);
  ASSERT_TRUE(old.status.ok());
  EXPECT_EQ(old.outputs[1].tensor.dtype(), DType::kFloat32);  // the mask had T's type before opset 10
}

// Shape -> Gather -> Concat -> Reshape: inference folds the shape subgraph and gives a static shape.
TEST(TensorOps, InferenceFoldsShapeSubgraphs) {
  ir::Graph g;
  ir::Value* x = g.add_value("x");
  x->dtype = DType::kFloat32;
  x->shape = Shape{Dim(2), Dim(3), Dim(4)};
  x->is_graph_input = true;
  g.inputs.push_back(x);
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, const std::string& out) {
    ir::Node* n = g.add_node(op, out + "_node");
    n->opset = 17;
    n->inputs = std::move(ins);
    ir::Value* o = g.add_value(out);
    o->producer = n;
    o->producer_output = 0;
    n->outputs.push_back(o);
    return n;
  };
  ir::Value* idx = g.add_value("idx");
  idx->initializer = Tensor::from_vector<int64_t>({0});
  idx->dtype = DType::kInt64;
  idx->shape = Shape{Dim(1)};
  ir::Value* minus1 = g.add_value("minus1");
  minus1->initializer = Tensor::from_vector<int64_t>({-1});
  minus1->dtype = DType::kInt64;
  minus1->shape = Shape{Dim(1)};
  node("Shape", {x}, "shape");
  ir::Node* gather = node("Gather", {g.find_value("shape"), idx}, "batch");
  ir::Node* concat = node("Concat", {gather->outputs[0], minus1}, "new_shape");
  concat->attrs["axis"] = int_attr(0);
  node("Reshape", {x, concat->outputs[0]}, "y");
  node("ConstantOfShape", {g.find_value("shape")}, "zeros");
  ASSERT_TRUE(infer_graph(g).ok());
  const ir::Value* y = g.find_value("y");
  ASSERT_TRUE(y->shape.has_value());
  EXPECT_EQ(shape_to_string(*y->shape), "[2,12]");
  EXPECT_EQ(shape_to_string(*g.find_value("zeros")->shape), "[2,3,4]");
}

// x: [batch, 12, 64]. Reshape(x, Concat(Shape(x)[0:1], [4, -1])) is [batch, 4, 192], and Shape(x)[1]
// (a Gather with a scalar index) is the known value 12 although x's shape is not static.
TEST(TensorOps, InferenceKeepsSymbolicDimsThroughShapeSubgraphs) {
  ir::Graph g;
  ir::Value* x = g.add_value("x");
  x->dtype = DType::kFloat32;
  x->shape = Shape{Dim::symbolic("batch"), Dim(12), Dim(64)};
  x->is_graph_input = true;
  g.inputs.push_back(x);
  auto constant = [&](const std::string& name, std::vector<int64_t> v, bool scalar = false) {
    ir::Value* c = g.add_value(name);
    c->initializer = scalar ? Tensor::scalar<int64_t>(v[0]) : Tensor::from_vector<int64_t>(v);
    c->dtype = DType::kInt64;
    c->shape = to_shape(c->initializer.dims());
    return c;
  };
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, const std::string& out) {
    ir::Node* n = g.add_node(op, out + "_node");
    n->opset = 17;
    n->inputs = std::move(ins);
    ir::Value* o = g.add_value(out);
    o->producer = n;
    o->producer_output = 0;
    n->outputs.push_back(o);
    return o;
  };
  ir::Value* shape = node("Shape", {x}, "shape");
  ir::Value* batch = node("Slice", {shape, constant("s0", {0}), constant("s1", {1})}, "batch");
  ir::Value* new_shape = node("Concat", {batch, constant("rest", {4, -1})}, "new_shape");
  new_shape->producer->attrs["axis"] = int_attr(0);
  node("Reshape", {x, new_shape}, "y");
  ir::Value* twelve = node("Gather", {shape, constant("one", {1}, true)}, "twelve");
  node("Range", {constant("zero", {0}, true), twelve, constant("step", {1}, true)}, "r");
  node("ConstantOfShape", {new_shape}, "c");  // the -1 would fail at run time; inference just leaves it unknown
  Status st = infer_graph(g);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(shape_to_string(*g.find_value("y")->shape), "[batch,4,192]");
  EXPECT_EQ(shape_to_string(*g.find_value("r")->shape), "[12]");
  EXPECT_EQ(shape_to_string(*g.find_value("c")->shape), "[batch,4,?]");
}

// For every node test of these ops in the local test data: shapes inferred from scratch (declared
// output shapes cleared) must match the expected outputs wherever inference claims a static dim.
TEST(TensorOps, InferredShapesMatchNodeTests) {
  const char* env = std::getenv("FERRY_NODE_TESTS");
  std::filesystem::path root = env ? env : "/tmp/nodetests";
  if (!std::filesystem::is_directory(root)) GTEST_SKIP() << "no node-test data at " << root;
  const std::regex mine(
      "^test_(shape|size|reshape|flatten|squeeze|unsqueeze|transpose|concat|split_(equal|variable|zero|1d|2d)|slice|"
      "gather|scatter|expand|tile|constant|range|eyelike|tril|triu|onehot|compress|nonzero|unique|depthtospace|"
      "spacetodepth|reversesequence|center_crop|tensorscatter|dropout|training_dropout|col2im|edge_pad|reflect_pad|"
      "wrap_pad)");
  int checked = 0, unknown = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!std::regex_search(name, mine) || name.find("_expanded") != std::string::npos) continue;
    auto model = frontend::load_onnx((entry.path() / "model.onnx").string());
    if (!model.ok()) continue;
    ir::Graph& g = *(*model)->graph;
    for (auto& n : g.nodes)
      for (ir::Value* o : n->outputs)
        if (o) o->shape.reset();
    ASSERT_TRUE(infer_graph(g).ok()) << name;
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      auto expected = frontend::read_tensor_pb((entry.path() / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb")).string());
      if (!expected.ok()) continue;
      const ir::Value* v = g.outputs[i];
      ++checked;
      if (!v->shape || !is_static(*v->shape)) {
        ++unknown;
        if (std::getenv("FERRY_VERBOSE")) std::printf("not static: %s output %zu\n", name.c_str(), i);
        continue;
      }
      EXPECT_EQ(static_dims(*v->shape), expected->dims()) << name << " output " << i;
    }
  }
  EXPECT_GT(checked, 100);
  std::printf("checked %d outputs, %d not fully static\n", checked, unknown);
}

}  // namespace
}  // namespace ferry::ops
