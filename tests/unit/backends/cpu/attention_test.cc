// The cpu backend's FusedAttention, Softmax / LogSoftmax and LayerNormalization against the reference
// backend: 3-D and 4-D attention with and without (broadcast) masks, S != T, D != Dv, odd sizes;
// softmax on each axis and with pre-13 2-D coercion; layer norm over one and two trailing axes.
#include <cmath>
#include <limits>

#include "unit/backends/cpu/conv_test_util.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_choices.h"
#include "ops/util/round_float.h"
#include "passes/pass_util.h"

namespace ferry::backends::cpu::testing {
namespace {

// Runs `graph` on both backends and compares output 0 (`kernel_prefix`: what the cpu kernel's name
// starts with, checked when the node's shapes are static).
void compare(ir::Graph& graph, const std::vector<Tensor>& inputs, const std::string& kernel_prefix, const std::string& what) {
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*graph.nodes[0])) << what;
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ((*k)->name().rfind(kernel_prefix, 0), 0u) << (*k)->name();
  auto cpu = run_graph(graph, "cpu", inputs);
  auto ref = run_graph(graph, "reference", inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1e-4f, what);
}

struct AttnCase {
  std::string name;
  std::vector<int64_t> q, k, v, mask;  // mask empty: none
  float scale = 0;                     // 0: attribute absent (1/sqrt(D))
};

void PrintTo(const AttnCase& c, std::ostream* os) { *os << c.name; }

class CpuAttentionCases : public ::testing::TestWithParam<AttnCase> {};

TEST_P(CpuAttentionCases, MatchesReference) {
  const AttnCase& c = GetParam();
  GraphBuilder g;
  std::vector<ir::Value*> ins{g.input("q", c.q), g.input("k", c.k), g.input("v", c.v)};
  std::vector<Tensor> inputs{random_tensor(c.q, 1), random_tensor(c.k, 2), random_tensor(c.v, 3)};
  if (!c.mask.empty()) {
    ins.push_back(g.input("mask", c.mask));
    Tensor m = random_tensor(c.mask, 4);
    // Masked-out keys (-10000) where the mask varies along T. A mask constant along T (a column) adds
    // the same value to a whole score row: -10000 there would only measure fp32 rounding at 1e4.
    if (c.mask.back() > 1)
      for (int64_t i = 0; i < m.numel(); ++i) m.data<float>()[i] = m.data<float>()[i] < -0.6f ? -10000.f : m.data<float>()[i];
    inputs.push_back(m);
  }
  Attrs a;
  if (c.scale != 0) a["scale"] = float_attr(c.scale);
  g.output(g.node("FusedAttention", ins, a, 1, "com.ferry"));
  // Up to 8 query rows (kDirectRows) fp32 attention runs row by row (vec_attention.h).
  compare(g.finish(), inputs, c.q[c.q.size() - 2] <= 8 ? "cpu:vec:attention_rows" : "cpu:onednn:attention", c.name);
}

// The node marked for bf16 as the precision pass marks it, on a CPU with native bf16: Q, K and V are
// rounded to bf16 first (as the pass's RoundFloat nodes do), so the kernel's conversion is exact and the
// reference sees the same values. Its probabilities are stored in bf16 (the reference keeps them fp32):
// each off by up to 2^-9 of itself, Y by up to 2^-9 of max |V| (1 here), so 2^-8 is the bound. Covers
// the grouped whole-item blocks (dense Q and Y blocks) and the row blocks with a tail (Q converted per
// block, Y written dense and copied out).
TEST_P(CpuAttentionCases, Bf16MatchesReferenceOnRoundedInputs) {
  const AttnCase& c = GetParam();
  backends::BackendOptions options;
  options.cpu.bf16 = Choice::kOn;
  if (!choose_bf16(options.cpu).native) GTEST_SKIP() << "no native bf16 here: " << choose_bf16(options.cpu).why;
  GraphBuilder g;
  std::vector<ir::Value*> ins{g.input("q", c.q), g.input("k", c.k), g.input("v", c.v)};
  std::vector<Tensor> inputs{random_tensor(c.q, 1), random_tensor(c.k, 2), random_tensor(c.v, 3)};
  for (Tensor& t : inputs) ops::round_float_array(DType::kBFloat16, t.data<float>(), t.data<float>(), t.numel());
  if (!c.mask.empty()) {
    ins.push_back(g.input("mask", c.mask));
    inputs.push_back(random_tensor(c.mask, 4));
  }
  Attrs a;
  if (c.scale != 0) a["scale"] = float_attr(c.scale);
  a["ferry_precision"] = passes::make_string("bfloat16");
  g.output(g.node("FusedAttention", ins, a, 1, "com.ferry"));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu", options);
  ASSERT_TRUE(backend.ok());
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  auto cpu = run_graph(graph, "cpu", inputs, nullptr, options);
  auto ref = run_graph(graph, "reference", inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1.f / 256, c.name);
  // Prepared at creation for these static shapes: the plan is bf16.
  EXPECT_EQ((*k)->name(), "cpu:onednn:attention:bf16");
}

