// Scan. Opset 8: every input has a leading batch axis, scan inputs are scanned along axis 1, optional
// sequence_lens (per batch) and `directions`. Opset 9+: no batch axis; scan_input_axes/directions and
// scan_output_axes/directions choose the axis and order per scan input/output.
// Body inputs: N states then M scan slices; body outputs: N states then K per-step scan outputs.
#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Result<Tensor> take_index(const Tensor& t, int axis, int64_t index) {
  FERRY_ASSIGN_OR_RETURN(Tensor s, slice_along(t, axis, index, 1));
  std::vector<int64_t> d = s.dims();
  d.erase(d.begin() + axis);
  return s.reshaped(d);
}

// One attribute list entry per scan item, defaulting to 0.
std::vector<int64_t> per_item(const ir::Node& node, const char* name, int count) {
  std::vector<int64_t> v = node.attr_ints(name);
  v.resize(count, 0);
  return v;
}

struct ScanIO {
  std::vector<RtValue> states;  // N
  std::vector<Tensor> scans;    // M scan inputs, each with the scan axis at scan_axes[j]
};

// Runs the body over `len` steps; returns final states and the K scan outputs stacked per out_axes.
Status run_scan(KernelContext& ctx, const ir::Graph& body, ScanIO io, const std::vector<int64_t>& in_axes,
                const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                const std::vector<int64_t>& out_dirs, int64_t len, std::vector<RtValue>& states_out,
                std::vector<Tensor>& scans_out) {
  const int n = static_cast<int>(io.states.size());
  const int m = static_cast<int>(io.scans.size());
  const int k = static_cast<int>(body.outputs.size()) - n;
  if (k < 0) return Status::invalid("Scan body has fewer outputs than states");
  if (body.inputs.size() != static_cast<size_t>(n + m))
    return Status::invalid("Scan body takes " + std::to_string(body.inputs.size()) + " inputs, expected " +
                           std::to_string(n + m));
  std::vector<std::vector<Tensor>> steps(k);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<RtValue> feeds = io.states;
    for (int j = 0; j < m; ++j) {
      const int64_t idx = in_dirs[j] == 1 ? len - 1 - t : t;
      FERRY_ASSIGN_OR_RETURN(Tensor s, take_index(io.scans[j], static_cast<int>(in_axes[j]), idx));
      feeds.emplace_back(std::move(s));
    }
    FERRY_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runner()->run(body, std::move(feeds)));
    for (int i = 0; i < n; ++i) io.states[i] = std::move(outs[i]);
    for (int q = 0; q < k; ++q) {
      if (!outs[n + q].is_tensor()) return Status::invalid("Scan output " + std::to_string(q) + " must be a tensor");
      steps[q].push_back(std::move(outs[n + q].tensor));
    }
  }
  states_out = std::move(io.states);
  scans_out.clear();
  for (int q = 0; q < k; ++q) {
    if (steps[q].empty()) {
      const ir::Value* o = body.outputs[n + q];
      std::vector<int64_t> dims;
      if (o->shape && is_static(*o->shape)) dims = static_dims(*o->shape);
      int64_t axis = out_axes[q] < 0 ? out_axes[q] + static_cast<int64_t>(dims.size()) + 1 : out_axes[q];
      if (axis < 0 || axis > static_cast<int64_t>(dims.size())) axis = 0;
      dims.insert(dims.begin() + axis, 0);
      FERRY_ASSIGN_OR_RETURN(Tensor e, Tensor::create(o->dtype != DType::kUndefined ? o->dtype : DType::kFloat32, dims));
      scans_out.push_back(std::move(e));
      continue;
    }
    if (out_dirs[q] == 1) std::reverse(steps[q].begin(), steps[q].end());
    FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(out_axes[q], steps[q][0].rank() + 1));
    FERRY_ASSIGN_OR_RETURN(Tensor stacked, stack_along(steps[q], static_cast<int>(axis)));
    scans_out.push_back(std::move(stacked));
  }
  return Status();
}

