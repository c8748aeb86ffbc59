// The level-2 pipeline on the cached real models (tests/models/export_models.py): the optimized graph
// computes the same outputs on the reference backend and has the expected fused structure. Skipped when
// the model cache is missing.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "frontend/onnx/import.h"
#include "pass_test_util.h"

namespace ferry::passes::testing {
namespace {

std::string model_path(const std::string& name) {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/ferry/models/" + name + "/model.onnx";
}

struct Optimized {
  std::unique_ptr<ir::Model> before, after;
  std::vector<PassReport> report;
};

// Loads the model twice, optimizes one copy at level 2 with the given input shapes, and checks that
// both give the same outputs on random inputs.
std::optional<Optimized> optimize_and_compare(const std::string& name, std::map<std::string, std::vector<int64_t>> shapes,
                                              double rtol = 1e-4) {
  const std::string path = model_path(name);
  if (!std::filesystem::exists(path)) return std::nullopt;
  auto a = frontend::load_onnx(path);
  auto b = frontend::load_onnx(path);
  EXPECT_TRUE(a.ok() && b.ok());
  if (!a.ok() || !b.ok()) return std::nullopt;
  Optimized o;
  o.before = std::move(a).value();
  o.after = std::move(b).value();
  OptimizeOptions opts;
  opts.opt_level = 2;
  opts.input_shapes = shapes;
  Status st = optimize(*o.after, opts, &o.report);
  EXPECT_TRUE(st.ok()) << st.to_string();
  if (!st.ok()) return std::nullopt;
  OptimizeOptions fix;  // the reference copy only gets the same input shapes
  fix.opt_level = 0;
  fix.input_shapes = shapes;
  EXPECT_TRUE(optimize(*o.before, fix).ok());
  std::cout << name << ": " << o.before->graph->nodes.size() << " nodes before, " << o.after->graph->nodes.size()
            << " after level 2\n";
  for (const auto& r : o.report) std::cout << "  " << r.pass << ": " << r.changes << "\n";
  // The optimized graph's text reads back and prints the same (large weights print as type only).
  const std::string text = ir::print_model(*o.after);
  auto reparsed = ir::parse_model(text);
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().to_string();
  if (reparsed.ok()) EXPECT_EQ(ir::print_model(**reparsed), text);
  if (std::getenv("FERRY_PRINT_GRAPHS")) std::cout << ir::print_model(*o.after);  // for debugging passes
  auto inputs = random_inputs(*o.before->graph);
  // Run copies: sessions take ownership, so re-load for the structural checks afterwards.
  auto before_copy = frontend::load_onnx(path);
  auto after_copy = frontend::load_onnx(path);
  EXPECT_TRUE(optimize(**before_copy, fix).ok());
  EXPECT_TRUE(optimize(**after_copy, opts).ok());
  expect_close(run_reference(std::move(after_copy).value(), inputs), run_reference(std::move(before_copy).value(), inputs),
               rtol);
  return o;
}

TEST(OptimizeModels, Resnet18) {
  auto o = optimize_and_compare("resnet18", {{"input", {1, 3, 224, 224}}});
  if (!o) GTEST_SKIP() << "no " << model_path("resnet18");
  const ir::Graph& g = *o->after->graph;
  EXPECT_EQ(count_op(g, "BatchNormalization"), 0);
  EXPECT_EQ(count_op(g, "Conv"), 0);
  EXPECT_EQ(count_op(g, "Relu"), 0);
  EXPECT_EQ(count_op(g, "Add"), 0);
  EXPECT_EQ(count_op(g, "FusedConv"), count_op(*o->before->graph, "Conv"));
}

TEST(OptimizeModels, MobilenetV2) {
  auto o = optimize_and_compare("mobilenet_v2", {{"input", {1, 3, 224, 224}}});
  if (!o) GTEST_SKIP() << "no " << model_path("mobilenet_v2");
  const ir::Graph& g = *o->after->graph;
  EXPECT_EQ(count_op(g, "BatchNormalization"), 0);
  EXPECT_EQ(count_op(g, "Conv"), 0);
  EXPECT_EQ(count_op(g, "Clip"), 0);
}

TEST(OptimizeModels, TransformerEncoder) {
  auto o = optimize_and_compare("transformer_encoder", {{"src", {2, 16, 96}}});
  if (!o) GTEST_SKIP() << "no " << model_path("transformer_encoder");
  const ir::Graph& g = *o->after->graph;
  EXPECT_GT(count_op(g, "LayerNormalization"), 0);
  EXPECT_GT(count_op(g, "FusedAttention"), 0);
  EXPECT_GT(count_op(g, "FusedMatMul"), 0);
  // GELU is recognized and then fused into linear1's FusedMatMul as a post-op.
  int gelu_post_ops = 0;
  for (const auto& n : g.nodes)
    if (const ir::Attribute* a = n->attr("post_ops"))
      for (const auto& p : a->strings) gelu_post_ops += p == "Gelu";
  EXPECT_EQ(gelu_post_ops, 2);
  EXPECT_EQ(count_op(g, "Gelu"), 0);
  EXPECT_EQ(count_op(g, "Softmax"), 0);
  EXPECT_EQ(count_op(g, "Erf"), 0);
  EXPECT_EQ(count_op(g, "ReduceMean"), 0);
}

}  // namespace
}  // namespace ferry::passes::testing
