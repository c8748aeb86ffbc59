// The parts of `ferry bench` that need no model and no clock: statistics, loop policies, batch shapes,
// ratios and the peer result parser. (The CLI test, tests/cli/test_bench.py, runs real models.)
#include "tools/bench.h"

#include <gtest/gtest.h>

namespace ferry::tools {
namespace {

TEST(Bench, StatsInterpolateLikeNumpy) {
  // np.percentile([1, 2, 3, 4, 10], q) for q = 50, 90, 95, 99: 3, 7.6, 8.8, 9.76.
  LatencyStats s = compute_stats({10, 2, 4, 1, 3}, 8, 0.5);
  EXPECT_EQ(s.iterations, 5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 10);
  EXPECT_DOUBLE_EQ(s.mean_ms, 4);
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_NEAR(s.p90_ms, 7.6, 1e-12);
  EXPECT_NEAR(s.p95_ms, 8.8, 1e-12);
  EXPECT_NEAR(s.p99_ms, 9.76, 1e-12);
  // Sample standard deviation: sqrt((9 + 4 + 1 + 0 + 36) / 4) = sqrt(12.5).
  EXPECT_NEAR(s.stddev_ms, std::sqrt(12.5), 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(12.5) / 4, 1e-12);
  // batch * iterations / total time.
  EXPECT_DOUBLE_EQ(s.throughput, 8 * 5 / 0.5);
}

TEST(Bench, StatsEdgeCases) {
  LatencyStats one = compute_stats({2.5}, 1, 0);
  EXPECT_DOUBLE_EQ(one.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(one.p99_ms, 2.5);
  EXPECT_DOUBLE_EQ(one.stddev_ms, 0);
  EXPECT_DOUBLE_EQ(one.cv, 0);
  EXPECT_DOUBLE_EQ(one.throughput, 1 / 0.0025);  // no total: the sum of latencies
  LatencyStats even = compute_stats({4, 1, 3, 2}, 1, 1);
  EXPECT_DOUBLE_EQ(even.median_ms, 2.5);
  EXPECT_EQ(compute_stats({}, 1, 1).iterations, 0);
}

TEST(Bench, LoopPolicies) {
  LoopPolicy exact = measure_policy(5, std::nullopt);
  EXPECT_FALSE(exact.done(4, 100));
  EXPECT_TRUE(exact.done(5, 0));
  LoopPolicy dur = measure_policy(std::nullopt, 2.0);
  EXPECT_FALSE(dur.done(0, 5));  // at least one iteration
  EXPECT_FALSE(dur.done(100, 1.9));
  EXPECT_TRUE(dur.done(1, 2.0));
  LoopPolicy both = measure_policy(10, 1.0);
  EXPECT_FALSE(both.done(10, 0.5));
  EXPECT_FALSE(both.done(9, 5));
  EXPECT_TRUE(both.done(11, 1.5));
  LoopPolicy def = default_measure_policy();
  EXPECT_FALSE(def.done(9, 29));  // 10 iterations and 3 s...
  EXPECT_FALSE(def.done(50, 2.9));
  EXPECT_TRUE(def.done(10, 3));
  EXPECT_TRUE(def.done(2, 30));  // ...but a slow model stops at 30 s
  EXPECT_FALSE(def.done(0, 100));
  EXPECT_TRUE(warmup_iterations_policy(0).done(0, 0));
  EXPECT_TRUE(warmup_ms_policy(0).done(0, 0));
  EXPECT_FALSE(warmup_ms_policy(50).done(0, 1));
  EXPECT_FALSE(warmup_ms_policy(50).done(3, 0.04));
  EXPECT_TRUE(warmup_ms_policy(50).done(1, 0.05));
  LoopPolicy w = default_warmup_policy();
  EXPECT_FALSE(w.done(3, 0.1));
  EXPECT_TRUE(w.done(3, 0.2));
  EXPECT_TRUE(w.done(1, 1.0));  // one slow iteration is warmup enough
}

// x: float32[batch,3,?], ids: int64[batch,seq].
std::unique_ptr<ir::Graph> graph() {
  auto g = std::make_unique<ir::Graph>();
  auto add = [&](const std::string& n, DType t, Shape s) {
    ir::Value* v = g->add_value(n);
    v->dtype = t;
    v->shape = std::move(s);
    v->is_graph_input = true;
    g->inputs.push_back(v);
    return v;
  };
  add("x", DType::kFloat32, {Dim::symbolic("batch"), Dim(3), Dim()});
  add("ids", DType::kInt64, {Dim::symbolic("batch"), Dim::symbolic("seq")});
  return g;
}

TEST(Bench, ResolveBatchShapes) {
  auto g = graph();
  auto missing = resolve_batch_shapes(*g, {}, 4);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--shape x=4,3,<d2>"), std::string::npos) << missing.status().message();
  auto r = resolve_batch_shapes(*g, {{"x", {1, 3, 5}}, {"ids", {2, 128}}}, 8);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->second, 8);
  EXPECT_EQ(r->first.at("x"), (std::vector<int64_t>{8, 3, 5}));    // --batch replaces dim 0 of --shape
  EXPECT_EQ(r->first.at("ids"), (std::vector<int64_t>{8, 128}));
  auto own = resolve_batch_shapes(*g, {{"x", {1, 3, 5}}, {"ids", {2, 128}}}, std::nullopt);
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->second, 1);  // the first input's dim 0
  auto unknown = resolve_batch_shapes(*g, {{"nope", {1}}}, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'nope'"), std::string::npos);

  ir::Graph fixed;
  ir::Value* v = fixed.add_value("img");
  v->dtype = DType::kFloat32;
  v->shape = Shape{Dim(1), Dim(3)};
  v->is_graph_input = true;
  fixed.inputs.push_back(v);
  ir::Value* s = fixed.add_value("scale");
  s->dtype = DType::kFloat32;
  s->shape = Shape{};
  s->is_graph_input = true;
  fixed.inputs.push_back(s);
  auto same = resolve_batch_shapes(fixed, {}, 1);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->first.at("scale").empty());  // a scalar has no batch dim
  auto other = resolve_batch_shapes(fixed, {}, 2);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("'img' has a fixed batch dimension"), std::string::npos);
}

