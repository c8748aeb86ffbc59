// Shared by the tests of the MatMul kernel's packed-GEMM paths (mkl_gemm_test.cc, vec_gemm_test.cc): a
// Linear-layer node (MatMul / Gemm / FusedMatMul with a constant B, Bias, post-ops, residual) checked
// against the reference backend with the kernel it must get, and one executor serving several batch
// sizes on an adopted pack that still reads back as the original weights.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu::testing {

struct LinearCase {
  std::string name;
  std::string op;
  std::vector<int64_t> a, b, bias;
  bool has_bias;
  Attrs attrs;
  bool with_z = false;
};

inline void PrintTo(const LinearCase& c, std::ostream* os) { *os << c.name; }

inline Attrs linear_post_ops(std::vector<std::string> ops, std::vector<float> alpha, std::vector<float> beta,
                             int trans_b = 0) {
  return {{"trans_a", int_attr(0)},        {"trans_b", int_attr(trans_b)},       {"alpha", float_attr(1.f)},
          {"post_ops", strings_attr(ops)}, {"post_op_alpha", floats_attr(alpha)}, {"post_op_beta", floats_attr(beta)}};
}

// The node of `c` gets a kernel whose name starts with `kernel_prefix` and matches the reference.
// `gemm` forces the GEMM path under test (on any machine that can run it).
inline void check_linear_case(const LinearCase& c, const std::string& kernel_prefix, CpuGemm gemm) {
  BackendOptions options;
  options.cpu.gemm = gemm;
  GraphBuilder g;
  std::vector<ir::Value*> ins{g.input("a", c.a), g.constant(random_tensor(c.b, 2))};
  std::vector<Tensor> inputs{random_tensor(c.a, 1)};
  if (c.has_bias) ins.push_back(g.constant(random_tensor(c.bias, 3)));
  std::vector<int64_t> yd(c.a.begin(), c.a.end() - 1);
  yd.push_back(c.bias.empty() ? c.b.back() : c.bias.back());
  if (c.with_z) {
    if (!c.has_bias) ins.push_back(nullptr);
    ins.push_back(g.input("z", yd));
    inputs.push_back(random_tensor(yd, 4));
  }
  const bool fused = c.op == "FusedMatMul";
  g.output(g.node(c.op, ins, c.attrs, fused ? 1 : 13, fused ? "com.ferry" : ""));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu", options);
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ((*k)->name().rfind(kernel_prefix, 0), 0u) << (*k)->name();
  auto cpu = run_graph(graph, "cpu", inputs, nullptr, options);
  auto ref = run_graph(graph, "reference", inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1e-4f, c.name);
}

// One executor, a MatMul of a dynamic-batch A [rows, K] by a constant [K, N], run at each of `rows`:
// every run matches the reference, the kernel is `kernel_name`, and an adopted initializer reads back
// as the original weights bit for bit, or up to the sign of zero where `exact_zero_sign` is false.
inline void check_adopted_pack(int64_t K, int64_t N, const std::vector<int64_t>& rows, const std::string& kernel_name,
                               bool exact_zero_sign, CpuGemm gemm) {
  BackendOptions options;
  options.cpu.gemm = gemm;
  GraphBuilder g;
  Tensor w = random_tensor({K, N}, 5);
  ir::Value* wv = g.constant(w);
  g.output(g.node("MatMul", {g.dynamic_input("a", {rows[0], K}), wv}, {}, 13));
  ir::Graph& graph = g.finish();
  auto cpu_backend = make_backend("cpu", options);
  runtime::Executor ex(std::move(cpu_backend).value());
  ASSERT_TRUE(ex.prepare(graph).ok());
  for (int64_t r : rows) {
    Tensor a = random_tensor({r, K}, static_cast<uint32_t>(6 + r));
    runtime::Scope scope;
    scope.values[graph.inputs[0]] = a;
    ASSERT_TRUE(ex.run_graph(graph, scope, nullptr).ok());
    auto want = run_graph(graph, "reference", {a});
    ASSERT_TRUE(want.ok());
    auto got = scope.values[graph.outputs[0]].tensor.plain();
    ASSERT_TRUE(got.ok());
    expect_close(*got, (*want)[0], 1e-4f, "rows " + std::to_string(r));
  }
  EXPECT_EQ(ex.main_plan()->kernels[0]->name(), kernel_name);
  if (!wv->initializer.is_plain()) {  // adopted (dynamic shapes plan lazily: it may stay plain)
    auto back = wv->initializer.plain();
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->dims(), w.dims());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const float x = back->data<float>()[i], y = w.data<float>()[i];
      if (exact_zero_sign) {
        ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << "element " << i;
      } else {
        ASSERT_TRUE(x == y) << "element " << i;
      }
    }
  }
}

}  // namespace ferry::backends::cpu::testing
