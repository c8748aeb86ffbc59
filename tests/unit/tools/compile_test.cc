// `ferry compile`'s flag parsing and its library entry point on a small model: the stored file keeps
// what was asked (shapes fixed, or the batch symbolic with its gears), and mistakes name the flag.
#include <gtest/gtest.h>

#include <fstream>

#include "format/ferry_file.h"
#include "tools/compile.h"
#include "tools/run_inputs.h"
#include "unit/format/format_test_util.h"

namespace ferry::tools {
namespace {

using format::testing::TempDir;

// compile's --input-shape and everyone's --shape read one syntax: NAME=DIMS or NAME:DIMS.
TEST(CompileFlags, InputShape) {
  auto a = parse_shape_arg("input:0:1,3,224,224", "--input-shape");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "input:0");
  EXPECT_EQ(a->second, (std::vector<int64_t>{1, 3, 224, 224}));
  auto eq = parse_shape_arg("images=1,3,320,320", "--input-shape");
  ASSERT_TRUE(eq.ok());
  EXPECT_EQ(eq->first, "images");
  EXPECT_EQ(eq->second, (std::vector<int64_t>{1, 3, 320, 320}));
  auto scalar = parse_shape_arg("s:", "--input-shape");
  ASSERT_TRUE(scalar.ok());
  EXPECT_TRUE(scalar->second.empty());
  for (const char* bad : {"x", ":1,2", "x:1,,2", "x:-1", "x:1,a", "x:99999999999999999"})
    EXPECT_FALSE(parse_shape_arg(bad, "--input-shape").ok()) << bad;
}

TEST(CompileFlags, Gears) {
  auto g = parse_gears("8,1,4,2");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (std::vector<int64_t>{1, 2, 4, 8}));
  for (const char* bad : {"", "0", "1,1", "1,x", "2,-1", "99999999"}) EXPECT_FALSE(parse_gears(bad).ok()) << bad;
  EXPECT_NE(parse_gears("2,2").status().to_string().find("twice"), std::string::npos);
}

TEST(CompileModel, FixedShapesAndGearsAreStored) {
  TempDir tmp;
  const std::string src = tmp.file("m.onnx");
  {
    std::ofstream f(src, std::ios::binary);
    f << format::testing::runnable_onnx_model(false);
  }
  CompileRequest req;
  req.model_path = src;
  req.output_path = tmp.file("fixed.ferry");
  req.prepare.input_shapes = {{"x", {3, 4}}};
  auto r = compile_model(req);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_GT(r->nodes_before, 0);
  EXPECT_GT(r->file_size, r->weight_bytes);
  auto fixed = format::read_model(req.output_path);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->model->graph->inputs[0]->type_string(), "float32[3,4]");
  EXPECT_EQ(fixed->options.input_shapes, req.prepare.input_shapes);
  EXPECT_EQ(fixed->options.opt_level, 2);
  EXPECT_GT(fixed->options.source_size, 0u);
  EXPECT_NE(format_compile_report(*r).find("nodes: "), std::string::npos);

  req.output_path = tmp.file("geared.ferry");
  req.dynamic_batch = {1, 4};
  auto g = compile_model(req);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto geared = format::read_model(req.output_path);
  ASSERT_TRUE(geared.ok());
  EXPECT_EQ(geared->model->graph->inputs[0]->type_string(), "float32[batch,4]");
  EXPECT_EQ(geared->options.dynamic_batch, req.dynamic_batch);
  EXPECT_NE(format_compile_report(*g).find("dynamic batch: 1, 4"), std::string::npos);

  req.prepare.input_shapes = {{"nope", {1}}};
  auto bad = compile_model(req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("'nope'"), std::string::npos);
  req.prepare.input_shapes.clear();
  req.prepare.opt_level = 9;
  EXPECT_FALSE(compile_model(req).ok());
}

// A model whose input has no dim 0 cannot get batch gears; the error says why.
TEST(CompileModel, GearsNeedABatchDimension) {
  TempDir tmp;
  const std::string src = tmp.file("m.onnx");
  {
    std::ofstream f(src, std::ios::binary);
    f << format::testing::runnable_onnx_model(true);  // input c is a scalar
  }
  CompileRequest req;
  req.model_path = src;
  req.output_path = tmp.file("g.ferry");
  req.dynamic_batch = {1, 2};
  auto r = compile_model(req);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("input 'c'"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().to_string().find("no batch dimension"), std::string::npos);
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(req.output_path, ec));
}

}  // namespace
}  // namespace ferry::tools
