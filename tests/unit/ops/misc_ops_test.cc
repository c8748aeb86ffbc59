// Behaviour of the ops-misc kernels that the ONNX node tests do not reach: numeric LabelEncoder
// tables, TreeEnsemble aggregation/post-transforms and malformed trees, TfIdf weighting, and the
// error paths of the attention and optimizer ops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::ops {
namespace {

// One node with `n_out` outputs, run directly on its reference kernel.
struct OneNode {
  ir::Graph g;
  ir::Node* node;
  std::vector<RtValue> inputs;

  OneNode(const std::string& op, const std::string& domain, int opset, std::vector<Tensor> in, int n_out) {
    node = g.add_node(op, op + "_0");
    node->domain = domain;
    node->opset = opset;
    for (size_t i = 0; i < in.size(); ++i) {
      ir::Value* v = g.add_value("in" + std::to_string(i));
      v->dtype = in[i].dtype();
      node->inputs.push_back(v);
      inputs.emplace_back(std::move(in[i]));
    }
    for (int i = 0; i < n_out; ++i) {
      ir::Value* v = g.add_value("out" + std::to_string(i));
      v->producer = node;
      v->producer_output = i;
      node->outputs.push_back(v);
    }
  }
  ir::Attribute& attr(const std::string& name, ir::Attribute::Kind kind) {
    ir::Attribute& a = node->attrs[name];
    a.kind = kind;
    return a;
  }
  void ints(const std::string& n, std::vector<int64_t> v) { attr(n, ir::Attribute::Kind::kInts).ints = std::move(v); }
  void floats(const std::string& n, std::vector<float> v) { attr(n, ir::Attribute::Kind::kFloats).floats = std::move(v); }
  void integer(const std::string& n, int64_t v) { attr(n, ir::Attribute::Kind::kInt).i = v; }
  void real(const std::string& n, float v) { attr(n, ir::Attribute::Kind::kFloat).f = v; }
  void str(const std::string& n, std::string v) { attr(n, ir::Attribute::Kind::kString).s = std::move(v); }
  void tensor(const std::string& n, Tensor t) { attr(n, ir::Attribute::Kind::kTensor).t = std::move(t); }

  Result<std::vector<Tensor>> run() {
    const OpSchema* s = OpRegistry::global().find(node->domain, node->op_type, node->opset);
    if (!s) return Status::unsupported("no schema");
    std::vector<const RtValue*> ptrs;
    for (const RtValue& v : inputs) ptrs.push_back(&v);
    KernelContext ctx(*node, ptrs, nullptr);
    FERRY_RETURN_IF_ERROR(s->kernel(ctx));
    std::vector<Tensor> out;
    for (RtValue& v : ctx.outputs()) out.push_back(v.tensor);
    return out;
  }
};

template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

TEST(LabelEncoder, FloatKeysMatchNaNAndSignedZeroAndLastDuplicateWins) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  OneNode n("LabelEncoder", "ai.onnx.ml", 2, {Tensor::from_vector<float>({-0.0f, nan, 1.0f, 2.0f})}, 1);
  n.floats("keys_floats", {0.0f, nan, 1.0f, 1.0f});
  n.ints("values_int64s", {10, 20, 30, 40});
  n.integer("default_int64", 7);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(values<int64_t>((*out)[0]), (std::vector<int64_t>{10, 20, 40, 7}));
}

TEST(LabelEncoder, StringVersionAndKeyTypeMismatchAreErrors) {
  OneNode v1("LabelEncoder", "ai.onnx.ml", 1, {Tensor::from_vector<int64_t>({1})}, 1);
  auto r1 = v1.run();
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().to_string().find("string tensors are not supported"), std::string::npos);

  OneNode mismatch("LabelEncoder", "ai.onnx.ml", 2, {Tensor::from_vector<int32_t>({1})}, 1);
  mismatch.ints("keys_int64s", {1});
  mismatch.floats("values_floats", {1.0f});
  EXPECT_FALSE(mismatch.run().ok());
}

