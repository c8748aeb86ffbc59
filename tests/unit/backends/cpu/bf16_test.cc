// Native bf16 Conv / MatMul / Gemm on the cpu backend (precision bf16): the kernels oneDNN picks are
// bf16 ones when the CPU has avx512_bf16, and the results agree with the reference backend's emulation
// (fp32 arithmetic on the same bf16-rounded values) to within what the accumulation order can change:
// one bf16 rounding step of the output, plus fp32 noise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include <omp.h>

#include "backends/cpu/isa_probe.h"
#include "backends/cpu/kernel_choices.h"
#include "backends/cpu/cpu_backend.h"
#include "ir/graph.h"
#include "ops/op.h"
#include "runtime/executor.h"
#include "runtime/session.h"

namespace ferry::backends::cpu {
namespace {

// Conv (3x3, bias, relu, residual) read by a depthwise conv (bf16 storage passed on) and a MaxPool (which
// gets float32), a Linear (constant B, batch dims folded), a batched
// MatMul of two activations with a transposed operand (attention scores) and a Gemm with transB. Then the
// pooling paths of bf16 storage, with static shapes so the outputs live in the planned arena: a MaxPool
// between two convs (pools bf16, hands bf16 on), and a 1x1 conv whose GlobalAveragePool (bf16, then
// rounded) feeds a Flatten, where the RoundFloat converts to float32 in memory the plan shares with its
// input. Last, two attentions (scale, softmax, times V; one with an additive mask) that the optimizer
// fuses into FusedAttention, which runs in bf16 too. And a Linear read only by another Linear: the
// first writes its result in bf16, which the RoundFloat between them hands on to the second as it is.
// And the head split of a transformer: Q, K, V transposed from [B, S, heads, D], which the Transposes
// write in bf16 for the attention to read as it is.
const char* kModel = R"(opset "" 17
graph g (%x: float32[2,16,12,12], %q: float32[2,3,10,24], %k: float32[2,3,10,24], %v: float32[2,3,10,24], %hs: float32[2,10,3,24])
  const %w: float32[16,16,3,3] = uniform(-0.3, 0.3)
  const %bias: float32[16] = uniform(-1.0, 1.0)
  const %dw: float32[16,1,3,3] = uniform(-0.5, 0.5)
  const %lin: float32[24,40] = uniform(-0.4, 0.4)
  const %gw: float32[7,40] = uniform(-0.4, 0.4)
  const %gb: float32[7] = uniform(-1.0, 1.0)
  const %perm_shape: int64[2] = [60, 40]
  const %w2: float32[32,16,1,1] = uniform(-0.5, 0.5)
  const %w3: float32[16,16,3,3] = uniform(-0.3, 0.3)
  const %scale: float32[] = [4.0]
  const %mask: float32[1,1,10,10] = uniform(-2.0, 0.0)
  const %lin2a: float32[24,24] = uniform(-0.4, 0.4)
  const %lin3: float32[24,8] = uniform(-0.4, 0.4)
  %c = Conv(%x, %w, %bias) {pads=[1,1,1,1]}  # conv
  %r = Relu(%c)  # relu
  %s = Add(%r, %x)  # residual
  %d = Conv(%s, %dw) {group=16, pads=[1,1,1,1]}  # depthwise
  %mp = MaxPool(%s) {kernel_shape=[2,2], strides=[2,2]}  # pool
  %kt = Transpose(%k) {perm=[0,1,3,2]}  # kt
  %att = MatMul(%q, %kt)  # scores
  %l = MatMul(%q, %lin)  # linear
  %flat = Reshape(%l, %perm_shape)  # flat
  %gm = Gemm(%flat, %gw, %gb) {transB=1}  # gemm
  %mp2 = MaxPool(%s) {kernel_shape=[3,3], strides=[2,2], pads=[1,1,1,1]}  # pool2
  %c3 = Conv(%mp2, %w3) {pads=[1,1,1,1]}  # conv_after_pool
  %c2 = Conv(%s, %w2)  # conv1x1
  %gap = GlobalAveragePool(%c2)  # gap
  %gf = Flatten(%gap)  # gap_flat
  %kt2 = Transpose(%k) {perm=[0,1,3,2]}  # kt2
  %qk = MatMul(%q, %kt2)  # qk
  %qks = Div(%qk, %scale)  # qk_scaled
  %pr = Softmax(%qks) {axis=-1}  # softmax
  %y = MatMul(%pr, %v)  # pv
  %kt3 = Transpose(%k) {perm=[0,1,3,2]}  # kt3
  %qk3 = MatMul(%q, %kt3)  # qk3
  %qk3s = Div(%qk3, %scale)  # qk3_scaled
  %qk3m = Add(%qk3s, %mask)  # qk3_masked
  %pr3 = Softmax(%qk3m) {axis=-1}  # softmax3
  %y3 = MatMul(%pr3, %v)  # pv3
  %h = MatMul(%v, %lin2a)  # chain_first
  %h2 = MatMul(%h, %lin3)  # chain_second
  %hq = Transpose(%hs) {perm=[0,2,1,3]}  # head_q
  %hk = Transpose(%hs) {perm=[0,2,3,1]}  # head_kt
  %hv = Transpose(%hs) {perm=[0,2,1,3]}  # head_v
  %hqk = MatMul(%hq, %hk)  # hqk
  %hqks = Div(%hqk, %scale)  # hqk_scaled
  %hp = Softmax(%hqks) {axis=-1}  # hsoftmax
  %hy = MatMul(%hp, %hv)  # hpv
  return %d, %att, %gm, %mp, %c3, %gf, %y, %y3, %h2, %hy
)";

std::unique_ptr<runtime::Session> open(const std::string& backend, const char* model = kModel) {
  auto m = ir::parse_model(model);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  runtime::SessionOptions so;
  so.backend = backend;
  so.opt_level = 2;  // conv + relu + add fused: its result goes to the depthwise conv in bf16 storage
  so.precision.mode = passes::PrecisionMode::kBf16;
  // Native bf16 wherever the ISA has it, also where ferry would choose the emulation for speed.
  so.backend_options.cpu.bf16 = Choice::kOn;
  auto s = runtime::Session::from_model(std::move(m).value(), so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

Tensor random(const std::vector<int64_t>& dims, uint32_t seed) {
  Tensor t(DType::kFloat32, dims);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(gen);
  return t;
}

// The cpu session's outputs against the reference backend's emulation on the same feeds: both stored
// the results rounded to bf16, so each value is equal or one bf16 step (2^-8 relative) apart, plus
// `slack_of(output name)` absolute.
std::vector<std::pair<std::string, Tensor>> expect_within_a_bf16_step(runtime::Session& cpu, runtime::Session& ref,
                                                                      const std::map<std::string, Tensor>& feeds,
                                                                      const std::function<double(const std::string&)>& slack_of) {
  // The second run: the first one refines the arena plan (layout.h's slots), the second runs on it.
  EXPECT_TRUE(cpu.run_tensors(feeds).ok());
  auto got = cpu.run_tensors(feeds);
  auto want = ref.run_tensors(feeds);
  EXPECT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_TRUE(want.ok()) << want.status().to_string();
  if (!got.ok() || !want.ok()) return {};
  EXPECT_EQ(got->size(), want->size());
  for (size_t o = 0; o < got->size() && o < want->size(); ++o) {
    const Tensor& a = (*got)[o].second;
    const Tensor& b = (*want)[o].second;
    EXPECT_EQ(a.dims(), b.dims()) << (*got)[o].first;
    if (a.dims() != b.dims()) continue;
    double max_abs = 0, max_err = 0;
    for (int64_t i = 0; i < b.numel(); ++i) max_abs = std::max(max_abs, std::fabs(double(b.data<float>()[i])));
    const double slack = slack_of((*got)[o].first);
    int64_t differ = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float x = a.data<float>()[i], y = b.data<float>()[i];
      // Both sides stored the result rounded to bf16: equal, or one bf16 step (2^-8 relative) apart.
      const double err = std::fabs(double(x) - y);
      max_err = std::max(max_err, err);
      if (err > std::fabs(double(y)) * (1.0 / 128) + slack) ++differ;
    }
    EXPECT_EQ(differ, 0) << (*got)[o].first << ": max error " << max_err;
    EXPECT_LT(max_err, max_abs * 0.02) << (*got)[o].first;
    EXPECT_GT(max_abs, 0.1) << (*got)[o].first << " is not a meaningful comparison";
  }
  return std::move(got).value();
}

TEST(CpuBf16, NativeKernelsMatchTheReferenceEmulation) {
  auto cpu = open("cpu"), ref = open("reference");
  ASSERT_TRUE(cpu && ref);
  const std::map<std::string, Tensor> feeds{
      {"x", random({2, 16, 12, 12}, 1)}, {"q", random({2, 3, 10, 24}, 2)}, {"k", random({2, 3, 10, 24}, 3)},
      {"v", random({2, 3, 10, 24}, 4)}, {"hs", random({2, 10, 3, 24}, 5)}};
  // The bf16 attention also stores its probabilities in bf16 (the reference's fused attention keeps
  // them fp32): each is off by up to 2^-9 of itself, so Y = P V by up to 2^-9 of max |V| (1 here).
  auto got = expect_within_a_bf16_step(*cpu, *ref, feeds, [](const std::string& name) {
    return name == "y" || name == "y3" || name == "hy" ? 1.0 / 256 : 1e-5;
  });
  ASSERT_FALSE(got.empty());
  // The bf16 rounding happened at all: the fp32 result differs.
  auto m = ir::parse_model(kModel);
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.opt_level = 2;
  auto fp32 = runtime::Session::from_model(std::move(m).value(), so);
  ASSERT_TRUE(fp32.ok());
  auto exact = (*fp32)->run_tensors(feeds);
  ASSERT_TRUE(exact.ok());
  EXPECT_NE(std::memcmp((*exact)[0].second.raw(), got[0].second.raw(), got[0].second.numel() * 4), 0);
}

// A transformer MLP's down-projection (K = 4N, with its Bias and the residual Z fused): on AMX with two
// threads or more it runs as one single-threaded matmul per block of rows (matmul_row_blocks.h), the
// last block shorter (301 rows). Read by another Linear, its result stays in bf16 storage; the second
// Linear's N = K is not split. Both agree with the reference emulation as the whole matmul does.
const char* kDownProjection = R"(opset "" 17
graph g (%h: float32[1,301,160], %z: float32[1,301,40])
  const %wd: float32[160,40] = uniform(-0.3, 0.3)
  const %bd: float32[40] = uniform(-1.0, 1.0)
  const %wn: float32[40,40] = uniform(-0.3, 0.3)
  %m = MatMul(%h, %wd)  # down
  %mb = Add(%m, %bd)  # down_bias
  %r = Add(%mb, %z)  # residual
  %n = MatMul(%r, %wn)  # next
  return %r, %n
)";

TEST(CpuBf16, DownProjectionInRowBlocksMatchesTheReferenceEmulation) {
  auto cpu = open("cpu", kDownProjection), ref = open("reference", kDownProjection);
  ASSERT_TRUE(cpu && ref);
  const std::map<std::string, Tensor> feeds{{"h", random({1, 301, 160}, 11)}, {"z", random({1, 301, 40}, 12)}};
  expect_within_a_bf16_step(*cpu, *ref, feeds, [](const std::string&) { return 1e-5; });
  CpuOptions forced;
  forced.bf16 = Choice::kOn;
  if (!choose_bf16(forced).native || !isa_has(dnnl::cpu_isa::avx512_core_amx) || omp_get_max_threads() < 2)
    GTEST_SKIP() << "row blocks need AMX and two threads: the whole matmul ran";
  const auto* plan = cpu->executor().main_plan();
  ASSERT_NE(plan, nullptr);
  std::map<std::string, std::string> kernels;
  for (size_t i = 0; i < cpu->graph().nodes.size(); ++i)
    if (cpu->graph().nodes[i]->op_type == "FusedMatMul" || cpu->graph().nodes[i]->op_type == "MatMul")
      kernels[cpu->graph().nodes[i]->name] = plan->kernels[i]->name();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_NE(kernels["residual"].find("+row_blocks"), std::string::npos) << kernels["residual"];
  EXPECT_EQ(kernels["next"].find("+row_blocks"), std::string::npos) << kernels["next"];
}

TEST(CpuBf16, KernelsAreBf16WhereTheCpuHasIt) {
  CpuOptions forced;
  forced.bf16 = Choice::kOn;
  if (!choose_bf16(forced).native) GTEST_SKIP() << "no native bf16 here: " << choose_bf16(forced).why;
  auto cpu = open("cpu");
  ASSERT_TRUE(cpu);
  const auto* plan = cpu->executor().main_plan();
  ASSERT_NE(plan, nullptr);
  int bf16 = 0, marked = 0;
  const auto& nodes = cpu->graph().nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->attr_string("ferry_precision", "") != "bfloat16") continue;
    ++marked;
    const std::string name = plan->kernels[i]->name();
    if (name.find("bf16") != std::string::npos) ++bf16;
    else ADD_FAILURE() << nodes[i]->name << " runs " << name;
  }
  EXPECT_GE(marked, 10);  // four convs, four matmuls, the gemm, two attentions
  EXPECT_EQ(bf16, marked);
  // The RoundFloats of q, k and v hand their inputs on unrounded: every reader (the matmuls and the
  // attentions, k through its Transposes) converts to bf16 itself. x's is read by a conv: it rounds.
  std::map<std::string, bool> passed_on;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]->op_type == "RoundFloat" && !nodes[i]->inputs.empty())
      passed_on[nodes[i]->inputs[0]->name] = plan->kernels[i]->may_view_input(0);
  for (const char* v : {"q", "k", "v"}) EXPECT_TRUE(passed_on[v]) << v;
  EXPECT_FALSE(passed_on.at("x"));
}

// The choice is explained, and the probe behind it measures something plausible: a positive, finite rate
// ratio within what any x86 core could show (bf16 dot products at 1/8x to 8x the fp32 FMA flop rate).
TEST(CpuBf16, ChoiceHasAReasonAndTheProbeMeasures) {
  const Bf16Choice c = choose_bf16(CpuOptions{});
  EXPECT_FALSE(c.why.empty());
  // Supported but not chosen: the flag that forces native is named.
  if (c.supported && !c.native) {
    EXPECT_NE(c.why.find("--cpu-bf16"), std::string::npos) << c.why;
  }
  // Forced off, the choice says so on every machine.
  CpuOptions off;
  off.bf16 = Choice::kOff;
  EXPECT_FALSE(choose_bf16(off).native);
  if (!c.supported) GTEST_SKIP() << c.why;
  const double r = measure_bf16_dot_vs_fma();
  EXPECT_TRUE(std::isfinite(r)) << r;
  EXPECT_GT(r, 0.125);
  EXPECT_LT(r, 8.0);
}

}  // namespace
}  // namespace ferry::backends::cpu