TEST(Bench, RatiosMatchBatches) {
  BatchResult f1, f8, p8;
  f1.batch = 1;
  f8.batch = 8;
  f8.stats = compute_stats({2, 4}, 8, 1);
  f8.peak_rss_bytes = 100;
  p8.batch = 8;
  p8.stats = compute_stats({4, 8}, 8, 4);
  p8.peak_rss_bytes = 200;
  auto r = compute_ratios({f1, f8}, {p8});
  ASSERT_EQ(r.size(), 1u);  // batch 1 has no peer figures
  EXPECT_EQ(r[0].batch, 8);
  EXPECT_DOUBLE_EQ(r[0].median_latency, 0.5);
  EXPECT_DOUBLE_EQ(r[0].throughput, 4.0);
  EXPECT_DOUBLE_EQ(r[0].peak_memory, 0.5);
}

TEST(Bench, CompareOutputs) {
  std::vector<std::pair<std::string, Tensor>> ours = {{"y", Tensor::from_vector<float>({1, -4, 2})},
                                                       {"z", Tensor::from_vector<float>({0})}};
  std::vector<std::pair<std::string, Tensor>> theirs = {{"z", Tensor::from_vector<float>({0})},
                                                         {"y", Tensor::from_vector<float>({1, -4.5, 2})}};
  auto a = compare_outputs(8, ours, theirs);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->batch, 8);
  EXPECT_EQ(a->outputs_compared, 2);
  EXPECT_DOUBLE_EQ(a->max_abs_diff, 0.5);
  EXPECT_DOUBLE_EQ(a->max_rel_diff, 0.5 / 4.5);
  EXPECT_EQ(a->worst_output, "y");
  EXPECT_TRUE(a->problem.empty());
  auto missing = compare_outputs(1, ours, {theirs[1]});
  ASSERT_TRUE(missing.ok());
  EXPECT_NE(missing->problem.find("no output 'z'"), std::string::npos);
  auto shape = compare_outputs(1, {{"y", Tensor::from_vector<float>({1, 2})}}, theirs);
  ASSERT_TRUE(shape.ok());
  EXPECT_NE(shape->problem.find("'y'"), std::string::npos);
  auto nan = compare_outputs(1, {{"y", Tensor::from_vector<float>({NAN, -4.5, 2})}}, {theirs[1]});
  ASSERT_TRUE(nan.ok());
  EXPECT_NE(nan->problem.find("NaN"), std::string::npos);
}

