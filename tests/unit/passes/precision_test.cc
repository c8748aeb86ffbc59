// passes/precision: which nodes each mode puts in fp16/bf16, keep lists (by name, by OpType::X, by a
// name fused away), keep-io-types, the lists' files and their errors, and the numbers a session computes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "ir/graph.h"
#include "ops/op.h"
#include "passes/pipeline.h"
#include "passes/precision.h"
#include "runtime/session.h"

namespace ferry::passes {
namespace {

const char* kChain = R"(opset "" 17
graph g (%x: float32[2,4])
  const %w: float32[4,4] = uniform(-1.0, 1.0)
  const %w2: float32[4,4] = uniform(-1.0, 1.0)
  %a = MatMul(%x, %w)  # mm1
  %b = Relu(%a)  # relu
  %c = Exp(%b)  # exp
  %d = MatMul(%c, %w2)  # mm2
  %e = Add(%d, %b)  # add
  return %e
)";

std::unique_ptr<ir::Model> parse(const char* text) {
  auto m = ir::parse_model(text);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE(ops::infer_graph(*(*m)->graph).ok());
  return std::move(m).value();
}

// The node named `node_name`, and whether its output is rounded: the pass then gives the node an
// internal output (no ONNX name) that a RoundFloat turns into the named tensor. (A RoundFloat that only
// rounds an fp32 node's output for a low-precision reader leaves the node's output named.)
struct Seen {
  const ir::Node* node = nullptr;
  bool rounded = false;
};
Seen writer_of(const ir::Graph& g, const std::string& node_name) {
  Seen s;
  for (const auto& n : g.nodes)
    if (n->name == node_name) s.node = n.get();
  if (!s.node) return s;
  for (const auto& n : g.nodes)
    if (n->op_type == "RoundFloat" && n->inputs[0] == s.node->outputs[0] && s.node->outputs[0]->onnx_name.empty())
      s.rounded = true;
  return s;
}

// Whether node `name` reads only rounded float inputs (constants rounded, values from a RoundFloat).
bool reads_rounded(const ir::Graph& g, const std::string& name, const std::set<std::string>& low_names) {
  const ir::Node* n = writer_of(g, name).node;
  for (const ir::Value* v : n->inputs) {
    if (!v) continue;
    if (v->is_constant()) {
      const float* p = v->initializer.data<float>();
      for (int64_t i = 0; i < v->initializer.numel(); ++i)
        if (float16::to_float(float16::from_float(p[i])) != p[i]) return false;
    } else if (!v->producer || (v->producer->op_type != "RoundFloat" && !low_names.count(v->producer->name))) {
      return false;
    }
  }
  return true;
}

PrecisionReport apply(ir::Model& m, PrecisionOptions o) {
  PrecisionReport r;
  Status st = apply_precision(m, o, &r);
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_TRUE(ir::verify(*m.graph).ok());
  return r;
}

TEST(Precision, Fp32ChangesNothing) {
  auto m = parse(kChain);
  const size_t nodes = m->graph->nodes.size();
  PrecisionReport r = apply(*m, {});
  EXPECT_EQ(m->graph->nodes.size(), nodes);
  EXPECT_EQ(r.low_nodes, 0);
}

TEST(Precision, Fp16PutsEveryFloatNodeInFp16) {
  auto m = parse(kChain);
  PrecisionOptions o;
  o.mode = PrecisionMode::kFp16;
  PrecisionReport r = apply(*m, o);
  EXPECT_EQ(r.low_nodes, 5);
  const ir::Graph& g = *m->graph;
  std::set<std::string> low = {"mm1", "relu", "exp", "mm2", "add"};
  for (const char* n : {"mm1", "exp", "mm2", "add"}) {
    EXPECT_TRUE(writer_of(g, n).rounded) << n << "'s output must be rounded";
    EXPECT_TRUE(reads_rounded(g, n, low)) << n;
  }
  // Relu only selects values: fed fp16 it writes fp16, no rounding needed.
  EXPECT_FALSE(writer_of(g, "relu").rounded);
  // x rounded once on entry; 4 outputs rounded.
  EXPECT_EQ(r.rounding_nodes, 5);
  // The graph output keeps its name and ONNX name, and is what the last RoundFloat writes.
  EXPECT_EQ(g.outputs[0]->name, "e");
  EXPECT_EQ(g.outputs[0]->onnx_name, "e");
  EXPECT_EQ(g.outputs[0]->producer->op_type, "RoundFloat");
}

TEST(Precision, MixedFollowsTheLists) {
  auto m = parse(kChain);
  PrecisionOptions o;
  o.mode = PrecisionMode::kMixedFp16;
  PrecisionReport r = apply(*m, o);
  const ir::Graph& g = *m->graph;
  // MatMul allow -> fp16; Relu follows mm1 -> fp16; Exp deny -> fp32; Add follows (both inputs fp16).
  EXPECT_TRUE(writer_of(g, "mm1").rounded);
  EXPECT_FALSE(writer_of(g, "exp").rounded);
  EXPECT_TRUE(reads_rounded(g, "mm2", {"mm1", "relu"}));  // exp's fp32 output is rounded before mm2
  EXPECT_TRUE(writer_of(g, "add").rounded);
  EXPECT_EQ(r.low_nodes, 4);
  EXPECT_EQ(r.fp32_nodes, 1);
}

TEST(Precision, KeepListByNameAndByType) {
  {
    auto m = parse(kChain);
    PrecisionOptions o;
    o.mode = PrecisionMode::kMixedFp16;
    o.keep_fp32 = {"mm2", "no_such_node"};
    PrecisionReport r = apply(*m, o);
    EXPECT_FALSE(writer_of(*m->graph, "mm2").rounded);
    EXPECT_FALSE(writer_of(*m->graph, "add").rounded) << "add follows mm2, which is fp32 now";
    EXPECT_EQ(r.kept, std::vector<std::string>{"mm2"});
    EXPECT_EQ(r.unmatched, std::vector<std::string>{"no_such_node"});
  }
  {
    auto m = parse(kChain);
    PrecisionOptions o;
    o.mode = PrecisionMode::kFp16;
    o.keep_fp32 = {"OpType::MatMul"};
    PrecisionReport r = apply(*m, o);
    EXPECT_FALSE(writer_of(*m->graph, "mm1").rounded);
    EXPECT_FALSE(writer_of(*m->graph, "mm2").rounded);
    EXPECT_TRUE(writer_of(*m->graph, "exp").rounded);
    EXPECT_EQ(r.kept.size(), 2u);
  }
}

TEST(Precision, KeepListMatchesNodesFusedAway) {
  // MatMul + bias Add + Relu fuse into one FusedMatMul named after the Relu; "mm" still keeps it.
  auto m = parse(R"(opset "" 17
graph g (%x: float32[2,4])
  const %w: float32[4,3] = uniform(-1.0, 1.0)
  const %bias: float32[3] = uniform(-1.0, 1.0)
  %a = MatMul(%x, %w)  # mm
  %b = Add(%a, %bias)  # bias_add
  %y = Relu(%b)  # relu
  return %y
)");
  OptimizeOptions oo;
  oo.opt_level = 2;
  ASSERT_TRUE(optimize(*m, oo).ok());
  ASSERT_EQ(m->graph->nodes.size(), 1u);
  ASSERT_EQ(m->graph->nodes[0]->op_type, "FusedMatMul");
  PrecisionOptions o;
  o.mode = PrecisionMode::kFp16;
  o.keep_fp32 = {"mm"};
  PrecisionReport r = apply(*m, o);
  EXPECT_EQ(r.low_nodes, 0);
  EXPECT_EQ(r.kept, std::vector<std::string>{"relu"});
  EXPECT_TRUE(r.unmatched.empty());
  // OpType::Gemm / OpType::MatMul match the fused op as well.
  auto m2 = parse(kChain);
  o.keep_fp32 = {"OpType::FusedMatMul"};
  EXPECT_TRUE(apply(*m2, o).unmatched.size() == 1) << "no FusedMatMul in an unoptimized graph";
}

TEST(Precision, KeepIoTypesLeavesGraphOutputsUnrounded) {
  auto m = parse(kChain);
  PrecisionOptions o;
  o.mode = PrecisionMode::kFp16;
  o.keep_io_types = true;
  apply(*m, o);
  EXPECT_EQ(m->graph->outputs[0]->producer->name, "add");
  EXPECT_TRUE(writer_of(*m->graph, "mm2").rounded);
}

TEST(Precision, Bf16MarksConvAndMatMulForNativeCompute) {
  auto m = parse(kChain);
  PrecisionOptions o;
  o.mode = PrecisionMode::kBf16;
  PrecisionReport r = apply(*m, o);
  EXPECT_TRUE(r.native_bf16);
  EXPECT_EQ(writer_of(*m->graph, "mm1").node->attr_string("ferry_precision", ""), "bfloat16");
  EXPECT_EQ(writer_of(*m->graph, "exp").node->attr_string("ferry_precision", ""), "");
  for (const auto& n : m->graph->nodes)
    if (n->op_type == "RoundFloat") EXPECT_EQ(n->attr_int("to", 0), 16);
}

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Precision, KeepListFile) {
  auto entries = read_keep_list(write_file("keep.txt", "# header\nmm1\n  OpType::Exp  # exp too\n\n"));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  EXPECT_EQ(*entries, (std::vector<std::string>{"mm1", "OpType::Exp"}));
  auto bad = read_keep_list(write_file("bad_keep.txt", "mm1\nOpType::\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("bad_keep.txt:2"), std::string::npos) << bad.status().to_string();
  EXPECT_FALSE(read_keep_list("/nonexistent/keep.txt").ok());
}

TEST(Precision, MixlistFileEditsTheLists) {
  auto m = parse(kChain);
  PrecisionOptions o;
  o.mode = PrecisionMode::kMixedFp16;
  // ATC's names: Exp onto the white list, MatMul onto the black list.
  o.mixlist_path = write_file("mix.json", R"({"white-list": {"to-add": ["Exp"]}, "black-list": {"to-add": ["MatMul"]}})");
  apply(*m, o);
  EXPECT_FALSE(writer_of(*m->graph, "mm1").rounded);
  EXPECT_TRUE(writer_of(*m->graph, "exp").rounded);
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {"{\"allow\": {\"to-add\": [\"Exp\"]},\n \"nope\": {}}", "'nope'"},
           {"{\"allow\": {\"add\": [\"Exp\"]}}", "'allow.add'"},
           {"{\"allow\": {\"to-add\": [1]}}", "not an op type"},
           {"{\n\"allow\": [\n", "mix_bad.json:"}}) {
    auto m2 = parse(kChain);
    o.mixlist_path = write_file("mix_bad.json", text);
    Status st = apply_precision(*m2, o, nullptr);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_NE(st.to_string().find(needle), std::string::npos) << st.to_string();
  }
  o.mode = PrecisionMode::kFp16;  // a mixlist without a mixed mode is a mistake worth saying
  EXPECT_FALSE(apply_precision(*parse(kChain), o, nullptr).ok());
}

