// The cpu backend's oneDNN MatMul / Gemm / FusedMatMul against the reference backend: batch
// broadcasting, 1-D operands, transposes, Gemm's attributes and C shapes, constant and runtime
// weights, every post-op incl. the residual sum, dynamic shapes, bad inputs.
#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu::testing {
namespace {

struct MmCase {
  std::string name;
  std::string op;  // MatMul, Gemm, FusedMatMul
  std::vector<int64_t> a, b;
  std::vector<int64_t> bias;  // empty with has_bias: a scalar
  bool has_bias = false;
  bool const_b = true;
  bool const_bias = true;
  Attrs attrs;
  bool dynamic = false;  // A's first dim symbolic
};

void PrintTo(const MmCase& c, std::ostream* os) { *os << c.name; }

class CpuMatMulCases : public ::testing::TestWithParam<MmCase> {};

TEST_P(CpuMatMulCases, MatchesReference) {
  const MmCase& c = GetParam();
  GraphBuilder g;
  std::vector<Tensor> inputs;
  ir::Value* a = c.dynamic ? g.dynamic_input("a", c.a) : g.input("a", c.a);
  inputs.push_back(random_tensor(c.a, 1));
  ir::Value* bv;
  if (c.const_b) {
    bv = g.constant(random_tensor(c.b, 2));
  } else {
    bv = g.input("b", c.b);
    inputs.push_back(random_tensor(c.b, 2));
  }
  std::vector<ir::Value*> ins{a, bv};
  if (c.has_bias) {
    if (c.const_bias) {
      ins.push_back(g.constant(random_tensor(c.bias, 3)));
    } else {
      ins.push_back(g.input("bias", c.bias));
      inputs.push_back(random_tensor(c.bias, 3));
    }
  }
  const bool fused = c.op == "FusedMatMul";
  g.output(g.node(c.op, ins, c.attrs, 13, fused ? "com.ferry" : ""));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*graph.nodes[0]));
  if (!c.dynamic) {
    // Static shapes: the primitive exists after create_kernel (it ran on oneDNN, or a Linear layer on
    // the packed GEMM where that is chosen, not the fallback).
    auto k = (*backend)->create_kernel(*graph.nodes[0]);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    const std::string name = (*k)->name();
    EXPECT_TRUE(name.rfind("cpu:onednn:matmul:", 0) == 0 || name.rfind("cpu:vec:gemm_packed_avx2", 0) == 0) << name;
    EXPECT_EQ(name.find(":ref"), std::string::npos) << "a oneDNN reference implementation: " << name;
  }
  auto cpu = run_graph(graph, "cpu", inputs);
  auto ref = run_graph(graph, "reference", inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1e-4f, c.name);
  if (c.dynamic) {
    // A second shape through the same session kernel.
    std::vector<int64_t> a2 = c.a;
    a2[0] += 2;
    inputs[0] = random_tensor(a2, 9);
    cpu = run_graph(graph, "cpu", inputs);
    ref = run_graph(graph, "reference", inputs);
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    expect_close((*cpu)[0], (*ref)[0], 1e-4f, c.name + " (second shape)");
  }
}

Attrs ta_tb(int ta, int tb, float alpha = 1.f) {
  return {{"trans_a", int_attr(ta)}, {"trans_b", int_attr(tb)}, {"alpha", float_attr(alpha)}};
}

