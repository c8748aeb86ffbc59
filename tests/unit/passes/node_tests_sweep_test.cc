// The level-2 pipeline on the ONNX node tests (including the *_expanded function bodies, which are
// small real graphs: If/Loop, Shape chains, constant folding): wherever the unoptimized
// model runs on the reference backend, the optimized one must run too and agree (1e-5 relative).
// Skipped when the node-test data (~/.cache/ferry/onnx-node-tests/<version>) is missing.
#include <filesystem>
#include <regex>

#include "frontend/onnx/import.h"
#include "pass_test_util.h"

namespace ferry::passes::testing {
namespace {

namespace fs = std::filesystem;

std::optional<fs::path> node_test_root() {
  const char* home = std::getenv("HOME");
  fs::path base = fs::path(home ? home : "") / ".cache/ferry/onnx-node-tests";
  if (!fs::exists(base)) return std::nullopt;
  for (const auto& e : fs::directory_iterator(base))
    if (e.is_directory()) return e.path();
  return std::nullopt;
}

TEST(NodeTestSweep, OptimizedGraphsAgreeWithUnoptimized) {
  auto root = node_test_root();
  if (!root) GTEST_SKIP() << "no ONNX node-test data";
  // Every node test except the random ops (unseeded: two runs differ even without passes).
  const std::regex random_ops("^test_(bernoulli|random|multinomial).*");
  int compared = 0, rewritten = 0;
  for (const auto& e : fs::directory_iterator(*root)) {
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, random_ops)) continue;
    const fs::path model = e.path() / "model.onnx", set = e.path() / "test_data_set_0";
    auto a = frontend::load_onnx(model.string());
    auto b = frontend::load_onnx(model.string());
    if (!a.ok() || !b.ok()) continue;  // unsupported by the importer: the conformance manifest's business
    std::map<std::string, RtValue> feeds;
    const ir::Graph& g = *(*a)->graph;
    bool tensors_only = true;
    for (size_t k = 0; fs::exists(set / ("input_" + std::to_string(k) + ".pb")) && k < g.inputs.size(); ++k) {
      auto v = frontend::read_value_pb((set / ("input_" + std::to_string(k) + ".pb")).string(), g.inputs[k]->kind);
      if (!v.ok()) tensors_only = false;
      else feeds[g.inputs[k]->name] = *v;
    }
    if (!tensors_only) continue;
    auto ref = runtime::Session::from_model(std::move(a).value());
    if (!ref.ok()) continue;
    auto ref_out = (*ref)->run(feeds);
    if (!ref_out.ok()) continue;  // fails unoptimized too
    SCOPED_TRACE(name);
    OptimizeOptions o;
    o.opt_level = 2;
    std::vector<PassReport> report;
    Status st = optimize(**b, o, &report);
    int changes = 0;
    for (const auto& r : report) changes += r.changes;
    rewritten += changes > 0;
    ASSERT_TRUE(st.ok()) << st.to_string();
    auto opt = runtime::Session::from_model(std::move(b).value());
    ASSERT_TRUE(opt.ok()) << opt.status().to_string();
    auto opt_out = (*opt)->run(feeds);
    ASSERT_TRUE(opt_out.ok()) << opt_out.status().to_string();
    ASSERT_EQ(opt_out->size(), ref_out->size());
    for (size_t k = 0; k < ref_out->size(); ++k) {
      const RtValue &p = (*opt_out)[k].second, &q = (*ref_out)[k].second;
      EXPECT_EQ((*opt_out)[k].first, (*ref_out)[k].first);
      if (!p.is_tensor() || !q.is_tensor()) continue;
      // A fused op rounds once where the unfused chain rounded every intermediate: in bfloat16/float16
      // that is an ulp or so (0.4% / 0.05%), in float32 nothing measurable.
      const DType dt = q.tensor.dtype();
      const double rtol = dt == DType::kBFloat16 ? 1e-2 : dt == DType::kFloat16 ? 2e-3 : 1e-5;
      expect_close({p.tensor}, {q.tensor}, rtol);
    }
    ++compared;
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(rewritten, 200);
  std::cout << compared << " node tests compared, " << rewritten << " of them rewritten by the passes\n";
}

}  // namespace
}  // namespace ferry::passes::testing