Status scan9_kernel(KernelContext& ctx) {
  const ir::Graph* body = ctx.node().attr_graph("body");
  if (!body) return Status::invalid("Scan requires the 'body' graph attribute");
  if (!ctx.runner()) return Status::internal("Scan needs a subgraph runner");
  const int m = static_cast<int>(ctx.node().attr_int("num_scan_inputs", 0));
  if (m <= 0 || m > ctx.num_inputs()) return Status::invalid("Scan num_scan_inputs must be in [1, #inputs]");
  const int n = ctx.num_inputs() - m;
  ScanIO io;
  for (int i = 0; i < n; ++i) io.states.push_back(ctx.input_value(i) ? *ctx.input_value(i) : RtValue::none());
  std::vector<int64_t> in_axes = per_item(ctx.node(), "scan_input_axes", m);
  std::vector<int64_t> in_dirs = per_item(ctx.node(), "scan_input_directions", m);
  int64_t len = -1;
  for (int j = 0; j < m; ++j) {
    if (!ctx.has_input(n + j) || !ctx.input_value(n + j)->is_tensor())
      return Status::invalid("Scan input " + std::to_string(n + j) + " must be a tensor");
    const Tensor& x = ctx.input(n + j);
    FERRY_ASSIGN_OR_RETURN(in_axes[j], normalize_axis(in_axes[j], x.rank()));
    const int64_t l = x.dim(static_cast<int>(in_axes[j]));
    if (len >= 0 && l != len)
      return Status::invalid("Scan inputs disagree on the sequence length: " + std::to_string(len) + " vs " +
                             std::to_string(l));
    len = l;
    io.scans.push_back(x);
  }
  const int k = static_cast<int>(body->outputs.size()) - n;
  std::vector<int64_t> out_axes = per_item(ctx.node(), "scan_output_axes", std::max(k, 0));
  std::vector<int64_t> out_dirs = per_item(ctx.node(), "scan_output_directions", std::max(k, 0));
  std::vector<RtValue> states;
  std::vector<Tensor> scans;
  FERRY_RETURN_IF_ERROR(run_scan(ctx, *body, std::move(io), in_axes, in_dirs, out_axes, out_dirs, len, states, scans));
  for (int i = 0; i < n && i < ctx.num_outputs(); ++i) ctx.set_output_value(i, std::move(states[i]));
  for (int q = 0; q < static_cast<int>(scans.size()) && n + q < ctx.num_outputs(); ++q)
    ctx.set_output(n + q, std::move(scans[q]));
  return Status();
}

// Opset 8: batch axis 0 everywhere; the body runs per batch entry with scan axis 1 (axis 0 once the
// batch entry is taken). Steps past sequence_lens[b] are not run; their scan outputs stay zero.
Status scan8_kernel(KernelContext& ctx) {
  const ir::Graph* body = ctx.node().attr_graph("body");
  if (!body) return Status::invalid("Scan requires the 'body' graph attribute");
  if (!ctx.runner()) return Status::internal("Scan needs a subgraph runner");
  const int m = static_cast<int>(ctx.node().attr_int("num_scan_inputs", 0));
  const int n = ctx.num_inputs() - 1 - m;
  if (m <= 0 || n < 0) return Status::invalid("Scan num_scan_inputs must be in [1, #inputs - 1]");
  std::vector<int64_t> dirs = per_item(ctx.node(), "directions", m);
  int64_t batch = -1, max_len = -1;
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i) || !ctx.input_value(i)->is_tensor() || ctx.input(i).rank() < (i > n ? 2 : 1))
      return Status::invalid("Scan input " + std::to_string(i) + " must be a tensor with a batch axis");
    const int64_t b = ctx.input(i).dim(0);
    if (batch >= 0 && b != batch) return Status::invalid("Scan inputs disagree on the batch size");
    batch = b;
    if (i > n) {
      const int64_t l = ctx.input(i).dim(1);
      if (max_len >= 0 && l != max_len) return Status::invalid("Scan inputs disagree on the sequence length");
      max_len = l;
    }
  }
  std::vector<int64_t> lens(batch, max_len);
  if (ctx.has_input(0)) {
    std::vector<int64_t> given = ctx.input(0).to_int64_vector();
    if (static_cast<int64_t>(given.size()) != batch) return Status::invalid("sequence_lens must have one entry per batch");
    for (int64_t b = 0; b < batch; ++b) {
      if (given[b] < 0 || given[b] > max_len) return Status::invalid("sequence_lens[" + std::to_string(b) + "] out of range");
      lens[b] = given[b];
    }
  }
  const int k = static_cast<int>(body->outputs.size()) - n;
  if (k < 0) return Status::invalid("Scan body has fewer outputs than states");
  std::vector<int64_t> zeros_k(k, 0), zeros_m(m, 0);
  std::vector<std::vector<RtValue>> state_rows(n);
  std::vector<std::vector<Tensor>> scan_rows(k);
  for (int64_t b = 0; b < batch; ++b) {
    ScanIO io;
    for (int i = 0; i < n; ++i) {
      FERRY_ASSIGN_OR_RETURN(Tensor s, take_index(ctx.input(1 + i), 0, b));
      io.states.emplace_back(std::move(s));
    }
    for (int j = 0; j < m; ++j) {
      FERRY_ASSIGN_OR_RETURN(Tensor s, take_index(ctx.input(1 + n + j), 0, b));
      FERRY_ASSIGN_OR_RETURN(Tensor head, slice_along(s, 0, 0, lens[b]));
      io.scans.push_back(std::move(head));
    }
    std::vector<RtValue> states;
    std::vector<Tensor> scans;
    FERRY_RETURN_IF_ERROR(run_scan(ctx, *body, std::move(io), zeros_m, dirs, zeros_k, zeros_k, lens[b], states, scans));
    for (int i = 0; i < n; ++i) state_rows[i].push_back(std::move(states[i]));
    for (int q = 0; q < k; ++q) {
      Tensor s = std::move(scans[q]);
      if (s.dim(0) < max_len) {  // pad the unrun steps with zeros
        std::vector<int64_t> d = s.dims();
        d[0] = max_len - s.dim(0);
        FERRY_ASSIGN_OR_RETURN(Tensor pad, Tensor::create(s.dtype(), d));
        FERRY_ASSIGN_OR_RETURN(s, concat_along({s, pad}, 0));
      }
      scan_rows[q].push_back(std::move(s));
    }
  }
  for (int i = 0; i < n && i < ctx.num_outputs(); ++i) {
    std::vector<Tensor> rows;
    for (RtValue& v : state_rows[i]) {
      if (!v.is_tensor()) return Status::invalid("Scan-8 states must be tensors");
      rows.push_back(std::move(v.tensor));
    }
    if (rows.empty()) return Status::invalid("Scan with batch size 0");
    FERRY_ASSIGN_OR_RETURN(Tensor t, stack_along(rows, 0));
    ctx.set_output(i, std::move(t));
  }
  for (int q = 0; q < k && n + q < ctx.num_outputs(); ++q) {
    if (scan_rows[q].empty()) return Status::invalid("Scan with batch size 0");
    FERRY_ASSIGN_OR_RETURN(Tensor t, stack_along(scan_rows[q], 0));
    ctx.set_output(n + q, std::move(t));
  }
  return Status();
}

