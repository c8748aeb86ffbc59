#include "tools/inspect.h"
#include "tools/run_inputs.h"
#include "runtime/model_session.h"
#include "runtime/prepare.h"

#include <set>

#include <fmt/format.h>

#include "core/shape.h"
#include "frontend/onnx/import.h"
#include "ops/op.h"

namespace ferry::tools {

namespace {

std::optional<std::vector<int64_t>> static_of(const ir::Value* v) {
  if (!v || !v->shape || !is_static(*v->shape)) return std::nullopt;
  return static_dims(*v->shape);
}

double numel_of(const std::vector<int64_t>& d) {
  double n = 1;
  for (int64_t x : d) n *= static_cast<double>(x);
  return n;
}

const ir::Value* in(const ir::Node& n, int i) { return n.has_input(i) ? n.inputs[i] : nullptr; }
const ir::Value* out(const ir::Node& n, int i) { return n.has_output(i) ? n.outputs[i] : nullptr; }

// Ops costed at one FLOP per output element (unary and binary math, comparisons, activations).
const std::set<std::string>& elementwise_ops() {
  static const std::set<std::string> s = {
      "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Relu", "LeakyRelu", "PRelu",
      "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Abs", "Neg", "Erf",
      "Elu", "Selu", "Celu", "Gelu", "Softplus", "Softsign", "Mish", "ThresholdedRelu", "Clip", "Sin", "Cos",
      "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Floor", "Ceil", "Round",
      "Sign", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not", "Where",
      "BitShift", "IsNaN", "IsInf", "Shrink", "QuantizeLinear", "DequantizeLinear"};
  return s;
}

// Compute-heavy ops this estimate does not model; reported apart from the dynamic-shape count.
const std::set<std::string>& unmodelled_ops() {
  static const std::set<std::string> s = {"LSTM", "GRU", "RNN", "Einsum", "Attention", "MultiHeadAttention",
                                          "DeformConv", "RoiAlign", "NonMaxSuppression"};
  return s;
}

void walk(const ir::Graph& g, int depth, ModelSummary& s, const ops::OpRegistry& reg) {
  for (const ir::Value* v : g.initializers()) {
    s.initializers++;
    s.parameters += v->initializer.numel();
    s.parameter_bytes += static_cast<int64_t>(v->initializer.nbytes());
  }
  for (const auto& n : g.nodes) {
    // Weights stored as Constant nodes (Paddle's exporter) are parameters too; integer constants are
    // shapes and indices, not weights.
    if (n->op_type == "Constant" && n->domain.empty())
      if (const Tensor* t = n->attr_tensor("value"); t && is_floating(t->dtype())) {
        s.constant_nodes++;
        s.constant_parameters += t->numel();
        s.parameters += t->numel();
        s.parameter_bytes += static_cast<int64_t>(t->nbytes());
      }
    std::string op = n->domain.empty() ? n->op_type : n->domain + "." + n->op_type;
    s.nodes++;
    if (depth > 0) s.subgraph_nodes++;
    s.op_histogram[op]++;
    if (!reg.find(n->domain, n->op_type, n->opset)) s.unsupported[op]++;
    if (depth == 0 && n->domain.empty()) {
      auto f = estimate_node_flops(*n);
      if (!f) {
        if (!s.flops_unknown_nodes++) s.first_unknown_flops_node = n->label();
      } else if (*f > 0) {
        s.flops += *f;
        s.flops_by_op[op] += *f;
        s.flops_counted_nodes++;
      }
    }
    for (const ir::Graph* sg : n->subgraphs()) {
      s.subgraphs++;
      walk(*sg, depth + 1, s, reg);
    }
  }
}

TensorDecl decl_of(const ir::Value& v) {
  TensorDecl d;
  d.name = v.name;
  d.kind = v.kind == ir::ValueKind::kSequence ? "sequence" : v.kind == ir::ValueKind::kOptional ? "optional" : "tensor";
  d.dtype = v.dtype == DType::kUndefined ? "?" : std::string(dtype_name(v.dtype));
  d.shape = v.shape ? shape_to_string(*v.shape) : "?";
  return d;
}

std::string human(double x, const char* unit) {
  const char* prefixes[] = {" ", " K", " M", " G", " T", " P"};
  int i = 0;
  while (x >= 1000 && i < 5) {
    x /= 1000;
    ++i;
  }
  return fmt::format("{:.{}f}{}{}", x, i == 0 ? 0 : 2, prefixes[i], unit);
}

std::string grouped(int64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

}  // namespace

std::optional<double> estimate_node_flops(const ir::Node& n) {
  const std::string& op = n.op_type;
  auto y = static_of(out(n, 0));
  if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv" || op == "FusedConv") {
    int wi = op == "QLinearConv" ? 3 : 1;
    auto w = static_of(in(n, wi));
    if (!y || !w || w->size() < 2) return std::nullopt;
    double per_out = 1;
    for (size_t i = 1; i < w->size(); ++i) per_out *= static_cast<double>((*w)[i]);  // C/group * kernel
    bool bias = (op == "Conv" || op == "FusedConv") && n.has_input(2);
    return 2 * numel_of(*y) * per_out + (bias ? numel_of(*y) : 0);
  }
  if (op == "ConvTranspose") {
    auto x = static_of(in(n, 0));
    auto w = static_of(in(n, 1));
    if (!x || !w || w->size() < 2) return std::nullopt;
    double per_in = 1;
    for (size_t i = 1; i < w->size(); ++i) per_in *= static_cast<double>((*w)[i]);  // M/group * kernel
    return 2 * numel_of(*x) * per_in + (n.has_input(2) && y ? numel_of(*y) : 0);
  }
  if (op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul") {
    auto a = static_of(in(n, 0));
    if (!y || !a || a->empty()) return std::nullopt;
    return 2 * numel_of(*y) * static_cast<double>(a->back());
  }
  if (op == "FusedMatMul") {  // com.ferry: K from A's last (or, transposed, second to last) dim
    auto a = static_of(in(n, 0));
    if (!y || !a || a->empty()) return std::nullopt;
    const bool ta = n.attr_int("trans_a", 0) != 0 && a->size() >= 2;
    const double k = static_cast<double>(ta ? (*a)[a->size() - 2] : a->back());
    return 2 * numel_of(*y) * k + (n.has_input(2) ? numel_of(*y) : 0);
  }
  if (op == "FusedAttention") {  // softmax(Q K^T) V: 2 S T D + 2 S T Dv per batch element
    auto q = static_of(in(n, 0));
    auto k = static_of(in(n, 1));
    if (!y || !q || !k || q->size() < 2 || k->size() < 2) return std::nullopt;
    const double t = static_cast<double>((*k)[k->size() - 2]), d = static_cast<double>(q->back());
    const double sq = numel_of(*q) / d;  // batch * S
    return 2 * sq * t * d + 2 * numel_of(*y) * t;
  }
  if (op == "Gemm") {
    auto a = static_of(in(n, 0));
    if (!y || !a || a->size() != 2) return std::nullopt;
    double k = static_cast<double>(n.attr_int("transA", 0) ? (*a)[0] : (*a)[1]);
    return 2 * numel_of(*y) * k + (n.has_input(2) ? numel_of(*y) : 0);
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    if (!y) return std::nullopt;
    double k = 1;
    for (int64_t d : n.attr_ints("kernel_shape")) k *= static_cast<double>(d);
    return numel_of(*y) * k;
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool" || op.rfind("Reduce", 0) == 0) {
    auto x = static_of(in(n, 0));
    if (!x) return std::nullopt;
    return numel_of(*x);
  }
  if (op == "BatchNormalization") return y ? std::optional<double>(2 * numel_of(*y)) : std::nullopt;
  if (op == "LayerNormalization" || op == "InstanceNormalization" || op == "GroupNormalization" ||
      op == "LpNormalization" || op == "MeanVarianceNormalization")
    return y ? std::optional<double>(5 * numel_of(*y)) : std::nullopt;
  if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax")
    return y ? std::optional<double>(3 * numel_of(*y)) : std::nullopt;
  if (elementwise_ops().count(op)) return y ? std::optional<double>(numel_of(*y)) : std::nullopt;
  return 0.0;  // data movement (Reshape, Transpose, Gather, ...) or not modelled
}

ModelSummary summarize_model(const ir::Model& model) {
  ModelSummary s;
  s.path = model.source_path;
  s.ir_version = model.ir_version;
  s.producer = model.producer_name + (model.producer_version.empty() ? "" : " " + model.producer_version);
  s.opsets = model.opsets;
  const ir::Graph& g = *model.graph;
  for (const ir::Value* v : g.inputs) {
    if (v->is_constant()) continue;
    s.inputs.push_back(decl_of(*v));
    if (v->shape && !is_static(*v->shape)) {
      s.dynamic_inputs.emplace_back(v->name, shape_argument(*v));
    }
  }
  s.opset_warning = frontend::newer_opset_note(model);
  for (const ir::Value* v : g.outputs) s.outputs.push_back(decl_of(*v));
  walk(g, 0, s, ops::OpRegistry::global());
  return s;
}

Result<ModelSummary> inspect_model(const std::string& path, const InspectOptions& opts) {
  frontend::ImportOptions io;
  io.check_ops = false;
  io.allow_newer_opset = true;  // inspect says so (opset_warning) rather than refusing
  FERRY_ASSIGN_OR_RETURN(std::unique_ptr<ir::Model> model, runtime::open_model(path, io));
  if (!opts.shapes.empty()) {
    // The same validation run and compile apply (rank, static dims, a known input).
    for (const auto& [name, dims] : opts.shapes) {
      FERRY_RETURN_IF_ERROR(runtime::check_fixed_shape(*model->graph, name, dims).with_context("--shape"));
      model->graph->find_local_value(name)->shape = to_shape(dims);
    }
    Status st = ops::infer_graph(*model->graph);
    if (!st.ok()) return st.with_context(path + " (with the given --shape)");
  }
  return summarize_model(*model);
}

namespace {

std::string format_flops(const ModelSummary& s) {
  // A partial sum would read as the model's cost: with any node uncounted, say what is needed instead.
  if (s.flops_unknown_nodes && !s.dynamic_inputs.empty()) {
    std::string names, args;
    for (const auto& [name, arg] : s.dynamic_inputs) {
      names += (names.empty() ? "'" : ", '") + name + "'";
      args += (args.empty() ? "--shape " : " --shape ") + arg;
    }
    return "FLOPs: unknown: input" + std::string(s.dynamic_inputs.size() == 1 ? " " : "s ") + names +
           (s.dynamic_inputs.size() == 1 ? " has" : " have") + " dynamic dims; pass " + args;
  }
  if (s.flops_unknown_nodes)
    return "FLOPs: unknown: the shapes of " + std::to_string(s.flops_unknown_nodes) + " node" +
           (s.flops_unknown_nodes == 1 ? "" : "s") + " (first " + s.first_unknown_flops_node +
           ") are unknown until the model runs";
  std::string o = "FLOPs: " + human(s.flops, "FLOPs") + " (estimate, 2 per multiply-add, " +
                  std::to_string(s.flops_counted_nodes) + " node" + (s.flops_counted_nodes == 1 ? "" : "s") + " counted";
  if (s.subgraph_nodes) o += "; nodes inside subgraphs not counted";
  return o + ")";
}

}  // namespace

std::string format_summary(const ModelSummary& s) {
  std::string o = "model: " + s.path + "\n";
  if (!s.opset_warning.empty()) o += "warning: " + s.opset_warning + "; results may be wrong\n";
  o += "  ir_version " + std::to_string(s.ir_version);
  if (!s.producer.empty()) o += ", producer " + s.producer;
  o += "\n  opsets:";
  for (const auto& op : s.opsets) o += " " + (op.domain.empty() ? std::string("ai.onnx") : op.domain) + " " + std::to_string(op.version);
  size_t w = 4;
  for (const auto* list : {&s.inputs, &s.outputs})
    for (const auto& d : *list) w = std::max(w, d.name.size());
  auto decls = [&](const char* title, const std::vector<TensorDecl>& v) {
    o += std::string("\n") + title + " (" + std::to_string(v.size()) + "):";
    for (const auto& d : v) {
      std::string type = d.dtype + d.shape;
      if (d.kind != "tensor") type = d.kind + "(" + d.dtype + ")";
      o += fmt::format("\n  {:<{}}  {}", d.name, w, type);
    }
  };
  decls("inputs", s.inputs);
  decls("outputs", s.outputs);
  o += "\nnodes: " + std::to_string(s.nodes);
  if (s.subgraphs) o += " (" + std::to_string(s.subgraph_nodes) + " in " + std::to_string(s.subgraphs) + " subgraph" + (s.subgraphs == 1 ? "" : "s") + ")";
  o += "\nop histogram:";
  std::vector<std::pair<std::string, int64_t>> hist(s.op_histogram.begin(), s.op_histogram.end());
  std::stable_sort(hist.begin(), hist.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  size_t ow = 4;
  for (const auto& [op, c] : hist) ow = std::max(ow, op.size());
  for (const auto& [op, c] : hist) o += fmt::format("\n  {:<{}}  {:>6}", op, ow, c);
  o += "\nparameters: " + grouped(s.parameters) + " (" + human(static_cast<double>(s.parameter_bytes), "B") + " in " +
       std::to_string(s.initializers) + " initializer" + (s.initializers == 1 ? "" : "s");
  if (s.constant_nodes)
    o += " and " + std::to_string(s.constant_nodes) + " Constant node" + (s.constant_nodes == 1 ? "" : "s") + "; " +
         grouped(s.constant_parameters) + " in Constant nodes";
  o += ")";
  o += "\n" + format_flops(s);
  std::string unmodelled;
  for (const auto& [op, c] : s.op_histogram)
    if (unmodelled_ops().count(op)) unmodelled += (unmodelled.empty() ? "" : ", ") + op + " x" + std::to_string(c);
  if (!unmodelled.empty()) o += "\nFLOPs: not modelled for " + unmodelled;
  if (!s.unsupported.empty()) {
    o += "\nunsupported by ferry:";
    for (const auto& [op, c] : s.unsupported) o += " " + op + " (" + std::to_string(c) + ")";
  }
  return o + "\n";
}

nlohmann::json summary_to_json(const ModelSummary& s) {
  using nlohmann::json;
  auto decls = [](const std::vector<TensorDecl>& v) {
    json a = json::array();
    for (const auto& d : v) a.push_back({{"name", d.name}, {"kind", d.kind}, {"dtype", d.dtype}, {"shape", d.shape}});
    return a;
  };
  json opsets = json::array();
  for (const auto& op : s.opsets) opsets.push_back({{"domain", op.domain.empty() ? "ai.onnx" : op.domain}, {"version", op.version}});
  return {{"path", s.path},
          {"ir_version", s.ir_version},
          {"producer", s.producer},
          {"opsets", opsets},
          {"inputs", decls(s.inputs)},
          {"outputs", decls(s.outputs)},
          {"nodes", s.nodes},
          {"subgraph_nodes", s.subgraph_nodes},
          {"subgraphs", s.subgraphs},
          {"op_histogram", s.op_histogram},
          {"unsupported_ops", s.unsupported},
          {"parameters", s.parameters},
          {"parameter_bytes", s.parameter_bytes},
          {"initializers", s.initializers},
          {"constant_parameters", s.constant_parameters},
          {"constant_nodes", s.constant_nodes},
          {"warnings", s.opset_warning.empty() ? json::array() : json::array({s.opset_warning + "; results may be wrong"})},
          {"flops", {{"estimate", s.flops},
                     {"counted_nodes", s.flops_counted_nodes},
                     {"unknown_dynamic_nodes", s.flops_unknown_nodes},
                     {"by_op", s.flops_by_op}}}};
}

}  // namespace ferry::tools
