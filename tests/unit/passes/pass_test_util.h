// Shared harness for pass and fused-op tests: graphs come from IR text (ir/parser.cc), run on the
// reference backend with deterministic random inputs, and compare numerically.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op.h"
#include "passes/pipeline.h"
#include "runtime/session.h"

namespace ferry::passes::testing {

// Parses and infers shapes; a parse error fails the calling test (the returned pointer is null).
inline std::unique_ptr<ir::Model> parse(const std::string& text) {
  auto m = ir::parse_model(text);
  EXPECT_TRUE(m.ok()) << m.status().to_string() << "\n" << text;
  if (!m.ok()) return nullptr;
  Status st = ops::infer_graph(*(*m)->graph);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return std::move(m).value();
}

// Inputs for every non-constant graph input of known rank (a dynamic dim gets size 8, so fixtures of
// dynamic-shape graphs run too): floats uniform in [-1, 1) (or [lo, hi)), ints in [0, 4), bools
// alternating. Same seed, same tensors.
inline std::map<std::string, Tensor> random_inputs(const ir::Graph& g, uint32_t seed = 7, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::map<std::string, Tensor> out;
  for (const ir::Value* v : g.inputs) {
    if (v->is_constant() || !v->shape) continue;
    std::vector<int64_t> dims;
    for (const Dim& dim : *v->shape) dims.push_back(dim.is_static() ? dim.value : 8);
    Tensor d(DType::kFloat64, dims);
    std::uniform_real_distribution<double> u(lo, hi);
    for (int64_t i = 0; i < d.numel(); ++i) {
      double x = u(rng);
      if (is_integer(v->dtype)) x = std::floor((x - lo) / (hi - lo) * 4);
      if (v->dtype == DType::kBool) x = i % 2;
      d.data<double>()[i] = x;
    }
    out[v->name] = d.cast(v->dtype);
  }
  return out;
}

// Runs a model on the reference backend (takes ownership: parse or load it once per run).
inline std::vector<Tensor> run_reference(std::unique_ptr<ir::Model> m, const std::map<std::string, Tensor>& inputs) {
  runtime::SessionOptions o;
  o.backend = "reference";
  auto s = runtime::Session::from_model(std::move(m), o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  auto r = (*s)->run_tensors(inputs);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  std::vector<Tensor> out;
  if (r.ok())
    for (auto& [n, t] : *r) out.push_back(t);
  return out;
}

// |a - b| <= rtol * (1 + |b|) element-wise, same shapes; reports the worst element.
inline void expect_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double rtol = 1e-5) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].dims(), b[k].dims()) << "output " << k;
    double worst = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < a[k].numel(); ++i) {
      const double x = a[k].as_double(i), y = b[k].as_double(i);
      if ((std::isnan(x) && std::isnan(y)) || x == y) continue;  // x == y also covers equal infinities
      const double err = std::fabs(x - y) / (1 + std::fabs(y));
      if (!(err <= worst)) worst = err, at = i;
    }
    EXPECT_LE(worst, rtol) << "output " << k << " element " << at << ": " << a[k].as_double(at) << " vs "
                           << b[k].as_double(at);
  }
}

inline int count_op(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node->op_type == op;
  return n;
}

inline const ir::Node* find_op(const ir::Graph& g, const std::string& op) {
  for (const auto& node : g.nodes)
    if (node->op_type == op) return node.get();
  return nullptr;
}

}  // namespace ferry::passes::testing
