#include "runtime/prepare.h"

#include "backends/backend.h"
#include "core/shape.h"
#include "targets/target.h"

namespace ferry::runtime {

Status check_fixed_shape(const ir::Graph& g, const std::string& name, const std::vector<int64_t>& dims) {
  const ir::Value* decl = g.find_local_value(name);
  if (!decl || !decl->is_graph_input || decl->is_constant()) {
    std::string names;
    for (const ir::Value* v : g.inputs)
      if (!v->is_constant()) names += (names.empty() ? "'" : ", '") + v->name + "'";
    return Status::invalid("'" + name + "' (given a shape, or a file with --input) is not a model input; the model's "
                           "inputs are: " + (names.empty() ? "(none)" : names));
  }
  for (int64_t d : dims)
    if (d < 0) return Status::invalid("the shape given for input '" + name + "' has a negative dimension");
  if (decl->kind != ir::ValueKind::kTensor)
    return Status::invalid("a shape is given for input '" + name + "', which is not a tensor");
  if (!decl->shape) return Status();
  const Shape& s = *decl->shape;
  if (s.size() != dims.size())
    return Status::invalid("the shape " + dims_to_string(dims) + " given for input '" + name + "' has rank " +
                           std::to_string(dims.size()) + " but the model declares " + shape_to_string(s));
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i].is_static() && s[i].value != dims[i])
      return Status::invalid("the shape " + dims_to_string(dims) + " given for input '" + name +
                             "' contradicts the model's " + shape_to_string(s) + " (dimension " + std::to_string(i) +
                             " differs)");
  return Status();
}

namespace {

// Checks the given shapes and writes them into the graph's inputs; a symbolic dim fixed in one input is
// fixed in every input that names it. A batch gear fixes dim 0 of every input.
Status fix_input_shapes(ir::Graph& g, const PrepareOptions& opts) {
  std::map<std::string, int64_t> symbols;
  for (const auto& [name, dims] : opts.input_shapes) {
    FERRY_RETURN_IF_ERROR(check_fixed_shape(g, name, dims));
    const ir::Value* decl = g.find_local_value(name);
    if (decl->shape)
      for (size_t i = 0; i < dims.size(); ++i)
        if (const Dim& d = (*decl->shape)[i]; !d.is_static() && !d.symbol.empty()) symbols.emplace(d.symbol, dims[i]);
  }
  for (ir::Value* in : g.inputs) {
    if (in->is_constant()) continue;
    if (auto it = opts.input_shapes.find(in->name); it != opts.input_shapes.end()) {
      in->shape = to_shape(it->second);
      if (opts.batch > 0 && !it->second.empty()) (*in->shape)[0] = Dim(opts.batch);
      continue;
    }
    if (opts.batch > 0) {
      if (in->kind != ir::ValueKind::kTensor || !in->shape || in->shape->empty())
        return Status::invalid("input '" + in->name + "' has no batch dimension (dynamic batch needs every input to be "
                               "a tensor of rank 1 or more)");
      (*in->shape)[0] = Dim(opts.batch);
    }
    if (!in->shape) continue;
    for (Dim& d : *in->shape)
      if (auto it = symbols.find(d.symbol); !d.is_static() && !d.symbol.empty() && it != symbols.end()) d = Dim(it->second);
  }
  return Status();
}

// Places the graph's nodes on the target; host and unsupported nodes join the keep-fp32 list.
Status place_on_target(ir::Model& model, const targets::Target& t, passes::PrecisionOptions& precision,
                       PrepareReport& rep) {
  FERRY_ASSIGN_OR_RETURN(std::optional<targets::Target> host, targets::load_host_target(t));
  const ir::Graph& g = *model.graph;
  const auto places = targets::place_graph(t, host ? &*host : nullptr, g);
  for (size_t i = 0; i < places.size() && i < g.nodes.size(); ++i) {
    rep.placement.emplace_back(g.nodes[i]->name, places[i]);
    if (places[i].placement == targets::Placement::kHost || places[i].placement == targets::Placement::kUnsupported) {
      precision.keep_fp32.push_back(g.nodes[i]->name);
      ++rep.host_nodes;
    }
  }
  return Status();
}

// "images=1,3,300,300 and mask=1,300": the shapes a failure may come from.
std::string shapes_text(const PrepareOptions& opts) {
  std::string s;
  for (const auto& [name, dims] : opts.input_shapes) {
    std::string d;
    for (int64_t x : dims) d += (d.empty() ? "" : ",") + std::to_string(x);
    s += (s.empty() ? "" : " and ") + name + "=" + d;
  }
  if (opts.batch > 0) s += (s.empty() ? "" : " and ") + std::string("batch ") + std::to_string(opts.batch);
  return s;
}

// A pass that fails once shapes are fixed (a Concat whose inputs no longer agree) is about the shapes the
// user gave, not about an internal node: say which input shapes the model cannot take.
Status optimize_step(ir::Model& model, const passes::OptimizeOptions& po, const PrepareOptions& opts,
                     std::vector<passes::PassReport>* reports) {
  Status st = passes::optimize(model, po, reports);
  if (st.ok()) return st;
  const std::string shapes = shapes_text(opts);
  if (!shapes.empty())
    return st.with_context("the model cannot take the input shape(s) " + shapes + " (check the dims it allows)");
  return st.with_context("while optimizing " + model.source_path);
}

}  // namespace

