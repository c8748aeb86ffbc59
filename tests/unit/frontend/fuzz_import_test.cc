// Hostile files: flipping bytes of a valid model must give a model or an error, never a crash.
#include <gtest/gtest.h>

#include <random>

#include "frontend/onnx/import.h"
#include "onnx/onnx_pb.h"

namespace ferry::frontend {
namespace {

std::string small_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_version(13);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_float_data(1.0f);
  w->add_float_data(2.0f);
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->set_name("n0");
  n->add_input("x");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("unused");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(3);
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

TEST(FuzzImport, FlippedBytesNeverCrash) {
  const std::string base = small_model();
  std::mt19937 rng(1234);
  int loaded = 0, refused = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bytes = base;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
    if (rng() % 5 == 0) bytes.resize(rng() % bytes.size());
    auto r = load_onnx_bytes(bytes, "", "fuzz.onnx");
    (r.ok() ? loaded : refused)++;
    if (!r.ok()) EXPECT_FALSE(r.status().to_string().empty());
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(loaded + refused, 3000);
}

}  // namespace
}  // namespace ferry::frontend
