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
  EXPECT_FALSE((*s)->executor().plan_refined());
  auto r = (*s)->run_tensors({{"x", input({1, -2, 3, -4, 5, -6, 7, -8})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // Every kernel here used its slot: the first run keeps the whole plan.
  EXPECT_TRUE((*s)->executor().plan_refined());
  EXPECT_EQ((*s)->executor().dropped_values(), 0);
  EXPECT_EQ((*s)->executor().arena_bytes(), 2u * 64);
  EXPECT_EQ(values((*r)[0].second), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0}));
  r = (*s)->run_tensors({{"x", input({1, 2, 3, 4, 5, 6, 7, 8})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(values((*r)[0].second), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0}));
  expect_outputs_survive(**s, {{"x", input({1, 2, 3, 4, 5, 6, 7, 8})}}, {{"x", input({9, 9, 9, 9, 9, 9, 9, 9})}});
}

TEST(Arena, FirstRunDropsValuesWhoseKernelsIgnoreTheirSlot) {
  // The reference Cast builds its own tensor; Concat writes into its slot.
  TinyModel t;
  t.input("x", {2, 4});
  copy(t, "x", "a");
  auto& cast = t.node("Cast", {"a"}, {"b"});
  auto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  copy(t, "b", "c");
  t.node("Cast", {"c"}, {"d"}).CopyFrom(cast);
  t.proto().mutable_graph()->mutable_node(3)->set_input(0, "c");
  t.proto().mutable_graph()->mutable_node(3)->set_output(0, "d");
  t.proto().mutable_graph()->mutable_node(3)->set_name("cast2");
  copy(t, "d", "y");
  t.output("y");
  auto s = t.session();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const runtime::Executor& ex = (*s)->executor();
  EXPECT_EQ(ex.main_plan()->memory->requests.size(), 4u);
  EXPECT_EQ(ex.arena_bytes(), 2u * 64);
  for (int run = 0; run < 3; ++run) {
    auto r = (*s)->run_tensors({{"x", input({1, -2, 3, -4, 5, -6, 7, -8})}});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(values((*r)[0].second), (std::vector<float>{1, -2, 3, -4, 5, -6, 7, -8}));
    EXPECT_TRUE(ex.plan_refined());
    EXPECT_EQ(ex.dropped_values(), 2);  // b and d
    std::vector<std::string> kept;
    for (const ir::Value* v : ex.main_plan()->memory->values) kept.push_back(v->name);
    EXPECT_EQ(kept, (std::vector<std::string>{"a", "c"}));
    EXPECT_EQ(ex.arena_bytes(), 64u);  // a and c never live together
  }
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
  // A second run on the refined plan computes the same.
  r = (*s)->run_tensors({{"x", input({1, -2, 3, -4, 5, -6, 7, -8})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
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
    // No slot: own memory, zeroed for allocate_output; allocate_output_uninit leaves it as the allocator
    // gave it (the kernel writes it whole), so only its size is checked.
    ops::KernelContext ctx(*n, {}, nullptr);
    auto t = ctx.allocate_output(0, DType::kFloat32, {3});
    ASSERT_TRUE(t.ok());
    EXPECT_EQ((*t)->data<float>()[2], 0);
    auto u = ctx.allocate_output_uninit(0, DType::kFloat32, {5});
    ASSERT_TRUE(u.ok());
    EXPECT_EQ((*u)->numel(), 5);
    EXPECT_NE((*u)->raw(), nullptr);
    EXPECT_FALSE(ctx.allocate_output_uninit(0, DType::kFloat32, {-1}).ok());
  }
}

}  // namespace
}  // namespace ferry::runtime

namespace ferry::runtime {
namespace {

// A backend whose Relu runs in place: it declares inplace_input(0) = 0, takes its output with
// allocate_output_uninit and reads each element before writing it.
class InPlaceRelu : public backends::Kernel {
 public:
  Status run(ops::KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, x.dtype(), x.dims()));
    if (y->raw() == x.raw()) in_place_runs++;
    const float* px = x.data<float>();
    float* py = y->data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = px[i] > 0 ? px[i] : 0;
    return Status();
  }
  std::string name() const override { return "test:inplace_relu"; }
  int inplace_input(int output) const override { return output == 0 ? 0 : -1; }
  static inline int in_place_runs = 0;
};

class InPlaceBackend : public backends::Backend {
 public:
  std::string name() const override { return "inplace"; }
  bool supports(const ir::Node& n) const override { return n.op_type == "Relu"; }
  Result<std::unique_ptr<backends::Kernel>> create_kernel(const ir::Node&) override {
    return std::unique_ptr<backends::Kernel>(new InPlaceRelu());
  }
};

TEST(Arena, InPlaceKernelsOverwriteADyingInput) {
  // a = copy(x); b = Relu(a) may overwrite a (a dies there); c = Relu(b) may not overwrite b, which the
  // final Add still reads; y = b + c.
  TinyModel t;
  t.input("x", {2, 4});
  copy(t, "x", "a");
  t.node("Relu", {"a"}, {"b"});
  t.node("Relu", {"b"}, {"c"});
  t.node("Add", {"b", "c"}, {"y"});
  t.output("y");
  auto model = frontend::load_onnx_bytes(t.proto().SerializeAsString(), "", "inplace.onnx");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ir::Graph& g = *(*model)->graph;
  Executor ex(std::make_unique<InPlaceBackend>());
  ASSERT_TRUE(ex.prepare(g).ok());
  const GraphMemory& mem = *ex.main_plan()->memory;
  ASSERT_EQ(mem.requests.size(), 3u);  // a, b, c
  EXPECT_EQ(mem.plan.inplace_of[1], 0);   // b over a
  EXPECT_EQ(mem.plan.inplace_of[2], -1);  // c must not overwrite b
  EXPECT_EQ(mem.plan.offsets[0], mem.plan.offsets[1]);
  EXPECT_EQ(ex.main_plan()->kernels[1]->name(), "test:inplace_relu");
  InPlaceRelu::in_place_runs = 0;
  for (int run = 0; run < 2; ++run) {
    Scope scope;
    scope.values[g.inputs[0]] = RtValue(input({1, -2, 3, -4, 5, -6, 7, -8}));
    ASSERT_TRUE(ex.run_graph(g, scope, nullptr).ok());
    const RtValue* y = scope.find(g.outputs[0]);
    ASSERT_TRUE(y && y->is_tensor());
    EXPECT_EQ(values(y->tensor), (std::vector<float>{2, 0, 6, 0, 10, 0, 14, 0}));
  }
  EXPECT_EQ(InPlaceRelu::in_place_runs, 2);  // b was written over a, once per run
}

}  // namespace
}  // namespace ferry::runtime