INSTANTIATE_TEST_SUITE_P(
    MatMul, CpuMatMulCases,
    ::testing::Values(
        MmCase{"linear_2d", "MatMul", {7, 33}, {33, 19}},
        MmCase{"linear_3d", "MatMul", {2, 5, 16}, {16, 24}},
        MmCase{"linear_4d", "MatMul", {2, 3, 4, 8}, {8, 5}},
        MmCase{"runtime_b_batched", "MatMul", {3, 6, 10}, {3, 10, 4}, {}, false, false},
        MmCase{"broadcast_batch", "MatMul", {2, 1, 5, 6}, {3, 6, 7}, {}, false, false},
        MmCase{"broadcast_batch_b", "MatMul", {1, 5, 6}, {4, 6, 7}, {}, false, false},
        MmCase{"a_1d", "MatMul", {9}, {9, 4}},
        MmCase{"b_1d", "MatMul", {3, 4, 9}, {9}, {}, false, false},
        MmCase{"both_1d", "MatMul", {9}, {9}, {}, false, false},
        MmCase{"a_1d_batched_b", "MatMul", {6}, {2, 6, 5}, {}, false, false},
        MmCase{"m1", "MatMul", {1, 1, 64}, {64, 3}},
        MmCase{"odd_129", "MatMul", {1, 129, 65}, {65, 129}},
        MmCase{"dynamic_batch", "MatMul", {2, 7, 12}, {12, 5}, {}, false, true, true, {}, true},
        MmCase{"gemm_plain", "Gemm", {4, 6}, {6, 5}, {5}, true},
        MmCase{"gemm_trans", "Gemm", {6, 4}, {5, 6}, {4, 5}, true, true, true,
               {{"transA", int_attr(1)}, {"transB", int_attr(1)}, {"alpha", float_attr(0.5f)}, {"beta", float_attr(2.f)}}},
        MmCase{"gemm_c_scalar", "Gemm", {4, 6}, {6, 5}, {}, true, true, true, {{"beta", float_attr(-1.5f)}}},
        MmCase{"gemm_c_column", "Gemm", {4, 6}, {6, 5}, {4, 1}, true},
        MmCase{"gemm_c_runtime", "Gemm", {4, 6}, {5, 6}, {4, 5}, true, true, false,
               {{"transB", int_attr(1)}, {"beta", float_attr(0.25f)}}},
        MmCase{"gemm_no_c", "Gemm", {3, 6}, {6, 5}, {}, false, false, true, {{"alpha", float_attr(3.f)}}},
        MmCase{"gemm_runtime_b_alpha_bias", "Gemm", {3, 6}, {6, 5}, {5}, true, false, true, {{"alpha", float_attr(0.3f)}}},
        MmCase{"fused_trans_b", "FusedMatMul", {2, 5, 8}, {6, 8}, {6}, true, true, true, ta_tb(0, 1)},
        MmCase{"fused_trans_a", "FusedMatMul", {2, 8, 5}, {8, 6}, {6}, true, true, true, ta_tb(1, 0)},
        MmCase{"fused_qk", "FusedMatMul", {2, 3, 7, 8}, {2, 3, 9, 8}, {}, false, false, true, ta_tb(0, 1, 0.125f)},
        MmCase{"fused_alpha_bias_runtime_b", "FusedMatMul", {4, 8}, {8, 6}, {6}, true, false, false, ta_tb(0, 0, 2.f)},
        MmCase{"fused_bias_rows", "FusedMatMul", {3, 4, 8}, {8, 6}, {4, 1}, true, true, true, ta_tb(0, 0)},
        MmCase{"fused_bias_full", "FusedMatMul", {3, 4, 8}, {8, 6}, {3, 4, 6}, true, true, false, ta_tb(0, 0)},
        // Linear layers whose batch dims fold into M (torch's [S, B, E] attention input: M = 1).
        MmCase{"fold_seq_first", "FusedMatMul", {16, 1, 32}, {32, 24}, {24}, true, true, true, ta_tb(0, 0)},
        MmCase{"fold_b_unit_batch", "MatMul", {3, 4, 8}, {1, 8, 6}},
        MmCase{"fold_trans_b_alpha", "FusedMatMul", {2, 3, 5, 8}, {6, 8}, {1, 1, 1, 6}, true, true, false, ta_tb(0, 1, 0.7f)},
        MmCase{"fold_bias_full_batch", "FusedMatMul", {3, 4, 8}, {8, 6}, {3, 1, 6}, true, true, true, ta_tb(0, 0)},
        MmCase{"fused_trans_1d", "FusedMatMul", {8}, {6, 8}, {6}, true, true, true, ta_tb(1, 1)},
        // Swin's window attention: Q.K^T plus a relative-position bias broadcast over the windows, which
        // oneDNN 2.6 serves only with its reference matmul as a post-op (the bias is added after).
        MmCase{"fused_window_attention_bias", "FusedMatMul", {8, 3, 49, 32}, {8, 3, 32, 49}, {1, 3, 49, 49}, true,
               false, true, ta_tb(0, 0, 0.125f)},
        MmCase{"fused_window_attention_runtime_bias", "FusedMatMul", {8, 3, 49, 32}, {8, 3, 32, 49}, {3, 49, 49},
               true, false, false, ta_tb(0, 0)}),
    [](const ::testing::TestParamInfo<MmCase>& i) { return i.param.name; });

// Every post-op (and chains with the residual sum) against FusedMatMul's own reference kernel.
struct PostOpCase {
  std::vector<std::string> ops;
  std::vector<float> alpha, beta;
};

class CpuFusedMatMulPostOps : public ::testing::TestWithParam<PostOpCase> {};