// Shared inference: seed the body from the node inputs (minus batch/scan axes), then derive outputs.
Status scan_infer(InferContext& ctx, bool batched) {
  ir::Graph* body = mutable_subgraph(ctx.node(), "body");
  if (!body) return Status();
  const int first = batched ? 1 : 0;
  const int m = static_cast<int>(ctx.node().attr_int("num_scan_inputs", 0));
  const int n = ctx.node().num_inputs() - first - m;
  if (m <= 0 || n < 0) return Status();
  std::vector<int64_t> in_axes = per_item(ctx.node(), batched ? "" : "scan_input_axes", m);
  for (int i = 0; i < n + m && i < static_cast<int>(body->inputs.size()); ++i) {
    const ir::Value* in = ctx.input(first + i);
    if (!in) continue;
    std::optional<Shape> s = in->shape;
    if (s && batched && !s->empty()) s->erase(s->begin());
    if (s && i >= n) {
      int64_t axis = batched ? 0 : in_axes[i - n];
      if (axis < 0) axis += static_cast<int64_t>(s->size());
      if (axis >= 0 && axis < static_cast<int64_t>(s->size())) s->erase(s->begin() + axis);
      else s.reset();
    }
    seed_value_type(*body->inputs[i], in->kind, in->dtype, s);
  }
  FERRY_RETURN_IF_ERROR(infer_graph(*body));
  const int k = static_cast<int>(body->outputs.size()) - n;
  std::vector<int64_t> out_axes = per_item(ctx.node(), batched ? "" : "scan_output_axes", std::max(k, 0));
  for (int i = 0; i < ctx.node().num_outputs() && i < static_cast<int>(body->outputs.size()); ++i) {
    const ir::Value* o = body->outputs[i];
    std::optional<Shape> s = o->shape;
    if (s && i >= n) {
      int64_t axis = batched ? 0 : out_axes[i - n];
      if (axis < 0) axis += static_cast<int64_t>(s->size()) + 1;
      if (axis >= 0 && axis <= static_cast<int64_t>(s->size())) s->insert(s->begin() + axis, Dim());
      else s.reset();
    }
    if (s && batched) s->insert(s->begin(), Dim());
    if (o->kind != ir::ValueKind::kTensor) ctx.set_output_kind(i, o->kind);
    ctx.set_output(i, o->dtype, s);
  }
  return Status();
}

}  // namespace

void register_scan(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Scan", .since_version = 8, .until_version = 8, .min_inputs = 2,
                 .infer = [](InferContext& ctx) { return scan_infer(ctx, true); }, .kernel = scan8_kernel});
  r.add(OpSchema{.op_type = "Scan", .since_version = 9, .min_inputs = 1,
                 .infer = [](InferContext& ctx) { return scan_infer(ctx, false); }, .kernel = scan9_kernel});
}

}  // namespace ferry::ops
