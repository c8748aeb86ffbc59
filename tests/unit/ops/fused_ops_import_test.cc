// A model that already holds com.ferry fused ops (e.g. one a tool saved after optimizing) imports and
// runs: the importer finds schemas registered in the com.ferry domain.
#include <gtest/gtest.h>

#include "frontend/onnx/import.h"
#include "onnx/onnx_pb.h"
#include "runtime/session.h"

namespace ferry::frontend {
namespace {

std::string fused_model(bool import_domain) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  if (import_domain) {
    auto* os = m.add_opset_import();
    os->set_domain("com.ferry");
    os->set_version(1);
  }
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("a");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(1);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  auto* w = g->add_initializer();
  w->set_name("b");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(1);
  w->add_float_data(1.0f);
  w->add_float_data(-3.0f);
  auto* n = g->add_node();
  n->set_op_type("FusedMatMul");
  n->set_domain("com.ferry");
  n->set_name("fm");
  n->add_input("a");
  n->add_input("b");
  n->add_output("y");
  auto* p = n->add_attribute();
  p->set_name("post_ops");
  p->set_type(onnx::AttributeProto::STRINGS);
  p->add_strings("Relu");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

TEST(FusedOpsImport, ComFerryDomainIsFound) {
  auto m = load_onnx_bytes(fused_model(true), "", "fused.onnx");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->graph->nodes[0]->domain, "com.ferry");
  auto s = runtime::Session::from_model(std::move(m).value());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto r = (*s)->run_tensors({{"a", Tensor::from_vector<float>({2.0f, 1.0f}, {1, 2})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FLOAT_EQ((*r)[0].second.data<float>()[0], 0.0f);  // relu(2*1 + 1*-3) = relu(-1)
  // Without the opset import the op has no version: a clear import error, not a crash.
  auto bad = load_onnx_bytes(fused_model(false), "", "fused.onnx");
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace ferry::frontend
