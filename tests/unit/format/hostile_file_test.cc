// Damaged and hostile .ferry files: every one is an error that names the file (and, for the semantic
// checks, the field), or, where only weight bytes changed, a valid model that computes something else.
// Never a crash and never a read outside the file (the fuzz loops also run what they managed to load).
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "format/ferry_file.h"
#include "format/ferry_model_generated.h"
#include "frontend/onnx/import.h"
#include "runtime/session.h"
#include "unit/format/format_test_util.h"

namespace ferry::format {
namespace {

using testing::TempDir;

std::string file_bytes(const ir::Model& m, const CompileOptions& o = {}) {
  TempDir tmp;
  const std::string path = tmp.file("m.ferry");
  Status st = write_model(m, o, path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string runnable_bytes() {
  auto m = frontend::load_onnx_bytes(testing::runnable_onnx_model(), "", "r.onnx");
  EXPECT_TRUE(m.ok());
  return file_bytes(**m);
}

uint32_t flatbuffer_end(const std::string& bytes) {
  uint32_t prefix;
  std::memcpy(&prefix, bytes.data(), 4);
  return 4 + prefix;
}

// Reads the bytes; when they load, prepares and runs the model (for the runnable model) so damage that
// gets past the reader is also exercised by the executor. Returns whether the read succeeded.
bool load_and_maybe_run(const std::string& bytes, bool run) {
  auto r = read_model_bytes(bytes.data(), bytes.size(), "hostile.ferry");
  if (!r.ok()) {
    EXPECT_NE(r.status().to_string().find("hostile.ferry"), std::string::npos) << r.status().to_string();
    return false;
  }
  if (!run) return true;
  auto s = runtime::Session::from_model(std::move(r->model));
  if (!s.ok()) return true;
  Tensor x(DType::kFloat32, {2, 4});
  for (int i = 0; i < 8; ++i) x.data<float>()[i] = static_cast<float>(i) - 3.5f;
  auto out = (*s)->run({{"x", RtValue(x)}, {"c", RtValue(Tensor::scalar<bool>(true))}});
  (void)out;  // an error or a result, both fine
  return true;
}

TEST(FerryHostile, EveryTruncationIsAnError) {
  for (const std::string& bytes : {file_bytes(*testing::kitchen_sink_model()), runnable_bytes()}) {
    for (int k = 0; k < 64; ++k) {
      const size_t n = bytes.size() * k / 64;
      std::string cut = bytes.substr(0, n);
      auto r = read_model_bytes(cut.data(), cut.size(), "cut.ferry");
      EXPECT_FALSE(r.ok()) << "truncated to " << n << " of " << bytes.size() << " bytes";
      if (!r.ok()) {
        EXPECT_NE(r.status().to_string().find("cut.ferry"), std::string::npos);
      }
    }
    // One byte short: the last weight is missing a byte.
    auto r = read_model_bytes(bytes.data(), bytes.size() - 1, "cut.ferry");
    EXPECT_FALSE(r.ok());
  }
}

TEST(FerryHostile, EveryHeaderByteFlippedIsHandled) {
  const std::string kitchen = file_bytes(*testing::kitchen_sink_model());
  const std::string runnable = runnable_bytes();
  int rejected = 0, loaded = 0;
  for (const std::string* base : {&kitchen, &runnable}) {
    const uint32_t end = flatbuffer_end(*base);
    for (uint32_t i = 0; i < end; ++i)
      for (uint8_t mask : {uint8_t{0xff}, uint8_t{0x01}, uint8_t{0x80}}) {
        std::string b = *base;
        b[i] = static_cast<char>(b[i] ^ mask);
        (load_and_maybe_run(b, base == &runnable) ? loaded : rejected)++;
      }
  }
  // Most flips break something the reader checks; some (a name's letter, a float) do not.
  RecordProperty("rejected", rejected);
  RecordProperty("loaded", loaded);
  EXPECT_GT(rejected, 0);
  EXPECT_GT(loaded, 0);
}

TEST(FerryHostile, RandomDamageAnywhereIsHandled) {
  const std::string runnable = runnable_bytes();
  const std::string kitchen = file_bytes(*testing::kitchen_sink_model());
  std::mt19937_64 rng(20261202);
  int loaded = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    const bool use_runnable = iter % 2 == 0;
    std::string b = use_runnable ? runnable : kitchen;
    const int edits = 1 + static_cast<int>(rng() % 8);
    // Three edits in four land in the FlatBuffer, where the structure is; the rest anywhere.
    const size_t fb_end = flatbuffer_end(b);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % 4 ? rng() % fb_end : rng() % b.size();
      switch (rng() % 3) {
        case 0: b[pos] = static_cast<char>(b[pos] ^ (1u << (rng() % 8))); break;
        case 1: b[pos] = static_cast<char>(rng()); break;
        default: {  // a 4-byte overwrite (offsets, lengths, indices are 4 or 8 bytes)
          const uint32_t v = (rng() % 2) ? static_cast<uint32_t>(rng()) : 0xffffffffu - static_cast<uint32_t>(rng() % 4);
          for (size_t k = 0; k < 4 && pos + k < b.size(); ++k) b[pos + k] = static_cast<char>(v >> (8 * k));
        }
      }
    }
    loaded += load_and_maybe_run(b, use_runnable) ? 1 : 0;
  }
  RecordProperty("loaded", loaded);
  EXPECT_LT(loaded, 6000);
}

TEST(FerryHostile, WeightBytesChangedLoadAndComputeSomethingElse) {
  const std::string runnable = runnable_bytes();
  auto good = read_model_bytes(runnable.data(), runnable.size(), "ok.ferry");
  ASSERT_TRUE(good.ok());
  std::string b = runnable;
  const uint32_t end = flatbuffer_end(b);
  for (size_t i = (end + 63) / 64 * 64; i < b.size(); ++i) b[i] = static_cast<char>(b[i] ^ 0x40);
  auto r = read_model_bytes(b.data(), b.size(), "w.ferry");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const Tensor& w0 = good->model->graph->find_local_value("w")->initializer;
  const Tensor& w1 = r->model->graph->find_local_value("w")->initializer;
  EXPECT_FALSE(w0.same_as(w1));
}

// Targeted damage through the generated mutable API: each semantic check names the field.
class FerryFieldChecks : public ::testing::Test {
 protected:
  std::string bytes = file_bytes(*testing::kitchen_sink_model());
  fb::Model* root() { return fb::GetMutableSizePrefixedModel(bytes.data()); }
  std::string error(const ReadLimits& limits = {}) {
    auto r = read_model_bytes(bytes.data(), bytes.size(), "model.ferry", limits);
    return r.ok() ? std::string("(loaded)") : r.status().to_string();
  }
};

#define EXPECT_ERROR_HAS(text) EXPECT_NE(error().find(text), std::string::npos) << error()

TEST_F(FerryFieldChecks, NodeInputOutOfRange) {
  auto* n = root()->mutable_graph()->mutable_nodes()->GetMutableObject(0);
  const size_t nv = root()->graph()->values()->size();
  n->mutable_inputs()->GetMutableObject(2)->mutate_index(9999);
  EXPECT_ERROR_HAS("model.ferry: graph: node 0 input 2 refers to value 9999, but there are " + std::to_string(nv) +
                   " values");
}

TEST_F(FerryFieldChecks, NodeInputFromAGraphThatDoesNotEnclose) {
  root()->mutable_graph()->mutable_nodes()->GetMutableObject(0)->mutable_inputs()->GetMutableObject(0)->mutate_depth(3);
  EXPECT_ERROR_HAS("node 0 input 0 refers to a graph 3 levels up, but it is nested only 0 deep");
}

TEST_F(FerryFieldChecks, NodeOutputOutOfRangeAndDoubleProducer) {
  auto* outs = root()->mutable_graph()->mutable_nodes()->GetMutableObject(0)->mutable_outputs();
  const int32_t first = outs->Get(0);
  outs->Mutate(2, first);
  EXPECT_ERROR_HAS("node 0 output 2 is value 'y', which test.domain.Everything 'everything' already produces");
  outs->Mutate(2, -5);
  EXPECT_ERROR_HAS("node 0 output 2 refers to value -5");
}

TEST_F(FerryFieldChecks, GraphInputOutOfRange) {
  root()->mutable_graph()->mutable_inputs()->Mutate(1, 4242);
  EXPECT_ERROR_HAS("graph: input 1 refers to value 4242");
}

TEST_F(FerryFieldChecks, WeightOffsetsAndSizes) {
  auto* w = root()->mutable_weights()->GetMutableObject(0);
  const uint64_t off = w->offset(), n = w->nbytes();
  w->mutate_offset(off + 8);
  EXPECT_ERROR_HAS("weight 0 starts at offset " + std::to_string(off + 8) + ", which is not a multiple of 64");
  w->mutate_offset(64);
  EXPECT_ERROR_HAS("inside the FlatBuffer");
  w->mutate_offset(uint64_t{1} << 62);
  EXPECT_ERROR_HAS("runs past the end of the file");
  w->mutate_offset(off);
  w->mutate_nbytes(~uint64_t{0} - 7);
  EXPECT_ERROR_HAS("runs past the end of the file");
  w->mutate_nbytes(n + 1);
  EXPECT_ERROR_HAS("but weight 0 holds " + std::to_string(n + 1) + " bytes");
}

TEST_F(FerryFieldChecks, EnumsOutOfRange) {
  auto* v = root()->mutable_graph()->mutable_values()->GetMutableObject(0);
  ASSERT_TRUE(v->mutate_dtype(static_cast<fb::DataType>(200)));
  EXPECT_ERROR_HAS("value 0 ('x') has dtype code 200");
}

TEST_F(FerryFieldChecks, TensorDimsAndWeightIndex) {
  // The first constant's initializer: dims negative, then absurd, then a weight index out of range.
  auto* values = root()->mutable_graph()->mutable_values();
  fb::Value* c = nullptr;
  for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i)
    if (values->Get(i)->initializer()) {
      c = values->GetMutableObject(i);
      break;
    }
  ASSERT_NE(c, nullptr);
  auto* dims = c->mutable_initializer()->mutable_dims();
  const int64_t d0 = dims->Get(0);
  dims->Mutate(0, -3);
  EXPECT_ERROR_HAS("has a negative dimension -3");
  dims->Mutate(0, int64_t{1} << 50);
  EXPECT_NE(error(), "(loaded)");
  dims->Mutate(0, d0);
  c->mutable_initializer()->mutate_weight(77777);
  EXPECT_ERROR_HAS("refers to weight 77777, but there are");
}

TEST_F(FerryFieldChecks, DuplicateValueName) {
  // Rename value 1 ("seq_in") in place to "x" plus padding is not possible, so overwrite its first
  // letters with another value's same-length name: "c_int8" is value ... find two names of one length.
  auto* values = root()->mutable_graph()->mutable_values();
  flatbuffers::uoffset_t a = 0, b = 0;
  for (flatbuffers::uoffset_t i = 0; i < values->size() && !b; ++i)
    for (flatbuffers::uoffset_t j = i + 1; j < values->size(); ++j)
      if (values->Get(i)->name()->size() == values->Get(j)->name()->size()) {
        a = i;
        b = j;
        break;
      }
  ASSERT_NE(b, 0u);
  const std::string name = values->Get(a)->name()->str();
  std::memcpy(const_cast<char*>(values->Get(b)->name()->c_str()), name.data(), name.size());
  EXPECT_ERROR_HAS("value " + std::to_string(b) + " ('" + name + "'): the name is used by two values");
}

TEST_F(FerryFieldChecks, NewerMajorVersionAndWrongIdentifier) {
  root()->mutable_version()->mutate_major(kFormatMajor + 1);
  EXPECT_ERROR_HAS("by a newer ferry; this ferry reads format 1.x");
  root()->mutable_version()->mutate_major(kFormatMajor);
  root()->mutable_version()->mutate_minor(kFormatMinor + 5);  // a newer minor still loads
  EXPECT_EQ(error(), "(loaded)");
  bytes[8] = 'X';
  EXPECT_ERROR_HAS("is not a .ferry file");
}

TEST_F(FerryFieldChecks, SubgraphDepthIsBounded) {
  ReadLimits shallow;
  shallow.max_subgraph_depth = 1;  // the kitchen sink nests two levels
  EXPECT_NE(error(shallow).find("subgraphs nest deeper than 1 levels"), std::string::npos) << error(shallow);
  EXPECT_EQ(error(), "(loaded)");
}

TEST(FerryHostile, NotAFerryFileAtAll) {
  for (const std::string& junk : {std::string(), std::string("FRRY"), std::string(100, '\0'),
                                  std::string("\x08\x00\x00\x00\x04\x00\x00\x00FRRY", 12)}) {
    auto r = read_model_bytes(junk.data(), junk.size(), "junk.ferry");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().to_string().find("junk.ferry"), std::string::npos);
  }
  TempDir tmp;
  auto missing = read_model(tmp.file("none.ferry"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().to_string().find("none.ferry"), std::string::npos);
  auto dir = read_model(tmp.path.string());
  EXPECT_FALSE(dir.ok());
}

}  // namespace
}  // namespace ferry::format
