// ops-control kernels on cases the ONNX node tests do not reach: bad inputs give errors (never
// crashes), sequence_lens in the recurrent ops, DFT round trips, reproducible seeded random ops.
#include <gtest/gtest.h>

#include "unit/ops/op_test_util.h"

#include <cmath>

#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::ops {
namespace {

using namespace testing;

// Runs one node; `omitted[i]` leaves input i out.
OpRun run_op(const std::string& op, const std::vector<RtValue>& inputs, Attrs attrs = {}, int opset = 23,
             int num_outputs = 1, const std::vector<bool>& omitted = {}) {
  return run_node(op, inputs, std::move(attrs), opset, num_outputs, omitted);
}

TEST(Sequence, PositionsOutOfRangeAreErrors) {
  RtValue seq = RtValue::make_sequence({Tensor::from_vector<float>({1}), Tensor::from_vector<float>({2})});
  auto at = run_op("SequenceAt", {seq, Tensor::scalar<int64_t>(2)}, {}, 11);
  EXPECT_FALSE(at.status.ok());
  EXPECT_NE(at.status.message().find("position 2"), std::string::npos);
  auto ok = run_op("SequenceAt", {seq, Tensor::scalar<int64_t>(-1)}, {}, 11);
  ASSERT_TRUE(ok.status.ok());
  EXPECT_EQ(ok.outputs[0].tensor.data<float>()[0], 2.0f);
  auto ins = run_op("SequenceInsert", {seq, Tensor::from_vector<float>({3}), Tensor::scalar<int64_t>(5)}, {}, 11);
  EXPECT_FALSE(ins.status.ok());
  auto erase = run_op("SequenceErase", {RtValue::make_sequence({})}, {}, 11);
  EXPECT_FALSE(erase.status.ok());
  auto concat = run_op("ConcatFromSequence", {RtValue::make_sequence({})}, {{"axis", int_attr(0)}}, 11);
  EXPECT_FALSE(concat.status.ok());
  auto not_seq = run_op("SequenceLength", {Tensor::from_vector<float>({1})}, {}, 11);
  EXPECT_FALSE(not_seq.status.ok());
}

TEST(Sequence, SplitLengthsMustCoverTheAxis) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {6});
  auto bad = run_op("SplitToSequence", {x, Tensor::from_vector<int64_t>({2, 2})}, {}, 11);
  EXPECT_FALSE(bad.status.ok());
  auto chunks = run_op("SplitToSequence", {x, Tensor::scalar<int64_t>(4)}, {}, 11);
  ASSERT_TRUE(chunks.status.ok()) << chunks.status.to_string();
  ASSERT_EQ(chunks.outputs[0].sequence.size(), 2u);
  EXPECT_EQ(chunks.outputs[0].sequence[1].dim(0), 2);  // the last chunk is shorter
  auto stacked = run_op("ConcatFromSequence", {chunks.outputs[0]}, {{"axis", int_attr(0)}, {"new_axis", int_attr(1)}}, 11);
  EXPECT_FALSE(stacked.status.ok());  // different shapes cannot be stacked
}

TEST(Attention, BadShapesAreErrors) {
  Tensor q(DType::kFloat32, {1, 2, 3, 4}), k(DType::kFloat32, {1, 3, 3, 4}), v(DType::kFloat32, {1, 3, 3, 4});
  auto heads = run_op("Attention", {q, k, v});
  EXPECT_FALSE(heads.status.ok());  // 2 q heads are not a multiple of 3 kv heads
  Tensor q3(DType::kFloat32, {1, 3, 8});
  auto packed = run_op("Attention", {q3, q3, q3});
  EXPECT_FALSE(packed.status.ok());  // 3-D inputs need the head counts
  Tensor q4(DType::kFloat32, {1, 1, 2, 4});
  Tensor long_mask(DType::kFloat32, {2, 5});
  auto mask = run_op("Attention", {q4, q4, q4, long_mask});
  EXPECT_FALSE(mask.status.ok());
}

TEST(Attention, FullyMaskedRowsAreZero) {
  Tensor q = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor mask = Tensor::from_vector<bool>({false, false, true, true}, {2, 2});
  auto r = run_op("Attention", {q, q, q, mask});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  const float* y = r.outputs[0].tensor.data<float>();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_GT(y[2], 0.0f);
}

TEST(Recurrent, SequenceLensStopEachRow) {
  // RNN with identity-like weights: 1 input, 1 hidden, Relu so the state accumulates inputs.
  Tensor x = Tensor::from_vector<float>({1, 10, 2, 20, 3, 30}, {3, 2, 1});
  Tensor w = Tensor::from_vector<float>({1}, {1, 1, 1});
  Tensor r = Tensor::from_vector<float>({1}, {1, 1, 1});
  Tensor lens = Tensor::from_vector<int32_t>({3, 1});
  ir::Attribute acts;
  acts.kind = ir::Attribute::Kind::kStrings;
  acts.strings = {"Relu"};
  auto out = run_op("RNN", {x, w, r, RtValue(), lens}, {{"hidden_size", int_attr(1)}, {"activations", acts}}, 14, 2,
                    {false, false, false, true, false});
  ASSERT_TRUE(out.status.ok()) << out.status.to_string();
  const float* y = out.outputs[0].tensor.data<float>();  // [seq, dirs, batch, hidden]
  EXPECT_FLOAT_EQ(y[0], 1);
  EXPECT_FLOAT_EQ(y[1], 10);
  EXPECT_FLOAT_EQ(y[2], 3);
  EXPECT_FLOAT_EQ(y[3], 0);  // row 1 stopped after one step
  EXPECT_FLOAT_EQ(y[4], 6);
  const float* yh = out.outputs[1].tensor.data<float>();
  EXPECT_FLOAT_EQ(yh[0], 6);
  EXPECT_FLOAT_EQ(yh[1], 10);
}