TEST(Bench, ParsePeerJson) {
  auto p = parse_peer_json(R"({"name": "onnxruntime", "version": "1.2", "results": [
      {"batch": 2, "latencies_ms": [3, 1, 2], "total_s": 0.01, "peak_rss_bytes": 1048576,
       "input_shapes": {"x": [2, 16]}}]})");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->results.size(), 1u);
  EXPECT_DOUBLE_EQ(p->results[0].stats.median_ms, 2);  // recomputed by ferry, not taken from the peer
  EXPECT_DOUBLE_EQ(p->results[0].stats.throughput, 2 * 3 / 0.01);
  EXPECT_EQ(p->results[0].input_shapes.at("x"), (std::vector<int64_t>{2, 16}));
  for (const char* bad : {"", "[]", "{\"name\": 1}", R"({"name": "x", "results": [{"batch": 1}]})",
                          R"({"name": "x", "results": [{"batch": 1, "latencies_ms": []}]})",
                          R"({"name": "x", "results": [{"batch": 1, "latencies_ms": [-1]}]})"})
    EXPECT_FALSE(parse_peer_json(bad).ok()) << bad;
}

// Rounds split a measurement policy so that together they meet it.
TEST(Bench, RoundPoliciesSplitTheMeasurement) {
  const LoopPolicy d = default_measure_policy();  // 10 iterations and 3 s, stops at 30 s
  int64_t iters = 0;
  double secs = 0, cap = 0;
  for (int i = 0; i < 3; ++i) {
    LoopPolicy r = round_policy(d, 3, i);
    iters += r.min_iterations;
    secs += r.min_seconds;
    cap += r.max_seconds;
    EXPECT_EQ(r.max_iterations, 0);
  }
  EXPECT_EQ(iters, 10);
  EXPECT_DOUBLE_EQ(secs, 3.0);
  EXPECT_DOUBLE_EQ(cap, 30.0);
  EXPECT_EQ(round_policy(d, 3, 0).min_iterations, 4);  // the remainder goes to the first rounds

  const LoopPolicy exact = measure_policy(int64_t{5}, std::nullopt);
  EXPECT_EQ(effective_rounds(exact, 3), 3);
  int64_t total = 0;
  for (int i = 0; i < 3; ++i) {
    LoopPolicy r = round_policy(exact, 3, i);
    EXPECT_EQ(r.min_iterations, r.max_iterations);
    total += r.max_iterations;
  }
  EXPECT_EQ(total, 5);
  // Fewer iterations than rounds: one round per iteration; never fewer than one round.
  EXPECT_EQ(effective_rounds(measure_policy(int64_t{2}, std::nullopt), 5), 2);
  EXPECT_EQ(effective_rounds(d, 0), 1);
  EXPECT_EQ(round_policy(measure_policy(int64_t{2}, std::nullopt), 2, 1).max_iterations, 1);
}

}  // namespace
}  // namespace ferry::tools
