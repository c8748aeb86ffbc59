// The pieces of `ferry run` that need no model file: argument parsing, name sanitizing, seeded random
// tensors, input preparation against a hand-built graph, summaries, and output writing.
#include "tools/run_inputs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/npy.h"

namespace ferry::tools {
namespace {

namespace fs = std::filesystem;

TEST(RunInputs, ParseShapeArg) {
  auto a = parse_shape_arg("x=1,3,224,224");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "x");
  EXPECT_EQ(a->second, (std::vector<int64_t>{1, 3, 224, 224}));
  auto b = parse_shape_arg("a=b=2, 3");  // names may hold '=': split at the last one
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, "a=b");
  EXPECT_EQ(b->second, (std::vector<int64_t>{2, 3}));
  auto s = parse_shape_arg("scalar=");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->second.empty());
  for (const char* bad : {"x", "=1,2", "x=1,,2", "x=1,", "x=-1", "x=1.5", "x=99999999999999999999", "x=a"})
    EXPECT_FALSE(parse_shape_arg(bad).ok()) << bad;
}

TEST(RunInputs, ParseInputArg) {
  auto a = parse_input_arg("x=dir/a=b.npy");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "x");
  EXPECT_EQ(a->second, "dir/a=b.npy");
  EXPECT_FALSE(parse_input_arg("x").ok());
  EXPECT_FALSE(parse_input_arg("x=").ok());
  EXPECT_FALSE(parse_input_arg("=f.npy").ok());
}

TEST(RunInputs, SanitizeName) {
  EXPECT_EQ(sanitize_name("out/y:0"), "out_y_0");
  EXPECT_EQ(sanitize_name("../../etc/passwd"), ".._.._etc_passwd");
  EXPECT_EQ(sanitize_name(".."), "__");
  EXPECT_EQ(sanitize_name("."), "_");
  EXPECT_EQ(sanitize_name(""), "_");
  EXPECT_EQ(sanitize_name("a-b_c.D9"), "a-b_c.D9");
  EXPECT_EQ(sanitize_name("\xc3\xa9t\xc3\xa9"), "__t__");
}

TEST(RunInputs, RandomTensorsAreSeededAndInRange) {
  auto a = random_tensor(DType::kFloat32, {1000}, 42, RandomDist::kUniform);
  auto b = random_tensor(DType::kFloat32, {1000}, 42, RandomDist::kUniform);
  auto c = random_tensor(DType::kFloat32, {1000}, 43, RandomDist::kUniform);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(a->same_as(*b));
  EXPECT_FALSE(a->same_as(*c));
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_GE(a->data<float>()[i], -1.0f);
    EXPECT_LT(a->data<float>()[i], 1.0f);
  }
  auto n = random_tensor(DType::kFloat64, {20000}, 1, RandomDist::kNormal);
  ASSERT_TRUE(n.ok());
  double sum = 0, sq = 0;
  for (double x : n->to_double_vector()) sum += x, sq += x * x;
  EXPECT_NEAR(sum / 20000, 0.0, 0.05);
  EXPECT_NEAR(sq / 20000, 1.0, 0.05);
  auto i = random_tensor(DType::kInt64, {500}, 3, RandomDist::kUniform);
  for (int64_t v : i->to_int64_vector()) EXPECT_TRUE(v >= 0 && v < 10);
  auto h = random_tensor(DType::kFloat16, {4}, 3, RandomDist::kUniform);
  EXPECT_TRUE(h.ok());
  auto t = random_tensor(DType::kBool, {64}, 3, RandomDist::kUniform);
  int64_t ones = 0;
  for (int64_t v : t->to_int64_vector()) ones += v;
  EXPECT_GT(ones, 10);
  EXPECT_LT(ones, 54);
  EXPECT_FALSE(random_tensor(DType::kFloat32, {int64_t{1} << 40}, 0, RandomDist::kUniform).ok());
}

// A graph with inputs a: float32[batch,3], b: int64[batch], c: float32[2] (and an initializer).
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
  add("a", DType::kFloat32, {Dim::symbolic("batch"), Dim(3)});
  add("b", DType::kInt64, {Dim::symbolic("batch")});
  add("c", DType::kFloat32, {Dim(2)});
  ir::Value* w = add("w", DType::kFloat32, {Dim(1)});
  w->initializer = Tensor::from_vector<float>({1});
  return g;
}