TEST(Precision, Fp16SessionMatchesRoundTripEmulationAndOverflowsToInf) {
  // y = x * w + x with x, w chosen so that fp16 rounding matters, and one product beyond 65504.
  auto m = parse(R"(opset "" 17
graph g (%x: float32[4])
  const %w: float32[4] = [0.1, 3.14159, 1000.0, -7.77]
  %p = Mul(%x, %w)  # mul
  %y = Add(%p, %x)  # add
  return %y
)");
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.precision.mode = PrecisionMode::kFp16;
  auto s = runtime::Session::from_model(std::move(m), so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::vector<float> x = {1.2345f, -0.3333f, 80.0f, 2.71828f}, w = {0.1f, 3.14159f, 1000.0f, -7.77f};
  auto out = (*s)->run_tensors({{"x", Tensor::from_vector<float>(x, {4})}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  auto h = [](float v) { return float16::to_float(float16::from_float(v)); };
  for (int i = 0; i < 4; ++i) {
    const float want = h(h(h(x[i]) * h(w[i])) + h(x[i]));
    const float got = (*out)[0].second.data<float>()[i];
    if (std::isinf(want)) {
      EXPECT_TRUE(std::isinf(got)) << i;
    } else {
      EXPECT_EQ(got, want) << i;
    }
  }
  EXPECT_TRUE(std::isinf((*out)[0].second.data<float>()[2])) << "80 * 1000 = 80000 > 65504 must overflow to inf";
}

}  // namespace
}  // namespace ferry::passes