INSTANTIATE_TEST_SUITE_P(
    FusedAttention, CpuAttentionCases,
    ::testing::Values(AttnCase{"b3d", {6, 9, 16}, {6, 9, 16}, {6, 9, 16}},
                      AttnCase{"b4d", {2, 3, 9, 8}, {2, 3, 9, 8}, {2, 3, 9, 8}, {}, 0.3f},
                      AttnCase{"s_ne_t_d_ne_dv", {2, 2, 10, 8}, {2, 2, 11, 8}, {2, 2, 11, 12}},
                      AttnCase{"s1", {2, 4, 1, 16}, {2, 4, 13, 16}, {2, 4, 13, 16}},
                      // Row by row: one to eight query rows, masks of every broadcast (a causal one
                      // over 8 rows), D and Dv that leave partial vectors (20, 36) or need two chunks
                      // of four vectors (Dv 72, 150), a single key, whisper's cross-attention over 1500
                      // positions.
                      AttnCase{"rows_odd_d", {2, 3, 1, 20}, {2, 3, 9, 20}, {2, 3, 9, 36}, {}, 0.2f},
                      AttnCase{"rows_s5_d_ne_dv", {2, 2, 5, 8}, {2, 2, 11, 8}, {2, 2, 11, 12}},
                      AttnCase{"rows_causal_s8", {2, 3, 8, 16}, {2, 3, 8, 16}, {2, 3, 8, 16}, {8, 8}},
                      AttnCase{"rows_mask_padding", {3, 2, 4, 8}, {3, 2, 11, 8}, {3, 2, 11, 72}, {3, 1, 1, 11}},
                      AttnCase{"rows_mask_full", {2, 3, 3, 16}, {2, 3, 6, 16}, {2, 3, 6, 150}, {2, 3, 3, 6}},
                      AttnCase{"rows_mask_column_3d", {5, 2, 12}, {5, 7, 12}, {5, 7, 5}, {2, 1}},
                      AttnCase{"rows_one_key", {4, 1, 8}, {4, 1, 8}, {4, 1, 8}},
                      AttnCase{"rows_cross_attention", {2, 6, 1, 64}, {2, 6, 1500, 64}, {2, 6, 1500, 64}},
                      AttnCase{"s129", {1, 2, 129, 8}, {1, 2, 129, 8}, {1, 2, 129, 8}},
                      AttnCase{"mask_padding", {2, 3, 11, 8}, {2, 3, 11, 8}, {2, 3, 11, 8}, {2, 1, 1, 11}},
                      AttnCase{"mask_causal", {2, 3, 11, 8}, {2, 3, 11, 8}, {2, 3, 11, 8}, {11, 11}},
                      AttnCase{"mask_full", {2, 3, 10, 8}, {2, 3, 6, 8}, {2, 3, 6, 4}, {2, 3, 10, 6}},
                      AttnCase{"mask_column", {2, 10, 8}, {2, 6, 8}, {2, 6, 8}, {10, 1}},
                      AttnCase{"mask_3d", {4, 11, 8}, {4, 11, 8}, {4, 11, 8}, {4, 1, 11}},
                      // Scores over 8 MB go through in blocks of rows: 80-row blocks and a 10-row tail,
                      // and a batch-3-d case of Dv != D.
                      AttnCase{"long_blocks_and_tail", {1, 4, 810, 16}, {1, 4, 800, 16}, {1, 4, 800, 16}},
                      AttnCase{"long_3d", {3, 1000, 8}, {3, 1000, 8}, {3, 1000, 24}},
                      // Blocks over groups of the flattened batch dims too: 12 heads in two groups of
                      // 6 (112-row blocks, a 76-row tail), and 5 items one at a time.
                      AttnCase{"long_grouped_heads", {6, 2, 300, 8}, {6, 2, 1500, 8}, {6, 2, 1500, 12}},
                      AttnCase{"long_group_of_one", {5, 600, 8}, {5, 2500, 8}, {5, 2500, 8}},
                      // vit_b_16's sequence at batch 6 (D 16): 72 items of 197 x 197 scores, 11 MB: blocks of whole items.
                      AttnCase{"vit_heads", {6, 12, 197, 16}, {6, 12, 197, 16}, {6, 12, 197, 16}}),
    [](const ::testing::TestParamInfo<AttnCase>& i) { return i.param.name; });

