// Prepacked weights held once: a constant that one cpu kernel alone reads and has prepacked becomes that
// packed copy (Kernel::adopt_constant); it still reads back as the original through plain(), and the
// outputs are those of the reference backend. Shared and non-prepacked constants stay as they are.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "ir/graph.h"
#include "ops/op.h"
#include "runtime/session.h"

namespace ferry::runtime {
namespace {

const char* kModel = R"(opset "" 17
graph g (%x: float32[2,8,6,6], %a: float32[3,16])
  const %wc: float32[8,4,3,3] = uniform(-0.5, 0.5)
  const %wm: float32[16,12] = uniform(-0.5, 0.5)
  const %wt: float32[5,16] = uniform(-0.5, 0.5)
  const %ws: float32[16,16] = uniform(-0.5, 0.5)
  %c = Conv(%x, %wc) {group=2, pads=[1,1,1,1]}  # conv
  %m = MatMul(%a, %wm)  # mm
  %t = Gemm(%a, %wt) {transB=1}  # gemm
  %s1 = MatMul(%a, %ws)  # shared1
  %s2 = MatMul(%s1, %ws)  # shared2
  return %c, %m, %t, %s2
)";

std::unique_ptr<ir::Model> model() {
  auto m = ir::parse_model(kModel);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  Status st = ops::infer_graph(*(*m)->graph);  // as the importer does: kernels are chosen by types
  EXPECT_TRUE(st.ok()) << st.to_string();
  return std::move(m).value();
}

const ir::Value* value(const ir::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    for (const ir::Value* v : n->inputs)
      if (v && v->name == name) return v;
  return nullptr;
}

Tensor filled(std::vector<int64_t> dims, float scale) {
  Tensor t(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * static_cast<float>((i * 37) % 19 - 9);
  return t;
}

TEST(AdoptConstants, PrepackedWeightsAreHeldOnceAndReadBackExactly) {
  // The original weights, kept before the session may replace them.
  auto original = model();
  std::map<std::string, Tensor> before;
  for (const char* n : {"wc", "wm", "wt", "ws"}) before[n] = value(*original->graph, n)->initializer;

  SessionOptions so;
  so.backend = "cpu";
  auto cpu = Session::from_model(model(), so);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  const ir::Graph& g = (*cpu)->graph();
  for (const char* n : {"wc", "wm", "wt"}) {
    const Tensor& w = value(g, n)->initializer;
    EXPECT_FALSE(w.is_plain()) << n << " was not adopted";
    EXPECT_EQ(w.dims(), before[n].dims()) << n;
    auto plain = w.plain();
    ASSERT_TRUE(plain.ok()) << plain.status().to_string();
    EXPECT_EQ(std::memcmp(plain->raw(), before[n].raw(), before[n].nbytes()), 0) << n << " does not read back";
  }
  EXPECT_TRUE(value(g, "ws")->initializer.is_plain()) << "a weight two kernels read must stay shared";

  so.backend = "reference";
  auto ref = Session::from_model(model(), so);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  std::map<std::string, Tensor> feeds{{"x", filled({2, 8, 6, 6}, 0.1f)}, {"a", filled({3, 16}, 0.05f)}};
  for (int run = 0; run < 2; ++run) {  // the second run reuses the adopted weights
    auto got = (*cpu)->run_tensors(feeds);
    auto want = (*ref)->run_tensors(feeds);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); ++i) {
      const Tensor& a = (*got)[i].second;
      const Tensor& b = (*want)[i].second;
      ASSERT_EQ(a.dims(), b.dims()) << (*got)[i].first;
      for (int64_t k = 0; k < a.numel(); ++k)
        ASSERT_NEAR(a.data<float>()[k], b.data<float>()[k], 1e-4) << (*got)[i].first << " at " << k;
    }
  }
}

}  // namespace
}  // namespace ferry::runtime
