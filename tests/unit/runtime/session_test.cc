// Session input checks and the per-node hook, on a tiny model built in protobuf.
#include <gtest/gtest.h>

#include "frontend/onnx/import.h"
#include "onnx/onnx_pb.h"
#include "runtime/session.h"

namespace ferry::runtime {
namespace {

// x: float[batch, 3] -> Identity -> y
std::string identity_model(const std::string& op = "Identity", int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("id0");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

std::unique_ptr<Session> load(const std::string& bytes) {
  auto model = frontend::load_onnx_bytes(bytes, "", "test.onnx");
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  auto s = Session::from_model(std::move(model).value());
  EXPECT_TRUE(s.ok());
  return std::move(s).value();
}

TEST(Session, RunsAndCallsTheHook) {
  auto s = load(identity_model());
  int calls = 0;
  s->set_node_hook([&](const ir::Node& n, const std::vector<const RtValue*>&, const std::vector<RtValue>& outs) {
    calls++;
    EXPECT_EQ(n.provenance, std::vector<std::string>{"id0"});
    EXPECT_EQ(outs[0].tensor.dims(), (std::vector<int64_t>{2, 3}));
  });
  Tensor x(DType::kFloat32, {2, 3});
  x.data<float>()[4] = 7;
  auto r = s->run_tensors({{"x", x}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].first, "y");
  EXPECT_EQ((*r)[0].second.data<float>()[4], 7);
  EXPECT_EQ(calls, 1);
}

TEST(Session, InputErrorsNameTheInput) {
  auto s = load(identity_model());
  auto missing = s->run_tensors({});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().to_string().find("missing input 'x'"), std::string::npos);

  auto extra = s->run_tensors({{"x", Tensor(DType::kFloat32, {1, 3})}, {"z", Tensor(DType::kFloat32, {1})}});
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().to_string().find("unknown input 'z'"), std::string::npos);

  auto dtype = s->run_tensors({{"x", Tensor(DType::kInt64, {1, 3})}});
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().to_string().find("dtype int64"), std::string::npos);

  auto shape = s->run_tensors({{"x", Tensor(DType::kFloat32, {1, 4})}});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().to_string().find("[1,4]"), std::string::npos) << shape.status().to_string();

  auto rank = s->run_tensors({{"x", Tensor(DType::kFloat32, {3})}});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().to_string().find("rank"), std::string::npos);
}

TEST(Import, UnsupportedOpsAreListedTogether) {
  onnx::ModelProto m;
  m.ParseFromString(identity_model("FancyOp"));
  auto* g = m.mutable_graph();
  for (int i = 0; i < 2; ++i) {
    auto* n = g->add_node();
    n->set_op_type("OtherOp");
    n->add_input("y");
    n->add_output("o" + std::to_string(i));
  }
  auto r = frontend::load_onnx_bytes(m.SerializeAsString(), "", "m.onnx");
  ASSERT_FALSE(r.ok());
  std::string msg = r.status().to_string();
  EXPECT_NE(msg.find("FancyOp (1 node, opset 13)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("OtherOp (2 nodes, opset 13)"), std::string::npos) << msg;
}

TEST(Import, OldOpsetsAndGarbageAreRefused) {
  auto old = frontend::load_onnx_bytes(identity_model("Identity", 6), "", "old.onnx");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().to_string().find("opset 6"), std::string::npos);
  auto garbage = frontend::load_onnx_bytes(std::string("\xff\xff\xff\xff garbage", 13), "", "g.onnx");
  ASSERT_FALSE(garbage.ok());
  std::string full = identity_model();
  auto truncated = frontend::load_onnx_bytes(full.substr(0, full.size() / 2), "", "t.onnx");
  ASSERT_FALSE(truncated.ok());
}

TEST(Import, DanglingInputIsAnError) {
  onnx::ModelProto m;
  m.ParseFromString(identity_model());
  m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  auto r = frontend::load_onnx_bytes(m.SerializeAsString(), "", "d.onnx");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("'nowhere'"), std::string::npos);
  EXPECT_NE(r.status().to_string().find("id0"), std::string::npos);
}

TEST(Import, InlinesLocalFunctions) {
  onnx::ModelProto m;
  m.ParseFromString(identity_model("MyFn"));
  m.mutable_graph()->mutable_node(0)->set_domain("local");
  auto* os = m.add_opset_import();
  os->set_domain("local");
  os->set_version(1);
  auto* f = m.add_functions();
  f->set_name("MyFn");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  auto* fo = f->add_opset_import();
  fo->set_domain("");
  fo->set_version(13);
  auto* n1 = f->add_node();
  n1->set_op_type("Identity");
  n1->add_input("a");
  n1->add_output("t");
  auto* n2 = f->add_node();
  n2->set_op_type("Identity");
  n2->add_input("t");
  n2->add_output("b");
  auto model = frontend::load_onnx_bytes(m.SerializeAsString(), "", "f.onnx");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  ASSERT_EQ((*model)->graph->nodes.size(), 2u);
  EXPECT_EQ((*model)->graph->nodes[0]->name, "id0/Identity");
  auto s = Session::from_model(std::move(model).value());
  ASSERT_TRUE(s.ok());
  auto r = (*s)->run_tensors({{"x", Tensor(DType::kFloat32, {1, 3})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
}

}  // namespace
}  // namespace ferry::runtime