// No oneDNN reference primitive runs for any mask broadcast, fp32 or bf16 (oneDNN 2.6 offers some masks
// as a matmul post-op only with its ref:any matmul; the kernel adds those with its loop): oneDNN's verbose
// log of what executed, captured from stdout, names no `ref:` implementation.
TEST(CpuAttention, NoReferencePrimitiveForAnyMask) {
  // 11 query rows: the batched path's primitives (up to 8 run row by row without any).
  const std::vector<std::vector<int64_t>> masks{{2, 1, 1, 11}, {11, 11}, {2, 3, 11, 11}, {1, 1, 11, 11}, {11, 1}};
  for (bool bf16 : {false, true}) {
    backends::BackendOptions options;
    options.cpu.bf16 = Choice::kOn;
    if (bf16 && !choose_bf16(options.cpu).native) continue;
    for (const auto& mask : masks) {
      GraphBuilder g;
      const std::vector<int64_t> d{2, 3, 11, 16};
      std::vector<ir::Value*> ins{g.input("q", d), g.input("k", d), g.input("v", d), g.input("mask", mask)};
      Attrs a;
      if (bf16) a["ferry_precision"] = passes::make_string("bfloat16");
      g.output(g.node("FusedAttention", ins, a, 1, "com.ferry"));
      ir::Graph& graph = g.finish();
      std::vector<Tensor> inputs{random_tensor(d, 1), random_tensor(d, 2), random_tensor(d, 3), random_tensor(mask, 4)};
      dnnl::set_verbose(1);
      ::testing::internal::CaptureStdout();
      auto cpu = run_graph(graph, "cpu", inputs, nullptr, options);
      dnnl::set_verbose(0);
      const std::string log = ::testing::internal::GetCapturedStdout();
      ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
      EXPECT_NE(log.find("onednn_verbose,exec,cpu,matmul"), std::string::npos) << "no matmul ran: nothing checked";
      EXPECT_EQ(log.find(",ref:"), std::string::npos) << (bf16 ? "bf16" : "fp32") << " mask " << dims_to_string(mask) << ":\n" << log;
    }
  }
}

