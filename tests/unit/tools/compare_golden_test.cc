// compare's small pieces: --golden parsing, dump folders read by the sanitize_name rule, --dump-tensors lists.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/npy.h"
#include "tools/compare/compare_internal.h"
#include "tools/compare/dump.h"

namespace ferry::tools::compare {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  char tmpl[] = "/tmp/ferry_compare_test_XXXXXX";
  return fs::path(::mkdtemp(tmpl));
}

TEST(CompareGolden, ParsesEveryKind) {
  fs::path dir = temp_dir();
  fs::path model = dir / "m.onnx";
  { std::ofstream(model) << "x"; }
  EXPECT_EQ(parse_golden("reference")->kind, GoldenSpec::Kind::kReference);
  EXPECT_EQ(parse_golden("")->kind, GoldenSpec::Kind::kReference);
  EXPECT_EQ(parse_golden("onnxruntime")->kind, GoldenSpec::Kind::kOnnxRuntime);
  EXPECT_EQ(parse_golden(dir.string())->kind, GoldenSpec::Kind::kDir);
  auto m = parse_golden(model.string());
  EXPECT_EQ(m->kind, GoldenSpec::Kind::kModel);
  EXPECT_EQ(m->path, model.string());
  auto bad = parse_golden((dir / "missing").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("missing"), std::string::npos);
  fs::remove_all(dir);
}

TEST(CompareGolden, LoadDirUsesSanitizedNames) {
  fs::path dir = temp_dir();
  ASSERT_TRUE(write_npy((dir / "_layer1_conv_out_0.npy").string(), Tensor::from_vector(std::vector<float>{1, 2})).ok());
  { std::ofstream(dir / "broken.npy") << "not a npy file"; }
  auto t = load_dir(dir.string(), {"/layer1/conv:out:0", "absent"});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ(t->at("/layer1/conv:out:0").numel(), 2);
  auto broken = load_dir(dir.string(), {"broken"});
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().to_string().find("broken"), std::string::npos);
  fs::remove_all(dir);
}

TEST(CompareGolden, NonfiniteCounts) {
  const float inf = std::numeric_limits<float>::infinity();
  auto c = count_nonfinite(Tensor::from_vector(std::vector<float>{1, inf, -inf, std::nanf("")}));
  EXPECT_EQ(c.first, 1);
  EXPECT_EQ(c.second, 2);
  Tensor h(DType::kFloat16, {2});
  h.data<float16>()[0] = float16(70000.f);  // rounds to Inf in fp16
  h.data<float16>()[1] = float16(1.f);
  EXPECT_EQ(count_nonfinite(h).second, 1);
  EXPECT_EQ(count_nonfinite(Tensor::from_vector(std::vector<int64_t>{1})).second, 0);
}

TEST(CompareDump, SplitNames) {
  auto s = split_names({"a,b", "c", ",,d,", ""});
  EXPECT_EQ(s, (std::set<std::string>{"a", "b", "c", "d"}));
}

}  // namespace
}  // namespace ferry::tools::compare
