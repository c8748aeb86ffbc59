// NCHW <-> NHWC Transposes as views (transpose.cc): a ConvNeXt block (depthwise conv, to NHWC, a Linear
// on the channels, back to NCHW, layer scale, residual) computes what the reference backend does, and
// both Transposes hand on their input's bytes instead of copying them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>

#include "ir/graph.h"
#include "ops/op.h"
#include "runtime/executor.h"
#include "runtime/session.h"

namespace ferry::backends::cpu {
namespace {

const char* kBlock = R"(opset "" 17
graph g (%x: float32[2,32,7,7])
  const %dw: float32[32,1,7,7] = uniform(-0.3, 0.3)
  const %db: float32[32] = uniform(-0.5, 0.5)
  const %w: float32[32,32] = uniform(-0.3, 0.3)
  const %b: float32[32] = uniform(-0.5, 0.5)
  const %scale: float32[32,1,1] = uniform(0.5, 1.5)
  %d = Conv(%x, %dw, %db) {group=32, pads=[3,3,3,3]}  # dwconv
  %t1 = Transpose(%d) {perm=[0,2,3,1]}  # to_nhwc
  %m = MatMul(%t1, %w)  # linear
  %mb = Add(%m, %b)  # bias
  %t2 = Transpose(%mb) {perm=[0,3,1,2]}  # to_nchw
  %s = Mul(%t2, %scale)  # layer_scale
  %y = Add(%s, %x)  # residual
  %z = Relu(%y)  # out
  return %z
)";

std::unique_ptr<runtime::Session> open(const std::string& backend, Choice own_depthwise = Choice::kAuto) {
  auto m = ir::parse_model(kBlock);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  runtime::SessionOptions so;
  so.backend = backend;
  so.opt_level = 2;
  so.backend_options.cpu.own_depthwise = own_depthwise;
  auto s = runtime::Session::from_model(std::move(m).value(), so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(CpuChannelsLastView, ConvNextBlockMatchesReferenceWithoutCopies) {
  // The depthwise conv must write channels-last for to_nhwc to be a view: oneDNN does with AVX-512
  // (brdgmm, nhwc), not on AVX2 (jit_dw, nChw8c), so the backend's own channels-last depthwise kernel
  // (opt-in, depthwise_conv.cc) takes it here on every CPU.
  auto cpu = open("cpu", Choice::kOn), ref = open("reference");
  ASSERT_TRUE(cpu && ref);
  Tensor x(DType::kFloat32, {2, 32, 7, 7});
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(gen);

  // Which Transposes returned their input's bytes (same storage address), and in which layout.
  std::map<std::string, bool> same_bytes;
  std::map<std::string, bool> plain_out;
  cpu->set_node_hook(
      [&](const ir::Node& node, const std::vector<const RtValue*>& inputs, const std::vector<RtValue>& outputs) {
        if (node.op_type != "Transpose") return;
        same_bytes[node.name] = inputs[0]->tensor.raw() == outputs[0].tensor.raw();
        plain_out[node.name] = outputs[0].tensor.is_plain();
      },
      runtime::HookMode::kObserve);
  for (int run = 0; run < 2; ++run) {  // the second run uses the refined memory plan
    auto got = cpu->run_tensors({{"x", x}});
    auto want = ref->run_tensors({{"x", x}});
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    const Tensor& a = (*got)[0].second;
    const Tensor& b = (*want)[0].second;
    ASSERT_EQ(a.dims(), b.dims());
    ASSERT_TRUE(a.is_plain());
    double max_err = 0, max_abs = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      max_err = std::max(max_err, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
      max_abs = std::max(max_abs, std::fabs(double(b.data<float>()[i])));
    }
    EXPECT_LT(max_err, 1e-4 * std::max(1.0, max_abs)) << "run " << run;
    EXPECT_GT(max_abs, 0.5);
  }
  // Every planned value used its arena slot, the channels-last ones (the conv's, the Mul's) included:
  // a blocked result of plain size is written into the planned memory (layout.h, new_output).
  EXPECT_TRUE(cpu->executor().plan_refined());
  EXPECT_EQ(cpu->executor().dropped_values(), 0);
  ASSERT_EQ(same_bytes.size(), 2u);
  // The depthwise conv keeps channels-last (acdb) for its layout-aware reader, so to_nhwc is a view;
  // to_nchw views the Linear's plain NHWC result as channels-last NCHW for the Mul.
  EXPECT_TRUE(same_bytes["to_nhwc"]);
  EXPECT_TRUE(plain_out["to_nhwc"]);
  EXPECT_TRUE(same_bytes["to_nchw"]);
  EXPECT_FALSE(plain_out["to_nchw"]);
}

}  // namespace
}  // namespace ferry::backends::cpu
