// `ferry compile --preprocess SPEC`: the per-pixel part of the spec as graph nodes in front of the model,
// so the deployed model takes the uint8 NHWC image (what AIPP does on an Ascend NPU):
//   x:uint8[N,H,W,3] -> Cast(float) -> [Gather reversed channels: bgr] -> Mul(scale) -> Sub(mean) -> Div(std)
//     -> [Transpose to NCHW] -> [Cast(float16)] -> what the model's input fed before
// The same float32 operations, in the same order, as the host path (image_to_tensor), so both agree to
// rounding. Resize and crop stay on the host: they depend on each image's size.
#include <functional>

#include "core/onnx_dtype.h"
#include "passes/pass_util.h"
#include "tools/evaluate/preprocess.h"

namespace ferry::tools::evaluate {

namespace {

struct Builder {
  ir::Model& m;
  ir::Graph& g;
  std::vector<std::unique_ptr<ir::Node>> made;

  ir::Value* add(const std::string& op, std::vector<ir::Value*> inputs, std::map<std::string, ir::Attribute> attrs,
                 DType dtype, Shape shape, ir::Value* out = nullptr) {
    const std::string name = g.fresh_name("preprocess/" + op);
    ir::Node* n = g.add_node(op, name);
    n->opset = static_cast<int>(m.opset_for(""));
    n->inputs = std::move(inputs);
    n->attrs = std::move(attrs);
    n->provenance = {name};
    if (!out) {
      out = g.add_value(g.fresh_name(name + "/out"));
      out->onnx_name = out->name;
    }
    out->dtype = dtype;
    out->shape = std::move(shape);
    out->producer = n;
    out->producer_output = 0;
    n->outputs = {out};
    made.push_back(std::move(g.nodes.back()));
    g.nodes.pop_back();
    return out;
  }
  ir::Value* channels(const std::vector<float>& v, const std::string& base) {
    return passes::add_constant(g, "preprocess/" + base, Tensor::from_vector(v, {3}));
  }
};

}  // namespace

Status insert_preprocess(ir::Model& m, const PreprocessSpec& s) {
  ir::Graph& g = *m.graph;
  std::vector<ir::Value*> fed;
  for (ir::Value* v : g.inputs)
    if (!v->is_constant()) fed.push_back(v);
  if (fed.size() != 1) return Status::invalid("--preprocess: the model must have one input (it has " + std::to_string(fed.size()) + ")");
  ir::Value* x = fed[0];
  if (s.dtype == DType::kUInt8) return Status::invalid("--preprocess dtype=uint8: nothing to put in the model");
  const size_t c_axis = s.nchw ? 1 : 3;
  if (x->dtype != s.dtype || !x->shape || x->shape->size() != 4 || (*x->shape)[c_axis] != Dim(3))
    return Status::invalid("--preprocess " + describe(s) + ": input " + x->name + " is " + x->type_string() + ", not " +
                           std::string(dtype_name(s.dtype)) + (s.nchw ? "[N,3,H,W]" : "[N,H,W,3]"));
  if (m.opset_for("") < 13) return Status::invalid("--preprocess: the model's opset is under 13 (convert it first)");
  const Shape& xs = *x->shape;
  const Shape nhwc = s.nchw ? Shape{xs[0], xs[2], xs[3], xs[1]} : xs;
  const std::string name = x->name;
  // The model's input keeps its name (feeds keep working) and becomes the 8-bit image.
  x->name = g.fresh_name(name + "/preprocessed");
  x->onnx_name = x->name;
  x->is_graph_input = false;
  ir::Value* img = g.add_value(name);
  img->onnx_name = name;
  img->dtype = DType::kUInt8;
  img->shape = nhwc;
  img->is_graph_input = true;
  for (auto& v : g.inputs)
    if (v == x) v = img;
  g.reindex();

  Builder b{m, g, {}};
  const bool last_cast = s.dtype != DType::kFloat32;
  std::vector<std::function<ir::Value*(ir::Value*, ir::Value*)>> steps;
  steps.push_back([&](ir::Value* in, ir::Value* out) {
    return b.add("Cast", {in}, {{"to", passes::make_int(onnx_code_of(DType::kFloat32).value())}}, DType::kFloat32, nhwc, out);
  });
  if (s.bgr)
    steps.push_back([&](ir::Value* in, ir::Value* out) {
      ir::Value* idx = passes::add_constant(g, "preprocess/bgr", Tensor::from_vector<int64_t>({2, 1, 0}, {3}));
      return b.add("Gather", {in, idx}, {{"axis", passes::make_int(3)}}, DType::kFloat32, nhwc, out);
    });
  if (s.scale != 1.0f)
    steps.push_back([&](ir::Value* in, ir::Value* out) {
      ir::Value* k = passes::add_constant(g, "preprocess/scale", Tensor::from_vector<float>({s.scale}, {}));
      return b.add("Mul", {in, k}, {}, DType::kFloat32, nhwc, out);
    });
  if (!s.mean.empty())
    steps.push_back([&](ir::Value* in, ir::Value* out) { return b.add("Sub", {in, b.channels(s.mean, "mean")}, {}, DType::kFloat32, nhwc, out); });
  if (!s.std.empty())
    steps.push_back([&](ir::Value* in, ir::Value* out) { return b.add("Div", {in, b.channels(s.std, "std")}, {}, DType::kFloat32, nhwc, out); });
  if (s.nchw)
    steps.push_back([&](ir::Value* in, ir::Value* out) {
      return b.add("Transpose", {in}, {{"perm", passes::make_ints({0, 3, 1, 2})}}, DType::kFloat32, xs, out);
    });
  if (last_cast)
    steps.push_back([&](ir::Value* in, ir::Value* out) {
      return b.add("Cast", {in}, {{"to", passes::make_int(onnx_code_of(s.dtype).value())}}, s.dtype, xs, out);
    });
  ir::Value* v = img;
  for (size_t i = 0; i < steps.size(); ++i) v = steps[i](v, i + 1 == steps.size() ? x : nullptr);
  g.nodes.insert(g.nodes.begin(), std::make_move_iterator(b.made.begin()), std::make_move_iterator(b.made.end()));
  m.metadata["ferry.preprocess"] = describe(s);
  return Status();
}

}  // namespace ferry::tools::evaluate