// nan_to_zero (torch 2's Where(IsNaN(P), 0, P) guard, folded in by recognize_attention): a score row
// masked out entirely (-inf) gives NaN probabilities, which become 0, so that row of Y is exactly 0 in
// fp32 and bf16 alike; the other rows match the reference, which applies the same rule.
TEST(CpuAttention, NanToZeroZeroesFullyMaskedRows) {
  const int64_t S = 10, T = 9, D = 8;  // more rows than run row by row: the batched path
  for (bool bf16 : {false, true}) {
    backends::BackendOptions options;
    options.cpu.bf16 = Choice::kOn;
    if (bf16 && !choose_bf16(options.cpu).native) continue;
    GraphBuilder g;
    std::vector<ir::Value*> ins{g.input("q", {2, 3, S, D}), g.input("k", {2, 3, T, D}), g.input("v", {2, 3, T, D}),
                                g.input("mask", {1, 1, S, T})};
    std::vector<Tensor> inputs{random_tensor({2, 3, S, D}, 1), random_tensor({2, 3, T, D}, 2),
                               random_tensor({2, 3, T, D}, 3), random_tensor({1, 1, S, T}, 4)};
    for (int i = 0; i < 3 && bf16; ++i)
      ops::round_float_array(DType::kBFloat16, inputs[i].data<float>(), inputs[i].data<float>(), inputs[i].numel());
    float* m = inputs[3].data<float>();
    for (int64_t j = 0; j < T; ++j) m[2 * T + j] = -std::numeric_limits<float>::infinity();  // row 2: all masked
    m[4 * T + 1] = -std::numeric_limits<float>::infinity();                                 // row 4: one key
    Attrs a;
    a["nan_to_zero"] = passes::make_int(1);
    if (bf16) a["ferry_precision"] = passes::make_string("bfloat16");
    g.output(g.node("FusedAttention", ins, a, 1, "com.ferry"));
    ir::Graph& graph = g.finish();
    auto cpu = run_graph(graph, "cpu", inputs, nullptr, options);
    auto ref = run_graph(graph, "reference", inputs);
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    const Tensor& y = (*cpu)[0];
    for (int64_t item = 0; item < 6; ++item)
      for (int64_t d = 0; d < D; ++d) {
        EXPECT_EQ(y.data<float>()[(item * S + 2) * D + d], 0.f) << "bf16 " << bf16 << " item " << item;
        EXPECT_EQ((*ref)[0].data<float>()[(item * S + 2) * D + d], 0.f) << "item " << item;
      }
    expect_close(y, (*ref)[0], bf16 ? 1.f / 256 : 1e-4f, bf16 ? "nan_to_zero bf16" : "nan_to_zero fp32");
  }
}

// Row by row (a decoder step's one query row): a row whose scores hold a NaN is NaN, or exactly zero with
// nan_to_zero, and so is a row masked out entirely (-inf); the other rows match the reference.
TEST(CpuAttention, DirectRowsFollowTheNanRules) {
  const int64_t S = 1, T = 37, D = 24;
  for (int nan_to_zero : {0, 1}) {
    GraphBuilder g;
    std::vector<ir::Value*> ins{g.input("q", {3, S, D}), g.input("k", {3, T, D}), g.input("v", {3, T, D}),
                                g.input("mask", {3, S, T})};
    std::vector<Tensor> inputs{random_tensor({3, S, D}, 1), random_tensor({3, T, D}, 2), random_tensor({3, T, D}, 3),
                               random_tensor({3, S, T}, 4)};
    inputs[0].data<float>()[1 * D + 5] = std::numeric_limits<float>::quiet_NaN();  // item 1
    for (int64_t j = 0; j < T; ++j) inputs[3].data<float>()[2 * T + j] = -std::numeric_limits<float>::infinity();  // item 2
    Attrs a;
    a["nan_to_zero"] = passes::make_int(nan_to_zero);
    g.output(g.node("FusedAttention", ins, a, 1, "com.ferry"));
    ir::Graph& graph = g.finish();
    auto backend = make_backend("cpu");
    auto k = (*backend)->create_kernel(*graph.nodes[0]);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_EQ((*k)->name(), "cpu:vec:attention_rows");
    auto cpu = run_graph(graph, "cpu", inputs);
    auto ref = run_graph(graph, "reference", inputs);
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    Tensor y = (*cpu)[0], r = (*ref)[0];
    for (int64_t row : {1, 2})
      for (int64_t j = 0; j < D; ++j) {
        const float yj = y.data<float>()[row * D + j];
        if (nan_to_zero) EXPECT_EQ(yj, 0.f) << "row " << row;
        else EXPECT_TRUE(std::isnan(yj)) << "row " << row;
        y.data<float>()[row * D + j] = r.data<float>()[row * D + j] = 0.f;
      }
    expect_close(y, r, 1e-4f, "nan_to_zero " + std::to_string(nan_to_zero));
  }
}

