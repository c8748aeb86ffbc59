// The cpu backend's LSTM / GRU / RNN (GEMMs, rnn.cc) against the reference kernel over the ONNX
// features: directions, batch-first layout, biases, sequence_lens, initial states, peepholes, clip,
// input_forget and both GRU reset variants; and the kernel is the cpu one, not a reference fallback.
#include <gtest/gtest.h>
#include <omp.h>

#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/isa_probe.h"
#include "backends/cpu/rnn_onednn.h"

namespace ferry::backends::cpu::testing {
namespace {

struct RnnCase {
  std::string op;
  std::string direction = "forward";
  bool batch_first = false, bias = true, lens = false, initial = false, peepholes = false;
  float clip = 0;
  bool input_forget = false, linear_before_reset = false;
  int64_t batch = 3;
  int64_t hidden = 6;  // 40: two threads' blocks of units (32 and 8), each a part of its last panel
  int threads = 0;     // 1: one thread runs every direction (else OpenMP's count)
  std::string name() const {
    return op + "_" + direction + (batch_first ? "_batch_first" : "") + (bias ? "" : "_nobias") + (lens ? "_lens" : "") +
           (initial ? "_initial" : "") + (peepholes ? "_peep" : "") + (clip > 0 ? "_clip" : "") +
           (input_forget ? "_input_forget" : "") + (linear_before_reset ? "_lbr" : "") +
           (batch != 3 ? "_b" + std::to_string(batch) : "") + (hidden != 6 ? "_h" + std::to_string(hidden) : "") +
           (threads ? "_t" + std::to_string(threads) : "");
  }
};

void check(const RnnCase& c) {
  const int64_t S = 5, B = c.batch, I = 7, H = c.hidden;
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  const int64_t G = c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1;
  GraphBuilder g;
  std::vector<int64_t> xdims = c.batch_first ? std::vector<int64_t>{B, S, I} : std::vector<int64_t>{S, B, I};
  std::vector<ir::Value*> ins{g.input("x", xdims), g.constant(random_tensor({D, G * H, I}, 2)),
                              g.constant(random_tensor({D, G * H, H}, 3))};
  ins.push_back(c.bias ? g.constant(random_tensor({D, 2 * G * H}, 4)) : nullptr);
  std::vector<int32_t> lens{5, 2, 0, 5, 3, 1, 4, 5};
  lens.resize(B, 5);
  ins.push_back(c.lens ? g.constant(Tensor::from_vector<int32_t>(lens, {B})) : nullptr);
  std::vector<int64_t> sdims = c.batch_first ? std::vector<int64_t>{B, D, H} : std::vector<int64_t>{D, B, H};
  ins.push_back(c.initial ? g.constant(random_tensor(sdims, 5)) : nullptr);
  if (c.op == "LSTM") {
    ins.push_back(c.initial ? g.constant(random_tensor(sdims, 6)) : nullptr);
    ins.push_back(c.peepholes ? g.constant(random_tensor({D, 3 * H}, 7)) : nullptr);
  }
  while (!ins.empty() && !ins.back()) ins.pop_back();
  Attrs a{{"hidden_size", int_attr(H)}, {"direction", string_attr(c.direction)}};
  if (c.batch_first) a["layout"] = int_attr(1);
  if (c.clip > 0) a["clip"] = float_attr(c.clip);
  if (c.input_forget) a["input_forget"] = int_attr(1);
  if (c.linear_before_reset) a["linear_before_reset"] = int_attr(1);
  ir::Value* y = g.node(c.op, ins, a, 14);
  ir::Node* n = y->producer;
  for (int i = 1; i < (c.op == "LSTM" ? 3 : 2); ++i) {
    ir::Value* o = g.graph().add_value(n->name + "_state" + std::to_string(i));
    o->dtype = DType::kFloat32;
    o->producer = n;
    o->producer_output = i;
    n->outputs.push_back(o);
  }
  for (ir::Value* o : n->outputs) g.output(o);
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*graph.nodes[0])) << c.name();
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ((*k)->name().rfind("cpu:vec:rnn_team:", 0), 0u) << (*k)->name();
  Tensor x = random_tensor(xdims, 1);
  const int threads = omp_get_max_threads();
  if (c.threads) omp_set_num_threads(c.threads);
  auto cpu = run_graph(graph, "cpu", {x});
  omp_set_num_threads(threads);
  auto ref = run_graph(graph, "reference", {x});
  ASSERT_TRUE(cpu.ok()) << c.name() << ": " << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << c.name() << ": " << ref.status().to_string();
  ASSERT_EQ(cpu->size(), ref->size());
  for (size_t i = 0; i < cpu->size(); ++i) expect_close((*cpu)[i], (*ref)[i], 2e-5f, c.name() + " output " + std::to_string(i));
}