TEST_P(CpuFusedMatMulPostOps, MatchesReference) {
  const PostOpCase& c = GetParam();
  bool has_sum = false;
  for (const auto& o : c.ops) has_sum = has_sum || o == "sum";
  // Batch dims on A and on B, so both the folded Linear and the batched GEMM get every post-op.
  const bool batched_b = c.ops.size() % 2 == 0;
  const std::vector<int64_t> ad{2, 17, 40}, bd = batched_b ? std::vector<int64_t>{2, 40, 24} : std::vector<int64_t>{40, 24},
                             yd{2, 17, 24};
  GraphBuilder g;
  std::vector<ir::Value*> ins{g.input("a", ad), g.constant(random_tensor(bd, 4)), g.constant(random_tensor({24}, 5))};
  std::vector<Tensor> inputs{random_tensor(ad, 6)};
  if (has_sum) {
    ins.push_back(g.input("z", yd));
    inputs.push_back(random_tensor(yd, 7));
  }
  Attrs fa = ta_tb(0, 0, 1.5f);
  fa["post_ops"] = strings_attr(c.ops);
  fa["post_op_alpha"] = floats_attr(c.alpha);
  fa["post_op_beta"] = floats_attr(c.beta);
  g.output(g.node("FusedMatMul", ins, fa, 1, "com.ferry"));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*graph.nodes[0]));
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ((*k)->name().rfind("cpu:onednn:matmul:", 0), 0u) << (*k)->name();
  auto got = run_graph(graph, "cpu", inputs);
  auto want = run_graph(graph, "reference", inputs);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  expect_close((*got)[0], (*want)[0], 1e-4f, c.ops[0]);
}

INSTANTIATE_TEST_SUITE_P(
    FusedMatMul, CpuFusedMatMulPostOps,
    ::testing::Values(PostOpCase{{"Relu"}, {0}, {0}}, PostOpCase{{"LeakyRelu"}, {0.1f}, {0}},
                      PostOpCase{{"Clip"}, {-0.5f}, {0.7f}}, PostOpCase{{"Sigmoid"}, {0}, {0}},
                      PostOpCase{{"Tanh"}, {0}, {0}}, PostOpCase{{"HardSigmoid"}, {0.2f}, {0.5f}},
                      PostOpCase{{"HardSwish"}, {0}, {0}}, PostOpCase{{"Silu"}, {0}, {0}},
                      PostOpCase{{"Gelu"}, {0}, {0}}, PostOpCase{{"GeluTanh"}, {0}, {0}},
                      PostOpCase{{"Elu"}, {0.7f}, {0}}, PostOpCase{{"Mish"}, {0}, {0}},
                      PostOpCase{{"Softplus"}, {0}, {0}}, PostOpCase{{"Abs"}, {0}, {0}},
                      PostOpCase{{"Mul"}, {-2.f}, {0}}, PostOpCase{{"Add"}, {0.3f}, {0}},
                      PostOpCase{{"sum"}, {0}, {0}}, PostOpCase{{"sum", "Relu"}, {0, 0}, {0, 0}},
                      PostOpCase{{"Gelu", "sum"}, {0, 0}, {0, 0}},
                      PostOpCase{{"Relu", "sum", "Mul"}, {0, 0, 0.5f}, {0, 0, 0}}),
    [](const ::testing::TestParamInfo<PostOpCase>& i) {
      std::string n;
      for (const auto& o : i.param.ops) n += (n.empty() ? "" : "_") + o;
      return n;
    });

// Bad inputs are errors, not crashes.
TEST(CpuMatMul, MismatchedInnerDimIsAnError) {
  GraphBuilder g;
  ir::Value* a = g.input("a", {3, 4});
  ir::Value* b = g.input("b", {5, 6});
  ir::Value* y = g.node("MatMul", {a, b});
  y->shape = to_shape({3, 6});
  g.output(y);
  auto r = run_graph(g.graph(), "cpu", {random_tensor({3, 4}, 1), random_tensor({5, 6}, 2)});
  EXPECT_FALSE(r.ok());
}

TEST(CpuMatMul, RuntimeShapeDifferentFromDeclaredIsAnErrorOrCorrect) {
  // Declared [2, 8] x [8, 4] but fed [2, 8] x [7, 4] at run time: the kernel must notice.
  GraphBuilder g;
  ir::Value* a = g.input("a", {2, 8});
  ir::Value* b = g.input("b", {8, 4});
  g.output(g.node("MatMul", {a, b}));
  ir::Graph& graph = g.finish();
  auto r = run_graph(graph, "cpu", {random_tensor({2, 8}, 1), random_tensor({7, 4}, 2)});
  EXPECT_FALSE(r.ok());
}

TEST(CpuMatMul, IntegerMatMulIsNotCovered) {
  GraphBuilder g;
  ir::Value* a = g.input("a", {2, 3});
  ir::Value* b = g.input("b", {3, 2});
  a->dtype = b->dtype = DType::kInt32;
  ir::Value* y = g.node("MatMul", {a, b});
  y->dtype = DType::kInt32;
  auto backend = make_backend("cpu");
  EXPECT_FALSE((*backend)->supports(*g.graph().nodes[0]));
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