// Unmasked fp32 attention past 8 MB of scores runs in row tiles, one per thread (attention_tiles.h):
// whole tiles with a tail tile (S 810: 128-row tiles and 42 rows), tiles dividing S (1000: 125 rows),
// several items per thread with K and V reordered per item, and Dv != D. With nan_to_zero a Q row
// holding NaN gives a zero Y row as in the reference; without it that row is NaN and no other row is.
TEST(CpuAttention, LongUnmaskedFp32RunsInRowTiles) {
  struct Long {
    std::vector<int64_t> q, k, v;
  };
  for (const Long& c : {Long{{1, 4, 810, 16}, {1, 4, 800, 16}, {1, 4, 800, 16}},
                        Long{{3, 1000, 8}, {3, 1000, 8}, {3, 1000, 24}},
                        Long{{7, 300, 8}, {7, 1500, 8}, {7, 1500, 12}}}) {
    for (int nan_to_zero : {0, 1}) {
      GraphBuilder g;
      std::vector<ir::Value*> ins{g.input("q", c.q), g.input("k", c.k), g.input("v", c.v)};
      std::vector<Tensor> inputs{random_tensor(c.q, 1), random_tensor(c.k, 2), random_tensor(c.v, 3)};
      const int64_t S = c.q[c.q.size() - 2], D = c.q.back(), Dv = c.v.back();
      const int64_t nan_row = S + 5;  // in the second item
      inputs[0].data<float>()[nan_row * D + 3] = std::numeric_limits<float>::quiet_NaN();
      Attrs a;
      a["nan_to_zero"] = passes::make_int(nan_to_zero);
      g.output(g.node("FusedAttention", ins, a, 1, "com.ferry"));
      ir::Graph& graph = g.finish();
      const std::string what = dims_to_string(c.q) + " nan_to_zero " + std::to_string(nan_to_zero);
      auto backend = make_backend("cpu");
      auto k = (*backend)->create_kernel(*graph.nodes[0]);
      ASSERT_TRUE(k.ok()) << k.status().to_string();
      EXPECT_EQ((*k)->name(), "cpu:onednn:attention:tiles") << what;
      auto cpu = run_graph(graph, "cpu", inputs);
      ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
      Tensor y = (*cpu)[0];
      for (int64_t j = 0; j < Dv; ++j) {
        const float yj = y.data<float>()[nan_row * Dv + j];
        if (nan_to_zero) EXPECT_EQ(yj, 0.f) << what;
        else EXPECT_TRUE(std::isnan(yj)) << what;
      }
      // The other rows against the reference (the NaN row set to 0 in both).
      auto ref = run_graph(graph, "reference", inputs);
      ASSERT_TRUE(ref.ok()) << ref.status().to_string();
      Tensor r = (*ref)[0];
      for (int64_t j = 0; j < Dv; ++j) y.data<float>()[nan_row * Dv + j] = r.data<float>()[nan_row * Dv + j] = 0.f;
      expect_close(y, r, 1e-4f, what);
    }
  }
}

TEST(CpuAttention, MismatchedBatchIsAnError) {
  GraphBuilder g;
  ir::Value* y = g.node("FusedAttention", {g.input("q", {2, 4, 8}), g.input("k", {3, 4, 8}), g.input("v", {3, 4, 8})},
                        {}, 1, "com.ferry");
  y->shape = to_shape({2, 4, 8});
  g.output(y);
  auto r = run_graph(g.graph(), "cpu", {random_tensor({2, 4, 8}, 1), random_tensor({3, 4, 8}, 2), random_tensor({3, 4, 8}, 3)});
  EXPECT_FALSE(r.ok());
}

struct SoftmaxCase {
  std::string name;
  std::string op;
  std::vector<int64_t> x;
  int64_t axis;
  int opset;
  // A non-innermost axis runs ferry's strided kernel (oneDNN 2.6 has only its reference one there).
  bool strided = false;
};

