// DFT (opset 17: axis attribute, default 1; opset 20: axis is input 2, default -2). Input is
// [..., 1] (real) or [..., 2] (complex, interleaved); `axis` names a signal axis (never the last).
// Forward with onesided keeps n/2+1 bins; inverse with onesided is the inverse real DFT ([..., 1]).
#include "ops/op.h"
#include "ops/util/control_numeric.h"
#include "ops/util/control_signal.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Result<int64_t> dft_axis(const ir::Node& node, int rank, const Tensor* axis_input) {
  int64_t axis = node.opset >= 20 ? -2 : node.attr_int("axis", 1);
  if (node.opset >= 20 && axis_input) {
    FERRY_ASSIGN_OR_RETURN(axis, scalar_int(*axis_input, "DFT axis"));
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return Status::invalid("DFT axis " + std::to_string(axis) + " must name a signal axis of the rank-" +
                           std::to_string(rank) + " input (not the last)");
  return axis;
}

Status dft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DType T = x.dtype();
  if (!is_floating(T)) return Status::invalid("DFT needs a floating input");
  if (x.rank() < 2 || (x.dim(-1) != 1 && x.dim(-1) != 2))
    return Status::invalid("DFT input must be [..., 1] or [..., 2], got " + x.describe());
  FERRY_ASSIGN_OR_RETURN(int64_t axis, dft_axis(ctx.node(), x.rank(), ctx.has_input(2) ? &ctx.input(2) : nullptr));
  const bool inverse = ctx.node().attr_int("inverse", 0) != 0;
  const bool onesided = ctx.node().attr_int("onesided", 0) != 0;
  const int64_t len = x.dim(static_cast<int>(axis));
  int64_t n = inverse && onesided ? 2 * (len - 1) : len;
  if (ctx.has_input(1)) {
    FERRY_ASSIGN_OR_RETURN(n, scalar_int(ctx.input(1), "DFT dft_length"));
  }
  if (n <= 0) return Status::invalid("DFT length must be positive, got " + std::to_string(n));

  signal::Lanes in;
  in.length = len;
  for (int d = 0; d < axis; ++d) in.outer *= x.dim(d);
  for (int d = static_cast<int>(axis) + 1; d < x.rank() - 1; ++d) in.inner *= x.dim(d);
  const std::vector<double> v = x.to_double_vector();
  const bool complex_in = x.dim(-1) == 2;
  in.data.resize(v.size() / (complex_in ? 2 : 1));
  for (size_t i = 0; i < in.data.size(); ++i)
    in.data[i] = complex_in ? signal::cd(v[2 * i], v[2 * i + 1]) : signal::cd(v[i], 0);

  signal::Lanes out;
  bool real_out = false;
  if (!inverse) out = signal::dft(in, n, onesided ? n / 2 + 1 : n);
  else if (onesided) { out = signal::irdft(in, n); real_out = true; }
  else out = signal::idft(in, n);

  std::vector<int64_t> dims = x.dims();
  dims[axis] = out.length;
  dims.back() = real_out ? 1 : 2;
  std::vector<double> flat;
  flat.reserve(out.data.size() * 2);
  for (const signal::cd& c : out.data) {
    flat.push_back(c.real());
    if (!real_out) flat.push_back(c.imag());
  }
  FERRY_ASSIGN_OR_RETURN(Tensor y, from_doubles(T, dims, flat));
  ctx.set_output(0, std::move(y));
  return Status();
}

Status dft_infer(InferContext& ctx) {
  const DType T = ctx.input_dtype(0);
  ctx.set_output_dtype(0, T);
  const int rank = ctx.input_rank(0);
  if (rank < 2) return Status();
  const ir::Node& node = ctx.node();
  const Tensor* axis_c = node.opset >= 20 ? ctx.input_constant(2) : nullptr;
  if (node.opset >= 20 && ctx.has_input(2) && !axis_c) return Status();
  auto axis = dft_axis(node, rank, axis_c);
  if (!axis.ok()) return Status();
  Shape s = **ctx.input_shape(0);
  const bool inverse = node.attr_int("inverse", 0) != 0, onesided = node.attr_int("onesided", 0) != 0;
  Dim len = s[*axis];
  Dim n = len.is_static() ? Dim(inverse && onesided ? 2 * (len.value - 1) : len.value) : Dim();
  if (ctx.has_input(1)) {
    const Tensor* c = ctx.input_constant(1);
    n = c && c->numel() == 1 ? Dim(c->as_int64(0)) : Dim();
  }
  if (!inverse && onesided) s[*axis] = n.is_static() ? Dim(n.value / 2 + 1) : Dim();
  else s[*axis] = n;
  s.back() = inverse && onesided ? Dim(1) : Dim(2);
  ctx.set_output(0, T, s);
  return Status();
}

}  // namespace

void register_dft(OpRegistry& r) {
  r.add(OpSchema{.op_type = "DFT", .since_version = 17, .min_inputs = 1, .max_inputs = 3,
                 .infer = dft_infer, .kernel = dft_kernel});
}

}  // namespace ferry::ops
