// Builds small ONNX models in protobuf for runtime tests: float inputs (-1 dims become the symbol
// "batch"), nodes, float initializers, outputs; then a Session with the given options.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frontend/onnx/import.h"
#include "onnx/onnx_pb.h"
#include "runtime/session.h"

namespace ferry::runtime::testing {

class TinyModel {
 public:
  explicit TinyModel(int opset = 13) {
    m_.set_ir_version(8);
    auto* os = m_.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    m_.mutable_graph()->set_name("g");
  }
  TinyModel& input(const std::string& name, const std::vector<int64_t>& dims) {
    auto* in = m_.mutable_graph()->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) {
      if (d < 0) tt->mutable_shape()->add_dim()->set_dim_param("batch");
      else tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name = "") {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? outs.at(0) + "_node" : name);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return *n;
  }
  TinyModel& initializer(const std::string& name, const std::vector<float>& v, const std::vector<int64_t>& dims) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return *this;
  }
  TinyModel& initializer_i64(const std::string& name, const std::vector<int64_t>& v) {
    auto* t = m_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return *this;
  }
  TinyModel& output(const std::string& name) {
    m_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  Result<std::unique_ptr<Session>> session(const SessionOptions& so = {}) const {
    FERRY_ASSIGN_OR_RETURN(auto model, frontend::load_onnx_bytes(m_.SerializeAsString(), "", "tiny.onnx"));
    return Session::from_model(std::move(model), so);
  }
  onnx::ModelProto& proto() { return m_; }

 private:
  onnx::ModelProto m_;
};

}  // namespace ferry::runtime::testing