// Two one-split trees on feature 0 (leaves 0/1 and 2/3) writing targets 0 and 1.
OneNode two_trees(const Tensor& x, int64_t aggregate, int64_t post) {
  OneNode n("TreeEnsemble", "ai.onnx.ml", 5, {x}, 1);
  n.integer("n_targets", 2);
  n.integer("aggregate_function", aggregate);
  n.integer("post_transform", post);
  n.ints("tree_roots", {0, 1});
  n.tensor("nodes_modes", Tensor::from_vector<uint8_t>({0, 3}));
  n.ints("nodes_featureids", {0, 0});
  n.tensor("nodes_splits", Tensor::from_vector<float>({0.5f, 0.0f}));
  n.ints("nodes_truenodeids", {0, 2});
  n.ints("nodes_trueleafs", {1, 1});
  n.ints("nodes_falsenodeids", {1, 3});
  n.ints("nodes_falseleafs", {1, 1});
  n.ints("leaf_targetids", {0, 1, 0, 1});
  n.tensor("leaf_weights", Tensor::from_vector<float>({1.0f, 2.0f, 3.0f, 4.0f}));
  return n;
}

TEST(TreeEnsemble, AggregatesAndSoftmax) {
  const Tensor x = Tensor::from_vector<float>({0.25f, 1.0f}, {2, 1});
  // x=0.25: tree 0 -> leaf 0 (target 0, 1), tree 1 (0.25 > 0) -> leaf 2 (target 0, 3)
  // x=1.0: tree 0 -> leaf 1 (target 1, 2), tree 1 -> leaf 2 (target 0, 3)
  auto sum = two_trees(x, 1, 0).run();
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  EXPECT_EQ(values<float>((*sum)[0]), (std::vector<float>{4, 0, 3, 2}));
  auto avg = two_trees(x, 0, 0).run();
  ASSERT_TRUE(avg.ok());
  EXPECT_EQ(values<float>((*avg)[0]), (std::vector<float>{2, 0, 1.5f, 1}));
  auto mx = two_trees(x, 3, 0).run();
  ASSERT_TRUE(mx.ok());
  EXPECT_EQ(values<float>((*mx)[0])[0], 3.0f);
  EXPECT_EQ(values<float>((*mx)[0])[1], -std::numeric_limits<float>::max());
  auto sm = two_trees(x, 1, 1).run();
  ASSERT_TRUE(sm.ok());
  const std::vector<float> p = values<float>((*sm)[0]);
  EXPECT_NEAR(p[0], 1.0 / (1.0 + std::exp(-4.0)), 1e-6);
  EXPECT_NEAR(p[0] + p[1], 1.0, 1e-6);
}

TEST(TreeEnsemble, RejectsOutOfRangeBranchesAndTargets) {
  const Tensor x = Tensor::from_vector<float>({0.25f}, {1, 1});
  OneNode bad_leaf = two_trees(x, 1, 0);
  bad_leaf.ints("nodes_falsenodeids", {1, 9});
  EXPECT_FALSE(bad_leaf.run().ok());
  OneNode bad_target = two_trees(x, 1, 0);
  bad_target.integer("n_targets", 1);
  EXPECT_FALSE(bad_target.run().ok());
  OneNode bad_rank = two_trees(Tensor::from_vector<float>({0.25f}), 1, 0);
  EXPECT_FALSE(bad_rank.run().ok());
}

TEST(TfIdfVectorizer, IdfAndTfidfUseOutputPositionWeights) {
  for (const char* mode : {"IDF", "TFIDF"}) {
    OneNode n("TfIdfVectorizer", "", 9, {Tensor::from_vector<int64_t>({4, 4, 5, 9})}, 1);
    n.str("mode", mode);
    n.integer("min_gram_length", 1);
    n.integer("max_gram_length", 1);
    n.integer("max_skip_count", 0);
    n.ints("ngram_counts", {0});
    n.ints("ngram_indexes", {1, 0});
    n.ints("pool_int64s", {4, 5});
    n.floats("weights", {0.5f, 2.0f});
    auto out = n.run();
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    // counts: token 5 -> column 0 (once), token 4 -> column 1 (twice)
    const std::vector<float> expect = std::string(mode) == "IDF" ? std::vector<float>{0.5f, 2.0f} : std::vector<float>{0.5f, 4.0f};
    EXPECT_EQ(values<float>((*out)[0]), expect) << mode;
  }
}