Status prepare(ir::Model& model, const PrepareOptions& opts, PrepareReport* report) {
  PrepareReport local;
  PrepareReport& rep = report ? *report : local;
  rep = PrepareReport();
  if (opts.opt_level < 0 || opts.opt_level > 3)
    return Status::invalid("optimization level " + std::to_string(opts.opt_level) + " is not one of 0, 1, 2, 3");
  const std::string& label = model.source_path;
  FERRY_RETURN_IF_ERROR(fix_input_shapes(*model.graph, opts).with_context(label));
  passes::PrecisionOptions precision = opts.precision;
  passes::OptimizeOptions po;
  po.opt_level = opts.opt_level;
  if (!opts.target.empty()) {
    FERRY_ASSIGN_OR_RETURN(targets::Target t, targets::load_target(opts.target));
    rep.target = t.name;
    rep.emulated = t.emulated;
    if (!opts.precision_given) {
      auto m = passes::parse_precision(t.default_precision);
      if (!m.ok()) return m.status().with_context("target " + t.name);
      precision.mode = *m;
    }
    // What gets placed is what runs: shape chains that fold are on no device.
    if (opts.opt_level >= 1) {
      passes::OptimizeOptions cleanup;
      cleanup.opt_level = 1;
      FERRY_RETURN_IF_ERROR(optimize_step(model, cleanup, opts, &rep.passes));
    }
    FERRY_RETURN_IF_ERROR(place_on_target(model, t, precision, rep));
  }
  // Level 0 with nothing fixed leaves the graph as imported (a .ferry file's graph was optimized when
  // compiled): no re-inference at load.
  if (opts.opt_level > 0 || !opts.input_shapes.empty() || opts.batch > 0 || !opts.target.empty())
    FERRY_RETURN_IF_ERROR(optimize_step(model, po, opts, &rep.passes));
  // Also at fp32: reading the keep list / mixlist reports a bad file even when it would change nothing.
  Status st = passes::apply_precision(model, precision, &rep.precision);
  if (!st.ok()) return st.with_context("while applying precision " + passes::to_string(precision.mode));
  return Status();
}

std::string target_label(const PrepareReport& r) {
  if (r.target.empty()) return "";
  return r.target + (r.emulated ? " (EMULATED on this CPU: the device's numerics, CPU timings)" : "") +
         (r.host_nodes ? ", " + std::to_string(r.host_nodes) + " node(s) on the host in fp32" : "");
}

std::string describe_precision(passes::PrecisionMode m, const std::string& backend,
                               const backends::BackendOptions& options) {
  bool native = false;
  std::string why;
  if (auto b = backends::make_backend(backend, options); b.ok()) native = (*b)->native_bf16(&why);
  return passes::describe(m, backend, native, why);
}

}  // namespace ferry::runtime
