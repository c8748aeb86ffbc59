// write_model -> read_model keeps everything: every field of the IR (deep comparison, and the printed
// graph), and what a session computes from it (bitwise, same backend).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "format/ferry_file.h"
#include "unit/format/format_test_util.h"
#include "frontend/onnx/import.h"
#include "ops/op.h"
#include "runtime/session.h"
#include "tools/compile.h"
#include "runtime/model_session.h"
#include "tools/run_inputs.h"

namespace ferry::format {
namespace {

using testing::diff_models;
using testing::TempDir;

TEST(FerryFormat, RoundTripsEveryField) {
  auto m = testing::kitchen_sink_model();
  ASSERT_TRUE(ir::verify(*m->graph).ok()) << ir::verify(*m->graph).to_string();
  TempDir tmp;
  CompileOptions o;
  o.opt_level = 3;
  o.input_shapes = {{"x", {1, 3, 5, 0}}};
  o.dynamic_batch = {1, 2, 8};
  o.source_path = "/models/k.onnx";
  o.source_size = 12345;
  o.source_mtime_ns = 987654321;
  const std::string path = tmp.file("k.ferry");
  Status w = write_model(*m, o, path);
  ASSERT_TRUE(w.ok()) << w.to_string();

  auto r = read_model(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(diff_models(*m, *r->model), "");
  EXPECT_EQ(ir::print_graph(*m->graph), ir::print_graph(*r->model->graph));
  EXPECT_EQ(r->model->source_path, path);
  EXPECT_EQ(r->version_major, kFormatMajor);
  EXPECT_EQ(r->version_minor, kFormatMinor);
  EXPECT_EQ(r->producer.rfind("ferry ", 0), 0u) << r->producer;
  EXPECT_EQ(r->options.opt_level, 3);
  EXPECT_EQ(r->options.input_shapes, o.input_shapes);
  EXPECT_EQ(r->options.dynamic_batch, o.dynamic_batch);
  EXPECT_EQ(r->options.precision, "fp32");
  EXPECT_EQ(r->options.source_path, o.source_path);
  EXPECT_EQ(r->options.source_size, o.source_size);
  EXPECT_EQ(r->options.source_mtime_ns, o.source_mtime_ns);
  EXPECT_EQ(r->file_size, std::filesystem::file_size(path));

  // Weights are 64-byte aligned views into the mapping, not copies.
  const auto* base = static_cast<const uint8_t*>(r->data);
  for (const ir::Value* c : r->model->graph->initializers()) {
    const auto* p = static_cast<const uint8_t*>(c->initializer.raw());
    if (c->initializer.nbytes() == 0) continue;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << c->name;
    EXPECT_GE(p, base);
    EXPECT_LE(p + c->initializer.nbytes(), base + r->file_size) << c->name;
  }
  // The shared buffer is stored once: the attribute tensor and the constant are the same bytes.
  const ir::Node& n = *r->model->graph->nodes[0];
  EXPECT_EQ(n.attr("tensors")->tensors[1].raw(), r->model->graph->find_local_value("c_float16")->initializer.raw());
  // Subgraph parents and outer-scope links are restored.
  const ir::Graph* body = n.attr_graph("g");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->parent, r->model->graph.get());
  EXPECT_EQ(body->nodes[0]->inputs[1], r->model->graph->find_local_value("c_float32"));

  // The same model from bytes in memory.
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto rb = read_model_bytes(bytes.data(), bytes.size(), "mem.ferry");
  ASSERT_TRUE(rb.ok()) << rb.status().to_string();
  EXPECT_EQ(diff_models(*m, *rb->model), "");
  // And parsed again from the same mapping.
  auto again = reparse_model(*r);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(diff_models(*m, **again), "");
}

TEST(FerryFormat, WeightsLieAfterTheFlatBufferAt64ByteOffsets) {
  auto m = testing::kitchen_sink_model();
  TempDir tmp;
  const std::string path = tmp.file("w.ferry");
  ASSERT_TRUE(write_model(*m, {}, path).ok());
  auto r = read_model(path);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(is_ferry_file(path));
  uint32_t prefix;
  std::memcpy(&prefix, r->data, 4);
  for (const ir::Value* c : r->model->graph->initializers()) {
    const auto off = static_cast<const uint8_t*>(c->initializer.raw()) - r->data;
    if (c->initializer.nbytes() == 0) continue;
    EXPECT_GE(off, 4 + static_cast<int64_t>(prefix));
    EXPECT_EQ(off % 64, 0);
  }
}

TEST(FerryFormat, WriteIsAtomicAndErrorsNameThePath) {
  auto m = testing::kitchen_sink_model();
  TempDir tmp;
  Status bad = write_model(*m, {}, tmp.file("no/such/dir/m.ferry"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.to_string().find("no/such/dir/m.ferry"), std::string::npos) << bad.to_string();
  // Overwriting leaves exactly the new file, no temporary behind.
  const std::string path = tmp.file("m.ferry");
  ASSERT_TRUE(write_model(*m, {}, path).ok());
  ASSERT_TRUE(write_model(*m, {}, path).ok());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path)) {
    (void)e;
    files++;
  }
  EXPECT_EQ(files, 1);
}

std::map<std::string, RtValue> runnable_inputs(int64_t batch, bool with_c = true) {
  Tensor x(DType::kFloat32, {batch, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i) * 0.37f - 1.1f;
  if (!with_c) return {{"x", RtValue(x)}};
  return {{"x", RtValue(x)}, {"c", RtValue(Tensor::scalar<bool>(false))}};
}

// Random inputs with every dynamic dim set to 1.
Result<std::map<std::string, RtValue>> random_inputs(const ir::Graph& g, uint64_t seed) {
  tools::InputOptions io;
  io.seed = seed;
  for (const ir::Value* v : g.inputs) {
    if (v->is_constant() || !v->shape || is_static(*v->shape)) continue;
    std::vector<int64_t> dims;
    for (const Dim& d : *v->shape) dims.push_back(d.is_static() ? d.value : 1);
    io.shapes[v->name] = dims;
  }
  FERRY_ASSIGN_OR_RETURN(auto inputs, tools::prepare_inputs(g, io));
  std::map<std::string, RtValue> feeds;
  for (const auto& in : inputs) feeds.emplace(in.name, RtValue(in.tensor));
  return feeds;
}

void expect_same_outputs(const std::vector<std::pair<std::string, RtValue>>& a,
                         const std::vector<std::pair<std::string, RtValue>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    ASSERT_EQ(a[i].second.kind, b[i].second.kind) << a[i].first;
    if (a[i].second.is_tensor()) EXPECT_TRUE(a[i].second.tensor.same_as(b[i].second.tensor)) << a[i].first;
    ASSERT_EQ(a[i].second.sequence.size(), b[i].second.sequence.size());
    for (size_t j = 0; j < a[i].second.sequence.size(); ++j)
      EXPECT_TRUE(a[i].second.sequence[j].same_as(b[i].second.sequence[j])) << a[i].first << "[" << j << "]";
  }
}

TEST(FerryFormat, RunnableModelComputesTheSameBitwise) {
  TempDir tmp;
  const std::string onnx_path = tmp.file("r.onnx");
  {
    std::ofstream f(onnx_path, std::ios::binary);
    f << testing::runnable_onnx_model();
  }
  auto model = frontend::load_onnx(onnx_path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const std::string path = tmp.file("r.ferry");
  ASSERT_TRUE(write_model(**model, {}, path).ok());
  auto back = read_model(path);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(diff_models(**model, *back->model), "");
  EXPECT_EQ(ir::print_graph(*(*model)->graph), ir::print_graph(*back->model->graph));

  auto ref = runtime::ModelSession::open(onnx_path);
  auto got = runtime::ModelSession::open(path);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ((*got)->kind(), runtime::ModelFileKind::kFerry);
  EXPECT_EQ((*ref)->kind(), runtime::ModelFileKind::kOnnx);
  for (bool c : {false, true}) {
    auto in = runnable_inputs(3);
    in["c"] = RtValue(Tensor::scalar<bool>(c));
    auto a = (*ref)->run(in);
    auto b = (*got)->run(in);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    expect_same_outputs(*a, *b);
  }
}

TEST(FerryFormat, GearsPickTheSessionByBatchAndNameTheGears) {
  TempDir tmp;
  auto model = frontend::load_onnx_bytes(testing::runnable_onnx_model(false), "", "r.onnx");
  ASSERT_TRUE(model.ok());
  CompileOptions o;
  o.opt_level = 1;
  o.dynamic_batch = {1, 2, 4};
  const std::string path = tmp.file("g.ferry");
  ASSERT_TRUE(write_model(**model, o, path).ok());
  auto runner = runtime::ModelSession::open(path);
  ASSERT_TRUE(runner.ok()) << runner.status().to_string();
  EXPECT_EQ((*runner)->gears(), o.dynamic_batch);
  ASSERT_EQ((*runner)->num_sessions(), 3u);
  // Each gear's session has its batch fixed; the stored graph keeps the symbol.
  EXPECT_EQ((*runner)->session(2).graph().inputs[0]->type_string(), "float32[4,4]");
  EXPECT_EQ((*runner)->graph().inputs[0]->type_string(), "float32[batch,4]");
  auto ref = runtime::ModelSession::open(path + ".missing");
  EXPECT_FALSE(ref.ok());

  auto plain = runtime::Session::from_model(frontend::load_onnx_bytes(testing::runnable_onnx_model(false), "", "r").value());
  ASSERT_TRUE(plain.ok());
  for (int64_t b : {1, 2, 4}) {
    auto pick = (*runner)->pick_session(runnable_inputs(b, false));
    ASSERT_TRUE(pick.ok());
    EXPECT_EQ(o.dynamic_batch[*pick], b);
    auto x = (*runner)->run(runnable_inputs(b, false));
    auto y = (*plain)->run(runnable_inputs(b, false));
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    ASSERT_TRUE(y.ok());
    expect_same_outputs(*x, *y);
  }
  auto miss = (*runner)->run(runnable_inputs(3, false));
  ASSERT_FALSE(miss.ok());
  EXPECT_NE(miss.status().to_string().find("input 'x' has batch 3; this model was compiled for batch sizes 1, 2, 4"),
            std::string::npos)
      << miss.status().to_string();
}

// The exported model tests (tests/models/export_models.py), when their cache exists: `ferry compile`'s
// .ferry file computes exactly what the .onnx computes.
TEST(FerryFormat, ExportedModelsRoundTrip) {
  const char* home = std::getenv("HOME");
  std::filesystem::path dir = std::filesystem::path(home ? home : "/nonexistent") / ".cache/ferry/models";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) GTEST_SKIP() << "no exported models in " << dir;
  TempDir tmp;
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    // An export in progress (export_models.py writes ".<name>.tmp-<pid>", then renames it) is not a model yet.
    if (e.path().filename().string().rfind('.', 0) == 0) continue;
    const std::string onnx_path = (e.path() / "model.onnx").string();
    if (!std::filesystem::is_regular_file(onnx_path, ec)) continue;
    SCOPED_TRACE(onnx_path);
    tools::CompileRequest req;
    req.model_path = onnx_path;
    req.output_path = tmp.file(e.path().filename().string() + ".ferry");
    req.prepare.opt_level = 2;
    auto compiled = tools::compile_model(req);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    const std::string& path = req.output_path;
    // On each backend, the .onnx side optimized as the compile did, so the same graph runs.
    for (const char* backend : {"reference", "cpu"}) {
      SCOPED_TRACE(backend);
      runtime::SessionOptions so;
      so.backend = backend;
      so.opt_level = 2;
      auto ref = runtime::ModelSession::open(onnx_path, so);
      auto got = runtime::ModelSession::open(path, so);
      ASSERT_TRUE(ref.ok()) << ref.status().to_string();
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(diff_models((*ref)->model(), (*got)->model()), "");
      auto feeds = random_inputs((*ref)->graph(), 5);
      ASSERT_TRUE(feeds.ok()) << feeds.status().to_string();
      auto a = (*ref)->run(*feeds);
      auto b = (*got)->run(*feeds);
      ASSERT_TRUE(a.ok()) << a.status().to_string();
      ASSERT_TRUE(b.ok()) << b.status().to_string();
      expect_same_outputs(*a, *b);
    }
    checked++;
  }
  if (checked == 0) GTEST_SKIP() << "no model.onnx under " << dir;
}

}  // namespace
}  // namespace ferry::format