TEST(ArrayFeatureExtractor, NegativeIndexCountsFromTheEndAndOutOfRangeFails) {
  OneNode ok("ArrayFeatureExtractor", "ai.onnx.ml", 1,
             {Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}), Tensor::from_vector<int64_t>({-1, 0})}, 1);
  auto out = ok.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<int32_t>((*out)[0]), (std::vector<int32_t>{3, 1, 6, 4}));
  OneNode bad("ArrayFeatureExtractor", "ai.onnx.ml", 1,
              {Tensor::from_vector<float>({1, 2, 3}), Tensor::from_vector<int64_t>({-4})}, 1);
  auto r = bad.run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("Y[0] = -4"), std::string::npos);
}

TEST(Optimizers, MomentumFirstStepTakesTheWholeGradient) {
  OneNode n("Momentum", "ai.onnx.preview.training", 1,
            {Tensor::scalar<double>(0.5), Tensor::scalar<int64_t>(0), Tensor::from_vector<double>({1.0}),
             Tensor::from_vector<double>({2.0}), Tensor::from_vector<double>({3.0})},
            2);
  n.real("alpha", 0.5f);
  n.real("beta", 0.25f);
  n.real("norm_coefficient", 0.0f);
  n.str("mode", "standard");
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  // v = 0.5 * 3 + 1 * 2 = 3.5; x = 1 - 0.5 * 3.5
  EXPECT_DOUBLE_EQ(values<double>((*out)[1])[0], 3.5);
  EXPECT_DOUBLE_EQ(values<double>((*out)[0])[0], 1.0 - 0.5 * 3.5);
}

TEST(Optimizers, RejectsBadInputGroups) {
  OneNode n("Adagrad", "ai.onnx.preview.training", 1,
            {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(1), Tensor::from_vector<float>({1, 2}),
             Tensor::from_vector<float>({1}), Tensor::from_vector<float>({1, 2})},
            2);
  EXPECT_FALSE(n.run().ok());  // G's shape differs from X's
}

TEST(LinearAttention, LinearRuleForbidsDecay) {
  const Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 4});
  OneNode n("LinearAttention", "", 27, {t, t, t, Tensor(), t}, 2);
  n.node->inputs[3] = nullptr;  // past_state omitted
  n.inputs[3] = RtValue::none();
  n.integer("q_num_heads", 2);
  n.integer("kv_num_heads", 2);
  n.str("update_rule", "linear");
  auto r = n.run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("forbids the decay"), std::string::npos);
}

TEST(CausalConvWithState, PastStateShapeIsChecked) {
  OneNode n("CausalConvWithState", "", 27,
            {Tensor::from_vector<float>({1, 2, 3}, {1, 1, 3}), Tensor::from_vector<float>({1, 1, 1}, {1, 1, 3}),
             Tensor::from_vector<float>({0}), Tensor::from_vector<float>({0}, {1, 1, 1})},
            2);
  auto r = n.run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("past_state"), std::string::npos);
}

TEST(CausalConvWithState, KernelOfOneGivesEmptyState) {
  OneNode n("CausalConvWithState", "", 27,
            {Tensor::from_vector<float>({1, 2, 3}, {1, 1, 3}), Tensor::from_vector<float>({2}, {1, 1, 1})}, 2);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(values<float>((*out)[0]), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ((*out)[1].dims(), (std::vector<int64_t>{1, 1, 0}));
}

}  // namespace
}  // namespace ferry::ops
