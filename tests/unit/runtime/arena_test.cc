// The executor's arena: static intermediates of the main graph are planned into one arena reused by
// every run, and no tensor that outlives its planned lifetime (graph outputs, views, If results,
// hook-held tensors) is left pointing into it.
#include <gtest/gtest.h>

#include "ops/op.h"
#include "runtime/executor.h"
#include "unit/runtime/tiny_model.h"

namespace ferry::runtime {
namespace {

using testing::TinyModel;

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

Tensor input(std::vector<float> v) { return Tensor::from_vector<float>(v, {2, 4}); }

// A copy through allocate_output (Concat of one input), so the result lands in the arena. (The
// reference elementwise kernels, e.g. Relu and Neg, allocate their own tensors.)
void copy(TinyModel& t, const std::string& in, const std::string& out) {
  auto& n = t.node("Concat", {in}, {out});
  auto* a = n.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
}

// Runs the model twice with different inputs and checks the first run's outputs did not change: an
// output left in the arena would have been overwritten by the second run.
void expect_outputs_survive(Session& s, const std::map<std::string, Tensor>& in1,
                            const std::map<std::string, Tensor>& in2) {
  auto r1 = s.run_tensors(in1);
  ASSERT_TRUE(r1.ok()) << r1.status().to_string();
  std::vector<std::vector<float>> before;
  for (auto& [n, t] : *r1) before.push_back(values(t));
  auto r2 = s.run_tensors(in2);
  ASSERT_TRUE(r2.ok()) << r2.status().to_string();
  for (size_t i = 0; i < r1->size(); ++i) EXPECT_EQ(values((*r1)[i].second), before[i]) << "output " << i;
}

TEST(Arena, ChainIsPlannedIntoOneSmallArena) {
  TinyModel t;
  t.input("x", {2, 4});
  t.node("Relu", {"x"}, {"a"});
  t.node("Neg", {"a"}, {"b"});
  t.node("Relu", {"b"}, {"c"});
  t.node("Neg", {"c"}, {"d"});
  t.node("Abs", {"d"}, {"y"});
  t.output("y");
  auto s = t.session();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const GraphMemory* mem = (*s)->executor().main_plan()->memory.get();
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->requests.size(), 4u);  // a, b, c, d; y is a graph output
  EXPECT_EQ(mem->plan.naive_bytes, 4u * 64);
  EXPECT_EQ(mem->plan.arena_bytes, 2u * 64);
  EXPECT_EQ((*s)->executor().arena_bytes(), 2u * 64);
  auto r = (*s)->run_tensors({{"x", input({1, -2, 3, -4, 5, -6, 7, -8})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values((*r)[0].second), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0}));
  r = (*s)->run_tensors({{"x", input({1, 2, 3, 4, 5, 6, 7, 8})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values((*r)[0].second), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0}));
  expect_outputs_survive(**s, {{"x", input({1, 2, 3, 4, 5, 6, 7, 8})}}, {{"x", input({9, 9, 9, 9, 9, 9, 9, 9})}});
}

TEST(Arena, ViewsKeepTheirBufferAlive) {
  // a = relu(x) in the arena; r = Reshape(a) (a view of a's buffer); then more arena intermediates
  // that would take a's bytes if a died at the Reshape; finally y = r + e = relu(x) - x.
  TinyModel t;
  t.input("x", {2, 4});
  t.initializer_i64("shape", {4, 2});
  t.node("Relu", {"x"}, {"rx"});
  copy(t, "rx", "a");
  t.node("Reshape", {"a", "shape"}, {"r"});
  t.node("Neg", {"x"}, {"nb"});
  copy(t, "nb", "b");
  t.node("Neg", {"b"}, {"nc"});
  copy(t, "nc", "c");
  t.node("Neg", {"c"}, {"nd"});
  copy(t, "nd", "d");
  t.node("Reshape", {"d", "shape"}, {"e"});
  t.node("Add", {"r", "e"}, {"y"});
  t.output("y");
  auto s = t.session();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const GraphMemory* mem = (*s)->executor().main_plan()->memory.get();
  int ia = -1;
  for (size_t i = 0; i < mem->values.size(); ++i)
    if (mem->values[i]->name == "a") ia = static_cast<int>(i);
  ASSERT_GE(ia, 0);
  EXPECT_EQ(mem->requests[ia].last_use, 10);  // extended to the view's last use (the Add)
  auto r = (*s)->run_tensors({{"x", input({1, -2, 3, -4, 5, -6, 7, -8})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].second.dims(), (std::vector<int64_t>{4, 2}));
  // relu(x) - x
  EXPECT_EQ(values((*r)[0].second), (std::vector<float>{0, 2, 0, 4, 0, 6, 0, 8}));
}

TEST(Arena, GraphOutputThatViewsAnIntermediateIsCopiedOut) {
  TinyModel t;
  t.input("x", {2, 4});
  t.initializer_i64("shape", {8});
  t.node("Relu", {"x"}, {"rx"});
  copy(t, "rx", "a");
  t.node("Reshape", {"a", "shape"}, {"y"});   // graph output viewing a (arena)
  t.node("Neg", {"x"}, {"nb"});
  copy(t, "nb", "b");                         // takes a's bytes: a died at the Reshape
  t.node("Neg", {"b"}, {"z"});
  t.output("y").output("z");
  auto s = t.session();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_GT((*s)->executor().arena_bytes(), 0u);
  auto r = (*s)->run_tensors({{"x", input({1, -2, 3, -4, 5, -6, 7, -8})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values((*r)[0].second), (std::vector<float>{1, 0, 3, 0, 5, 0, 7, 0}));
  expect_outputs_survive(**s, {{"x", input({1, 2, 3, 4, 5, 6, 7, 8})}}, {{"x", input({-1, 9, 9, 9, 9, 9, 9, 9})}});
}

TEST(Arena, IfForwardingAnOuterArenaValueIsCopiedOut) {
  // a = relu(x) (arena); c = If(cond) { Identity(a) } else { Identity(a) }; then b = -x takes a's
  // bytes once a died at the If; y = c - b = relu(x) + x.
  TinyModel t;
  t.input("x", {2, 4});
  auto* cond = t.proto().mutable_graph()->add_input();
  cond->set_name("cond");
  cond->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  cond->mutable_type()->mutable_tensor_type()->mutable_shape();
  t.node("Relu", {"x"}, {"rx"});
  copy(t, "rx", "a");
  auto& iff = t.node("If", {"cond"}, {"c"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* at = iff.add_attribute();
    at->set_name(branch);
    at->set_type(onnx::AttributeProto::GRAPH);
    auto* g = at->mutable_g();
    g->set_name(branch);
    auto* n = g->add_node();
    n->set_op_type("Identity");
    n->add_input("a");
    n->add_output(std::string(branch) + "_out");
    g->add_output()->set_name(std::string(branch) + "_out");
  }
  t.node("Neg", {"x"}, {"nb"});
  copy(t, "nb", "b");
  t.node("Sub", {"c", "b"}, {"y"});
  t.output("y");
  auto s = t.session();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Tensor c = Tensor::scalar<bool>(true);
  auto r = (*s)->run_tensors({{"x", input({1, -2, 3, -4, 5, -6, 7, -8})}, {"cond", c}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values((*r)[0].second), (std::vector<float>{2, -2, 6, -4, 10, -6, 14, -8}));  // relu(x) + x
}

TEST(Arena, HookSeesTensorsThatStayValid) {
  TinyModel t;
  t.input("x", {2, 4});
  t.node("Relu", {"x"}, {"rx"});
  copy(t, "rx", "a");
  t.node("Neg", {"a"}, {"na"});
  copy(t, "na", "b");
  t.node("Neg", {"b"}, {"nb"});
  copy(t, "nb", "c");
  t.node("Neg", {"c"}, {"y"});
  t.output("y");
  auto s = t.session();
  ASSERT_TRUE(s.ok());
  std::map<std::string, Tensor> kept;
  (*s)->set_node_hook([&](const ir::Node& n, const std::vector<const RtValue*>&, const std::vector<RtValue>& outs) {
    kept[n.outputs[0]->name] = outs[0].tensor;  // shares the buffer, as compare tools do
  });
  EXPECT_GT((*s)->executor().arena_bytes(), 0u);
  ASSERT_TRUE((*s)->run_tensors({{"x", input({1, -2, 3, -4, 5, -6, 7, -8})}}).ok());
  EXPECT_EQ(values(kept["a"]), (std::vector<float>{1, 0, 3, 0, 5, 0, 7, 0}));
  EXPECT_EQ(values(kept["b"]), (std::vector<float>{-1, 0, -3, 0, -5, 0, -7, 0}));
  EXPECT_EQ(values(kept["c"]), (std::vector<float>{1, 0, 3, 0, 5, 0, 7, 0}));
}

TEST(Arena, DynamicShapesAreNotPlanned) {
  TinyModel t;
  t.input("x", {-1, 4});
  t.node("Relu", {"x"}, {"a"});
  t.node("Neg", {"a"}, {"y"});
  t.output("y");
  auto s = t.session();
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->executor().main_plan()->memory->requests.empty());
  EXPECT_EQ((*s)->executor().arena_bytes(), 0u);
  auto r = (*s)->run_tensors({{"x", Tensor::from_vector<float>({1, -2, 3, -4}, {1, 4})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values((*r)[0].second), (std::vector<float>{-1, 0, -3, 0}));
  // With the shape fixed at load, the same model is planned.
  SessionOptions so;
  so.input_shapes["x"] = {3, 4};
  auto fixed = t.session(so);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ((*fixed)->executor().main_plan()->memory->requests.size(), 1u);
}

TEST(KernelContextSlot, AllocateUsesTheSlotWhenItFits) {
  ir::Graph g;
  ir::Node* n = g.add_node("Relu", "r");
  n->outputs.push_back(g.add_value("o"));
  alignas(64) static float mem[16];
  for (float& f : mem) f = 42;
  {
    ops::KernelContext ctx(*n, {}, nullptr);
    ctx.set_output_slot(0, mem, sizeof mem, nullptr);
    auto t = ctx.allocate_output(0, DType::kFloat32, {2, 8});
    ASSERT_TRUE(t.ok());
    EXPECT_EQ((*t)->raw(), static_cast<void*>(mem));
    EXPECT_EQ(mem[15], 0);  // zero-filled as reference kernels expect
  }
  for (float& f : mem) f = 42;
  {
    ops::KernelContext ctx(*n, {}, nullptr);
    ctx.set_output_slot(0, mem, sizeof mem, nullptr);
    auto t = ctx.allocate_output_uninit(0, DType::kFloat32, {4});
    ASSERT_TRUE(t.ok());
    EXPECT_EQ((*t)->raw(), static_cast<void*>(mem));
    EXPECT_EQ(mem[0], 42);  // not zeroed
    auto big = ctx.allocate_output(0, DType::kFloat32, {17});  // does not fit: own memory
    ASSERT_TRUE(big.ok());
    EXPECT_NE((*big)->raw(), static_cast<void*>(mem));
    EXPECT_EQ((*big)->data<float>()[16], 0);
    auto bad = ctx.allocate_output(0, DType::kFloat32, {-1});
    EXPECT_FALSE(bad.ok());
  }
  {
    ops::KernelContext ctx(*n, {}, nullptr);  // no slot: zeroed own memory, also for uninit
    auto t = ctx.allocate_output_uninit(0, DType::kFloat32, {3});
    ASSERT_TRUE(t.ok());
    EXPECT_EQ((*t)->data<float>()[2], 0);
  }
}

}  // namespace
}  // namespace ferry::runtime
