// Cross-backend harness for the cpu backend's oneDNN kernels: small IR graphs built by hand, run on
// the cpu backend and on the reference backend, outputs compared.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/op.h"
#include "runtime/executor.h"
#include "unit/ops/op_test_util.h"

namespace ferry::backends::cpu::testing {

using ops::testing::Attrs;
using ops::testing::float_attr;
using ops::testing::int_attr;
using ops::testing::ints_attr;
using ops::testing::string_attr;

// Deterministic values in [-1, 1).
inline Tensor random_tensor(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DType::kFloat32, std::move(dims));
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>((s >> 8) & 0xffff) / 32768.f - 1.f;
  }
  return t;
}

inline ir::Attribute strings_attr(std::vector<std::string> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kStrings;
  a.strings = std::move(v);
  return a;
}
inline ir::Attribute floats_attr(std::vector<float> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}

// Builds a graph incrementally: inputs, constants, nodes (outputs get fresh names).
class GraphBuilder {
 public:
  GraphBuilder() : g_(std::make_shared<ir::Graph>()) { g_->name = "g"; }
  ir::Value* input(const std::string& name, const std::vector<int64_t>& dims) {
    ir::Value* v = g_->add_value(name);
    v->dtype = DType::kFloat32;
    v->shape = to_shape(dims);
    v->is_graph_input = true;
    g_->inputs.push_back(v);
    return v;
  }
  // An input of unknown (symbolic) batch, so kernels must prepare lazily.
  ir::Value* dynamic_input(const std::string& name, std::vector<int64_t> dims) {
    ir::Value* v = input(name, dims);
    (*v->shape)[0] = Dim::symbolic("batch");
    return v;
  }
  ir::Value* constant(const Tensor& t) {
    ir::Value* v = g_->add_value(g_->fresh_name("c"));
    v->dtype = t.dtype();
    v->shape = to_shape(t.dims());
    v->initializer = t;
    return v;
  }
  ir::Value* node(const std::string& op, std::vector<ir::Value*> ins, Attrs attrs = {}, int opset = 20,
                  const std::string& domain = "") {
    ir::Node* n = g_->add_node(op, g_->fresh_name(op));
    n->domain = domain;
    n->opset = domain.empty() ? opset : 1;
    n->inputs = std::move(ins);
    n->attrs = std::move(attrs);
    n->provenance = {n->name};
    ir::Value* out = g_->add_value(g_->fresh_name(op + "_out"));
    out->dtype = DType::kFloat32;
    out->producer = n;
    out->producer_output = 0;
    n->outputs.push_back(out);
    return out;
  }
  void output(ir::Value* v) { g_->outputs.push_back(v); }
  // Infers shapes (ops without a schema keep what was set by hand).
  ir::Graph& finish() {
    Status st = ops::infer_graph(*g_);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return *g_;
  }
  ir::Graph& graph() { return *g_; }

 private:
  std::shared_ptr<ir::Graph> g_;
};

// Runs `g` on backend `backend` ("cpu" or "reference"); outputs as plain tensors, in graph order.
inline Result<std::vector<Tensor>> run_graph(const ir::Graph& g, const std::string& backend,
                                             const std::vector<Tensor>& inputs,
                                             const runtime::NodeHook* hook = nullptr,
                                             const backends::BackendOptions& options = {}) {
  FERRY_ASSIGN_OR_RETURN(auto b, backends::make_backend(backend, options));
  runtime::Executor ex(std::move(b));
  FERRY_RETURN_IF_ERROR(ex.prepare(g));
  runtime::Scope scope;
  for (size_t i = 0; i < inputs.size() && i < g.inputs.size(); ++i) scope.values[g.inputs[i]] = inputs[i];
  FERRY_RETURN_IF_ERROR(ex.run_graph(g, scope, hook));
  std::vector<Tensor> outs;
  for (const ir::Value* o : g.outputs) {
    auto it = scope.values.find(o);
    if (it == scope.values.end()) return Status::internal("missing output " + o->name);
    FERRY_ASSIGN_OR_RETURN(Tensor p, it->second.tensor.plain());
    outs.push_back(p);
  }
  return outs;
}

// Expects |a - b| <= tol * (1 + |b|) elementwise and equal dims.
inline void expect_close(const Tensor& a, const Tensor& b, float tol = 1e-4f, const std::string& what = "") {
  ASSERT_EQ(a.dims(), b.dims()) << what;
  ASSERT_TRUE(a.is_plain() && b.is_plain()) << what;
  int bad = 0;
  for (int64_t i = 0; i < a.numel() && bad < 5; ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    if (!(std::fabs(x - y) <= tol * (1.f + std::fabs(y)))) {
      ADD_FAILURE() << what << ": element " << i << ": cpu " << x << " vs reference " << y;
      ++bad;
    }
  }
}

// Runs `g`, whose first node the cpu backend must take, on the cpu and the reference backends with
// `inputs`, and expects their first outputs to agree (expect_close with `tol`; 0: exactly).
inline void expect_cpu_matches_reference(const ir::Graph& g, const std::vector<Tensor>& inputs, float tol,
                                         const std::string& what) {
  auto backend = make_backend("cpu");
  ASSERT_TRUE(backend.ok()) << backend.status().to_string();
  ASSERT_TRUE((*backend)->supports(*g.nodes[0])) << what;
  auto cpu = run_graph(g, "cpu", inputs);
  auto ref = run_graph(g, "reference", inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], tol, what);
}

}  // namespace ferry::backends::cpu::testing