TEST(Recurrent, BadAttributesAreErrors) {
  Tensor x(DType::kFloat32, {2, 1, 3}), w(DType::kFloat32, {1, 4, 3}), r(DType::kFloat32, {1, 4, 4});
  EXPECT_FALSE(run_op("RNN", {x, w, r}, {{"direction", string_attr("sideways")}}, 14).status.ok());
  ir::Attribute acts;
  acts.kind = ir::Attribute::Kind::kStrings;
  acts.strings = {"NoSuchActivation"};
  EXPECT_FALSE(run_op("RNN", {x, w, r}, {{"activations", acts}}, 14).status.ok());
  Tensor lens = Tensor::from_vector<int32_t>({7});
  EXPECT_FALSE(run_op("RNN", {x, w, r, RtValue(), lens}, {}, 14, 1, {false, false, false, true, false}).status.ok());
  Tensor w_gru(DType::kFloat32, {1, 5, 3});
  EXPECT_FALSE(run_op("GRU", {x, w_gru, r}, {}, 14).status.ok());
}

TEST(Signal, DftRoundTripsAndPads) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4, 1});
  auto fwd = run_op("DFT", {x}, {{"axis", int_attr(1)}}, 17);
  ASSERT_TRUE(fwd.status.ok()) << fwd.status.to_string();
  EXPECT_FLOAT_EQ(fwd.outputs[0].tensor.data<float>()[0], 10);  // DC bin
  auto inv = run_op("DFT", {fwd.outputs[0]}, {{"axis", int_attr(1)}, {"inverse", int_attr(1)}}, 17);
  ASSERT_TRUE(inv.status.ok());
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(inv.outputs[0].tensor.data<float>()[2 * i], i + 1, 1e-5);
  auto padded = run_op("DFT", {x, Tensor::scalar<int64_t>(8)}, {{"axis", int_attr(1)}}, 17);
  ASSERT_TRUE(padded.status.ok());
  EXPECT_EQ(padded.outputs[0].tensor.dim(1), 8);
  auto bad_axis = run_op("DFT", {x}, {{"axis", int_attr(2)}}, 17);
  EXPECT_FALSE(bad_axis.status.ok());
}

TEST(Signal, BadSizesAreErrors) {
  EXPECT_FALSE(run_op("HannWindow", {Tensor::scalar<int64_t>(-3)}, {}, 17).status.ok());
  auto one = run_op("HannWindow", {Tensor::scalar<int64_t>(1)}, {{"periodic", int_attr(0)}}, 17);
  ASSERT_TRUE(one.status.ok());
  EXPECT_FALSE(std::isnan(one.outputs[0].tensor.data<float>()[0]));
  // Edge frequencies past the Nyquist rate put filter edges outside the spectrogram.
  auto mel = run_op("MelWeightMatrix", {Tensor::scalar<int32_t>(8), Tensor::scalar<int32_t>(16), Tensor::scalar<int32_t>(8000),
                                        Tensor::scalar<float>(0), Tensor::scalar<float>(100000)}, {}, 17);
  EXPECT_FALSE(mel.status.ok());
  Tensor sig(DType::kFloat32, {1, 4, 1});
  EXPECT_FALSE(run_op("STFT", {sig, Tensor::scalar<int64_t>(1), RtValue(), Tensor::scalar<int64_t>(8)}, {}, 17, 1,
                      {false, false, true, false}).status.ok());
}

TEST(Random, SeededDrawsRepeat) {
  std::map<std::string, ir::Attribute> attrs{{"shape", ints_attr({16})}, {"seed", float_attr(3)}};
  auto a = run_op("RandomUniform", {}, attrs, 22);
  auto b = run_op("RandomUniform", {}, attrs, 22);
  ASSERT_TRUE(a.status.ok() && b.status.ok());
  EXPECT_TRUE(a.outputs[0].tensor.same_as(b.outputs[0].tensor));
  for (int i = 0; i < 16; ++i) {
    const float v = a.outputs[0].tensor.data<float>()[i];
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
  }
  EXPECT_FALSE(run_op("Bernoulli", {Tensor::from_vector<float>({1.5f})}, {}, 22).status.ok());
}

TEST(ControlFlow, NeedsARunner) {
  auto r = run_op("If", {Tensor::scalar<bool>(true)}, {}, 16);
  EXPECT_FALSE(r.status.ok());  // no branches: an error, not a crash
}

}  // namespace
}  // namespace ferry::ops
