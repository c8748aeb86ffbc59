// The newest default-domain opset: kNewestOnnxOpset keeps up with the registry, and the importer refuses
// a newer opset unless told to allow it.
#include <gtest/gtest.h>

#include "frontend/onnx/import.h"
#include "onnx/onnx_pb.h"
#include "ops/op.h"
#include "ops/opset.h"

namespace ferry::frontend {
namespace {

std::string identity_model(int64_t opset, const std::string& domain = "") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain(domain);
  os->set_version(opset);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->set_name("n0");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

TEST(NewestOpset, NoDefaultDomainSchemaStartsAfterIt) {
  for (const ops::OpSchema* s : ops::OpRegistry::global().all())
    if (s->domain.empty() || s->domain == "ai.onnx")
      EXPECT_LE(s->since_version, ops::kNewestOnnxOpset) << s->op_type << " (raise ops::kNewestOnnxOpset)";
}

TEST(NewestOpset, NewerOpsetRefusedUnlessAllowed) {
  auto r = load_onnx_bytes(identity_model(99), "", "m99.onnx");
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().to_string();
  for (const std::string& needle :
       {std::string("m99.onnx"), std::string("opset 99"), std::to_string(ops::kNewestOnnxOpset), std::string("--allow-newer-opset")})
    EXPECT_NE(msg.find(needle), std::string::npos) << needle << " in: " << msg;

  ImportOptions allow;
  allow.allow_newer_opset = true;
  auto ok = load_onnx_bytes(identity_model(99), "", "m99.onnx", allow);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_NE(newer_opset_note(**ok).find("opset 99 is newer"), std::string::npos);

  // "ai.onnx" is the default domain spelled out; the newest supported opset itself loads without a note.
  EXPECT_FALSE(load_onnx_bytes(identity_model(99, "ai.onnx"), "", "m.onnx").ok());
  auto newest = load_onnx_bytes(identity_model(ops::kNewestOnnxOpset), "", "m.onnx");
  ASSERT_TRUE(newest.ok()) << newest.status().to_string();
  EXPECT_EQ(newer_opset_note(**newest), "");
}

}  // namespace
}  // namespace ferry::frontend