TEST(RunInputs, PrepareInputs) {
  auto g = graph();
  InputOptions o;
  auto missing = prepare_inputs(*g, o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().to_string().find("--shape a=<batch>,3"), std::string::npos) << missing.status().to_string();
  o.shapes["a"] = {4, 3};
  auto r = prepare_inputs(*g, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 3u) << "initializers are not inputs to feed";
  EXPECT_EQ((*r)[0].tensor.describe(), "float32[4,3]");
  EXPECT_EQ((*r)[1].tensor.describe(), "int64[4]") << "'batch' comes from a's --shape";
  EXPECT_EQ((*r)[2].source, "random");
  // Feeding c from a file leaves a and b as they were (per-input streams).
  std::string dir = (fs::temp_directory_path() / ("ferry_run_inputs_" + std::to_string(getpid()))).string();
  fs::create_directories(dir);
  ASSERT_TRUE(write_npy(dir + "/c.npy", Tensor::from_vector<float>({5, 6})).ok());
  o.files["c"] = dir + "/c.npy";
  auto r2 = prepare_inputs(*g, o);
  ASSERT_TRUE(r2.ok()) << r2.status().to_string();
  EXPECT_TRUE((*r2)[0].tensor.same_as((*r)[0].tensor));
  EXPECT_EQ((*r2)[2].tensor.to_double_vector(), (std::vector<double>{5, 6}));
  o.shapes["a"] = {4, 2};
  EXPECT_FALSE(prepare_inputs(*g, o).ok()) << "static dim contradicted";
  o.shapes["a"] = {4, 3};
  o.files["zzz"] = dir + "/c.npy";
  EXPECT_FALSE(prepare_inputs(*g, o).ok()) << "unknown input";
  o.files.erase("zzz");
  o.inputs_path = dir;  // has c.npy only: a and b are missing
  auto r3 = prepare_inputs(*g, o);
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.status().to_string().find("a.npy"), std::string::npos) << r3.status().to_string();
  fs::remove_all(dir);
}

TEST(RunInputs, SummarizeTensor) {
  EXPECT_EQ(summarize_tensor(Tensor::from_vector<float>({1, -2, 4})), "float32[3] min -2 max 4 mean 1 [1, -2, 4]");
  EXPECT_EQ(summarize_tensor(Tensor(DType::kInt32, {0, 2})), "int32[0,2] (empty)");
  std::string s = summarize_tensor(Tensor::from_vector<float>({NAN, 1, 3, INFINITY}), 2);
  EXPECT_NE(s.find("nan 1"), std::string::npos) << s;
  EXPECT_NE(s.find("inf 1"), std::string::npos) << s;
  EXPECT_NE(s.find("mean 2"), std::string::npos) << s;
  EXPECT_NE(s.find(", ...]"), std::string::npos) << s;
  EXPECT_NE(summarize_tensor(Tensor::from_vector<bool>({true, false})).find("[true, false]"), std::string::npos);
}

TEST(RunInputs, WriteOutputs) {
  std::string dir = (fs::temp_directory_path() / ("ferry_write_outputs_" + std::to_string(getpid()))).string();
  std::vector<std::pair<std::string, RtValue>> outs;
  outs.emplace_back("a/b", RtValue(Tensor::from_vector<float>({1})));
  outs.emplace_back("a:b", RtValue(Tensor::from_vector<float>({2})));
  outs.emplace_back("bf", RtValue(Tensor::from_vector<bfloat16>({bfloat16(1.5f)})));
  outs.emplace_back("seq", RtValue::make_sequence({Tensor::from_vector<int64_t>({1, 2}), Tensor::from_vector<int64_t>({3})}));
  outs.emplace_back("none", RtValue::none());
  std::vector<std::string> notes;
  auto w = write_outputs(dir, outs, &notes);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(*w, (std::vector<std::string>{dir + "/a_b.npy", dir + "/a_b_2.npy", dir + "/bf.npy", dir + "/seq.npz"}));
  EXPECT_EQ(notes.size(), 3u);  // collision, bfloat16, empty optional
  EXPECT_EQ(read_npy(dir + "/a_b_2.npy")->to_double_vector(), (std::vector<double>{2}));
  EXPECT_EQ(read_npy(dir + "/bf.npy")->dtype(), DType::kFloat32);
  EXPECT_EQ(read_npz(dir + "/seq.npz")->size(), 2u);
  // A symlink planted at an output path is refused, not followed.
  fs::remove(dir + "/a_b.npy");
  fs::create_symlink("/tmp/ferry_should_not_exist", dir + "/a_b.npy");
  EXPECT_FALSE(write_outputs(dir, outs, nullptr).ok());
  EXPECT_FALSE(fs::exists("/tmp/ferry_should_not_exist"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry::tools