class CpuSoftmaxCases : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(CpuSoftmaxCases, MatchesReference) {
  const SoftmaxCase& c = GetParam();
  GraphBuilder g;
  g.output(g.node(c.op, {g.input("x", c.x)}, {{"axis", int_attr(c.axis)}}, c.opset));
  Tensor x = random_tensor(c.x, 5);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 8.f;
  const std::string kernel = c.strided ? (c.op == "Softmax" ? "cpu:vec:softmax_strided" : "cpu:vec:logsoftmax_strided")
                                       : (c.op == "Softmax" ? "cpu:onednn:softmax" : "cpu:onednn:logsoftmax");
  compare(g.finish(), {x}, kernel, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Softmax, CpuSoftmaxCases,
    ::testing::Values(SoftmaxCase{"last", "Softmax", {3, 4, 129}, -1, 13},
                      SoftmaxCase{"axis0", "Softmax", {5, 3, 4}, 0, 13, true},
                      SoftmaxCase{"axis1", "Softmax", {2, 7, 3}, 1, 13, true},
                      SoftmaxCase{"mid4d", "Softmax", {2, 3, 5, 4}, 2, 13, true},
                      // A detector's DFL softmax (inner past one vector, not a multiple of it) and a
                      // softmax over channels large enough to run on every thread.
                      SoftmaxCase{"dfl", "Softmax", {1, 4, 16, 67}, 2, 13, true},
                      SoftmaxCase{"channels", "Softmax", {2, 80, 300}, 1, 13, true},
                      SoftmaxCase{"log_channels", "LogSoftmax", {2, 80, 300}, 1, 13, true},
                      SoftmaxCase{"coerce2d_axis1", "Softmax", {2, 3, 4}, 1, 11},
                      SoftmaxCase{"coerce2d_axis0", "Softmax", {2, 3, 4}, 0, 11},
                      SoftmaxCase{"coerce2d_axis_neg", "Softmax", {2, 3, 4}, -1, 11},
                      SoftmaxCase{"log_last", "LogSoftmax", {4, 33}, -1, 13},
                      SoftmaxCase{"log_axis0", "LogSoftmax", {4, 5, 6}, 0, 13, true},
                      SoftmaxCase{"log_coerce2d", "LogSoftmax", {3, 4, 5}, 1, 11}),
    [](const ::testing::TestParamInfo<SoftmaxCase>& i) { return i.param.name; });

TEST(CpuSoftmax, BadAxisIsAnError) {
  GraphBuilder g;
  ir::Value* y = g.node("Softmax", {g.input("x", {2, 3})}, {{"axis", int_attr(5)}}, 13);
  y->shape = to_shape({2, 3});
  g.output(y);
  auto r = run_graph(g.graph(), "cpu", {random_tensor({2, 3}, 1)});
  EXPECT_FALSE(r.ok());
}

struct LnCase {
  std::string name;
  std::vector<int64_t> x;
  int64_t axis;
  bool bias = true;
};

class CpuLayerNormCases : public ::testing::TestWithParam<LnCase> {};

TEST_P(CpuLayerNormCases, MatchesReference) {
  const LnCase& c = GetParam();
  const size_t a = static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis);
  std::vector<int64_t> nd(c.x.begin() + a, c.x.end());
  GraphBuilder g;
  std::vector<ir::Value*> ins{g.input("x", c.x), g.constant(random_tensor(nd, 6))};
  if (c.bias) ins.push_back(g.constant(random_tensor(nd, 7)));
  g.output(g.node("LayerNormalization", ins, {{"axis", int_attr(c.axis)}, {"epsilon", float_attr(1e-5f)}}, 17));
  Tensor x = random_tensor(c.x, 8);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 3.f * x.data<float>()[i] + 0.5f;
  compare(g.finish(), {x}, "cpu:onednn:layer_norm", c.name);
}

INSTANTIATE_TEST_SUITE_P(LayerNorm, CpuLayerNormCases,
                         ::testing::Values(LnCase{"last_axis", {2, 7, 768}, -1}, LnCase{"odd", {3, 5, 13}, 2},
                                           LnCase{"two_axes", {2, 6, 5, 4}, -2}, LnCase{"no_bias", {4, 33}, 1, false}),
                         [](const ::testing::TestParamInfo<LnCase>& i) { return i.param.name; });

TEST(CpuLayerNorm, StatisticsOutputsGoToTheReference) {
  GraphBuilder g;
  ir::Value* x = g.input("x", {2, 4});
  ir::Value* y = g.node("LayerNormalization", {x, g.constant(random_tensor({4}, 1))}, {}, 17);
  ir::Node* n = y->producer;
  ir::Value* mean = g.graph().add_value("mean");
  mean->dtype = DType::kFloat32;
  mean->producer = n;
  mean->producer_output = 1;
  n->outputs.push_back(mean);
  auto backend = make_backend("cpu");
  EXPECT_FALSE((*backend)->supports(*n));
}

}  // namespace
}  // namespace ferry::backends::cpu::testing