std::vector<RnnCase> cases() {
  std::vector<RnnCase> v;
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (bool bf : {false, true}) {
        RnnCase c{op, dir, bf};
        v.push_back(c);
        c.lens = c.initial = true;
        v.push_back(c);
      }
  // Full-length sequences with initial states and peepholes in both layouts and every direction (at
  // batch 16 oneDNN's LSTM, below it the thread team).
  for (const char* dir : {"forward", "reverse", "bidirectional"})
    for (bool bf : {false, true})
      for (int64_t batch : {3, 16}) {
        RnnCase c{"LSTM", dir, bf, true, false, true, true};
        c.batch = batch;
        v.push_back(c);
      }
  v.push_back({"LSTM", "bidirectional", true, false, false, true, false});
  v.push_back({"LSTM", "bidirectional", false, true, true, true, true, 0.8f, false});
  v.push_back({"LSTM", "forward", true, false, false, true, false, 0, true});
  v.push_back({"GRU", "bidirectional", false, true, true, true, false, 0.5f, false, true});
  v.push_back({"GRU", "reverse", true, true, false, false, false, 0, false, true});
  v.push_back({"RNN", "forward", false, false, true, false, false, 0.3f});
  // Batch 6: the LSTMs with clip or sequence_lens (which oneDNN's LSTM does not take), both GRU reset
  // variants, both directions at once.
  for (RnnCase c : std::vector<RnnCase>{{"GRU", "forward", false, true, false, true},
                                         {"GRU", "bidirectional", true, true, true, true, false, 0, false, true},
                                         {"GRU", "reverse", false, true, false, false, false, 0, false, true},
                                         {"RNN", "bidirectional", false, true, true, true},
                                         {"LSTM", "forward", false, true, true, true, true},
                                         {"LSTM", "bidirectional", true, true, false, true, false, 0.9f}}) {
    c.batch = 6;
    v.push_back(c);
  }
  // The thread team's blocks: 40 hidden units (two blocks, partial panels) at batch 1, 9 and 13 (past
  // a register tile of rows), every cell and both GRU variants; one thread running both directions.
  for (RnnCase c : std::vector<RnnCase>{{"GRU", "forward", false, true, true, true, false, 0, false, true},
                                         {"GRU", "bidirectional", true, true, false, true},
                                         {"LSTM", "forward", false, true, true, true, true, 0.7f},
                                         {"LSTM", "reverse", true, true, false, true, true},
                                         {"RNN", "forward", false, true, true, true}})
    for (int64_t batch : {1, 9, 13}) {
      c.hidden = 40;
      c.batch = batch;
      v.push_back(c);
    }
  for (RnnCase c : std::vector<RnnCase>{{"LSTM", "bidirectional", false, true, true, true, true},
                                         {"GRU", "bidirectional", true, true, true, true}}) {
    c.threads = 1;
    v.push_back(c);
  }
  return v;
}

class CpuRnnCases : public ::testing::TestWithParam<RnnCase> {};
TEST_P(CpuRnnCases, MatchesReference) { check(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Rnn, CpuRnnCases, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<RnnCase>& i) { return i.param.name(); });

// oneDNN's LSTM is taken only with its brgemm kernel, which AVX-512 CPUs have (its ref RNN elsewhere
// is not: rnn.cc's GEMM path runs there); the kernel names the path its last run took.
TEST(CpuRnn, OnednnLstmOnlyWithBrgemm) {
  LstmShape s;
  s.seq = 5, s.batch = 3, s.input = 7, s.hidden = 6, s.dirs = 2, s.peepholes = true;
  std::unique_ptr<OnednnLstm> l = OnednnLstm::create(s);
  if (isa_has(dnnl::cpu_isa::avx512_core)) {
    ASSERT_NE(l, nullptr);
    EXPECT_NE(l->impl().find("brgemm"), std::string::npos) << l->impl();
  } else {
    EXPECT_EQ(l, nullptr) << l->impl();
  }
}

// W and R as graph inputs (not initializers): one executor runs the LSTM with two sets of weights, and
// each run matches the reference, so the packed input projection and the team's packed R follow W and R
// instead of keeping the first run's.
TEST(CpuRnn, WeightsThatAreInputsArePackedEveryRun) {
  const int64_t S = 6, B = 2, I = 24, H = 20, G = 4;
  GraphBuilder g;
  ir::Value* y = g.node("LSTM", {g.input("x", {S, B, I}), g.input("w", {1, G * H, I}), g.input("r", {1, G * H, H})},
                        {{"hidden_size", int_attr(H)}}, 14);
  g.output(y);
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  ASSERT_TRUE(backend.ok());
  runtime::Executor ex(std::move(backend).value());
  ASSERT_TRUE(ex.prepare(graph).ok());
  for (uint32_t seed : {10u, 20u}) {
    const std::vector<Tensor> inputs{random_tensor({S, B, I}, seed), random_tensor({1, G * H, I}, seed + 1),
                                     random_tensor({1, G * H, H}, seed + 2)};
    runtime::Scope scope;
    for (size_t i = 0; i < inputs.size(); ++i) scope.values[graph.inputs[i]] = inputs[i];
    ASSERT_TRUE(ex.run_graph(graph, scope, nullptr).ok());
    auto want = run_graph(graph, "reference", inputs);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    auto got = scope.values[graph.outputs[0]].tensor.plain();
    ASSERT_TRUE(got.ok());
    expect_close(*got, (*want)[0], 2e-5f, "weights seed " + std::to_string(seed));
  }
}

// Custom activations stay on the reference kernel (the cpu one implements the defaults only).
TEST(CpuRnn, OtherActivationsAreNotTaken) {
  GraphBuilder g;
  ir::Value* y = g.node("RNN", {g.input("x", {2, 1, 3}), g.constant(random_tensor({1, 4, 3}, 2)),
                                g.constant(random_tensor({1, 4, 4}, 3))},
                        {{"hidden_size", int_attr(4)}, {"activations", strings_attr({"Relu"})}}, 14);
  g.output(y);
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  EXPECT_FALSE((*backend)->supports(*graph.nodes[0]));
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
