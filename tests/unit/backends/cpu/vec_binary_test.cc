// ferry's broadcast binary kernel (vec_binary.h) against a plain loop, over every shape class the
// cpu backend meets (same shape, per-channel SE, per-row bias, scalar, both operands broadcasting,
// broadcast first operand), and the cpu Binary kernel never running a oneDNN reference implementation.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <functional>
#include <set>

#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/vec_binary.h"
#include "backends/cpu/vec_math.h"

namespace ferry::backends::cpu::testing {
namespace {

struct ShapeCase {
  std::string name;
  std::vector<int64_t> a, b;
};

std::vector<ShapeCase> shape_cases() {
  return {{"same", {2, 13, 4, 5}, {2, 13, 4, 5}},
          {"se", {2, 13, 7, 7}, {2, 13, 1, 1}},
          {"se_first", {2, 13, 1, 1}, {2, 13, 7, 7}},
          {"channel_const", {2, 13, 4, 5}, {13, 1, 1}},
          {"row_bias", {6, 33}, {33}},
          {"column", {6, 33}, {6, 1}},
          {"scalar", {3, 5, 7}, {}},
          {"scalar_first", {}, {3, 5, 7}},
          {"both_broadcast", {2, 1, 4, 1}, {3, 1, 5}},
          {"attention_bias", {1, 3, 49, 49}, {3, 49, 49}},
          {"window_mask", {4, 3, 49, 49}, {4, 1, 49, 49}},
          {"large_se", {1, 96, 56, 56}, {1, 96, 1, 1}}};
}

float apply(VecBinary op, float x, float y) {
  switch (op) {
    case VecBinary::kAdd: return x + y;
    case VecBinary::kSub: return x - y;
    case VecBinary::kMul: return x * y;
    case VecBinary::kDiv: return x / y;
    case VecBinary::kMax: return std::max(x, y);
    case VecBinary::kMin: return std::min(x, y);
  }
  return 0;
}

// Element i of `t` (dims `d`) seen through the broadcast to `out` dims.
float at(const Tensor& t, const std::vector<int64_t>& out, int64_t i) {
  const auto& d = t.dims();
  int64_t off = 0, step = 1;
  for (int k = static_cast<int>(out.size()) - 1, j = static_cast<int>(d.size()) - 1; k >= 0; --k, --j) {
    const int64_t idx = i % out[k];
    i /= out[k];
    if (j >= 0) {
      if (d[j] != 1) off += idx * step;
      step *= d[j];
    }
  }
  return t.data<float>()[off];
}

// Every Highway target this CPU runs (AVX-512, AVX2, SSE4, ...), each forced in turn.
TEST(VecBinary, MatchesAPlainLoopOnEveryShapeClassAndTarget) {
  int targets = 0;
  std::set<std::string> dispatched;  // what the dispatch really picked under each forced target
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    ++targets;
    dispatched.insert(vec_math_target());
    SCOPED_TRACE(hwy::TargetName(target));
  for (const ShapeCase& c : shape_cases()) {
    Tensor a = random_tensor(c.a, 1), b = random_tensor(c.b, 2);
    for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] += b.data<float>()[i] >= 0 ? 0.5f : -0.5f;
    auto out_dims = broadcast_dims(c.a, c.b);
    ASSERT_TRUE(out_dims.ok());
    const BroadcastPlan plan = plan_broadcast(c.a, c.b, *out_dims);
    for (VecBinary op : {VecBinary::kAdd, VecBinary::kSub, VecBinary::kMul, VecBinary::kDiv, VecBinary::kMax,
                         VecBinary::kMin}) {
      Tensor out(DType::kFloat32, *out_dims);
      vec_binary(op, plan, a.data<float>(), b.data<float>(), out.data<float>());
      for (int64_t i = 0; i < out.numel(); ++i)
        ASSERT_EQ(out.data<float>()[i], apply(op, at(a, *out_dims, i), at(b, *out_dims, i)))
            << c.name << " op " << static_cast<int>(op) << " element " << i;
    }
  }
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GE(targets, 2);
  EXPECT_EQ(static_cast<int>(dispatched.size()), targets);
}

TEST(VecBinary, MergesDimsIntoLongRuns) {
  BroadcastPlan se = plan_broadcast({2, 13, 7, 7}, {2, 13, 1, 1}, {2, 13, 7, 7});
  EXPECT_EQ(se.outer, std::vector<int64_t>{26});
  EXPECT_EQ(se.inner, 49);
  EXPECT_EQ(se.b_inner, 0);
  BroadcastPlan same = plan_broadcast({2, 13, 4, 5}, {2, 13, 4, 5}, {2, 13, 4, 5});
  EXPECT_TRUE(same.outer.empty());
  EXPECT_EQ(same.inner, 520);
}

TEST(VecBinary, OutputMayAliasTheFullOperand) {
  Tensor a = random_tensor({1, 96, 56, 56}, 4), b = random_tensor({1, 96, 1, 1}, 5);
  Tensor want(DType::kFloat32, a.dims());
  const BroadcastPlan plan = plan_broadcast(a.dims(), b.dims(), a.dims());
  vec_binary(VecBinary::kMul, plan, a.data<float>(), b.data<float>(), want.data<float>());
  vec_binary(VecBinary::kMul, plan, a.data<float>(), b.data<float>(), a.data<float>());
  EXPECT_TRUE(a.same_as(want));
}

// Every shape class on the cpu Binary kernel, plain operands: the reference backend's result, and
// a kernel that is not oneDNN's reference implementation (name "cpu:onednn:binary:ref..." ).
TEST(CpuBinary, NeverRunsAOneDnnReferenceImplementation) {
  for (const ShapeCase& c : shape_cases()) {
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
      GraphBuilder gb;
      ir::Value* a = gb.input("a", c.a);
      ir::Value* b = gb.input("b", c.b);
      gb.output(gb.node(op, {a, b}));
      ir::Graph& g = gb.finish();
      Tensor at = random_tensor(c.a, 6), bt = random_tensor(c.b, 7);
      for (int64_t i = 0; i < bt.numel(); ++i) bt.data<float>()[i] += bt.data<float>()[i] >= 0 ? 0.5f : -0.5f;
      auto backend = make_backend("cpu");
      auto k = (*backend)->create_kernel(*g.nodes[0]);
      ASSERT_TRUE(k.ok()) << k.status().to_string();
      RtValue ra(at), rb(bt);
      std::vector<const RtValue*> ins{&ra, &rb};
      ops::KernelContext ctx(*g.nodes[0], ins, nullptr);
      Status st = (*k)->run(ctx);
      ASSERT_TRUE(st.ok()) << c.name << " " << op << ": " << st.to_string();
      const std::string name = (*k)->name();
      EXPECT_EQ(name.find(":ref"), std::string::npos) << c.name << " " << op << " ran " << name;
      auto got = ctx.outputs()[0].tensor.plain();
      ASSERT_TRUE(got.ok());
      auto want = run_graph(g, "reference", {at, bt});
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      expect_close(*got, (*want)[0], 1e-6f, c.name + " " + op + " (" + name + ")");
    }
  }
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
