// Squeeze / Unsqueeze: remove or insert size-1 dims. Axes are an attribute before opset 13 and an
// input from 13 on. The output shares the input's buffer.
#include <algorithm>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

// The axes of a Squeeze/Unsqueeze node in the kernel: attribute or input 1; nullopt when not given.
Result<std::optional<std::vector<int64_t>>> kernel_axes(const KernelContext& ctx) {
  if (ctx.opset() < 13) {
    if (!ctx.node().has_attr("axes")) return std::optional<std::vector<int64_t>>();
    return std::optional<std::vector<int64_t>>(ctx.node().attr_ints("axes"));
  }
  if (!has_tensor_input(ctx, 1)) return std::optional<std::vector<int64_t>>();
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> axes, int_values(ctx.input(1), "axes"));
  return std::optional<std::vector<int64_t>>(std::move(axes));
}

// Inference: known axes (attribute or constant input), `known` false when the input is not known.
std::optional<std::vector<int64_t>> infer_axes(const InferContext& ctx, bool& known) {
  known = true;
  if (ctx.opset() < 13) {
    if (!ctx.node().has_attr("axes")) return std::nullopt;
    return ctx.node().attr_ints("axes");
  }
  if (!ctx.has_input(1)) return std::nullopt;
  auto v = known_ints(ctx, 1);
  if (!v) known = false;
  return v;
}

Result<std::vector<int64_t>> squeeze_dims(const std::vector<int64_t>& in,
                                          const std::optional<std::vector<int64_t>>& axes) {
  std::vector<int64_t> out;
  if (!axes) {
    for (int64_t d : in)
      if (d != 1) out.push_back(d);
    return out;
  }
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> ax, normalize_axes(*axes, static_cast<int64_t>(in.size())));
  for (int64_t a : ax)
    if (in[a] != 1)
      return Status::invalid("cannot squeeze axis " + std::to_string(a) + " of " + dims_to_string(in) +
                             ": its size is not 1");
  for (size_t i = 0; i < in.size(); ++i)
    if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(i)) == ax.end()) out.push_back(in[i]);
  return out;
}

Status squeeze_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(auto axes, kernel_axes(ctx));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, squeeze_dims(x->dims(), axes));
  FERRY_ASSIGN_OR_RETURN(Tensor out, x->reshaped(dims));
  ctx.set_output(0, std::move(out));
  return Status();
}

Status squeeze_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  bool known = true;
  auto axes = infer_axes(ctx, known);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!known || !in || !*in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  const Shape& s = **in;
  const int64_t rank = static_cast<int64_t>(s.size());
  Shape out;
  if (!axes) {
    for (const Dim& d : s) {
      if (!d.is_static()) {  // might be 1: rank unknown
        ctx.set_output(0, dt, std::nullopt);
        return Status();
      }
      if (d.value != 1) out.push_back(d);
    }
  } else {
    FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> ax, normalize_axes(*axes, rank));
    for (int64_t i = 0; i < rank; ++i) {
      bool squeezed = std::find(ax.begin(), ax.end(), i) != ax.end();
      if (squeezed && s[i].is_static() && s[i].value != 1)
        return Status::invalid("cannot squeeze axis " + std::to_string(i) + " of " + shape_to_string(s) +
                               ": its size is not 1");
      if (!squeezed) out.push_back(s[i]);
    }
  }
  ctx.set_output(0, dt, out);
  return Status();
}

Result<std::vector<int64_t>> unsqueeze_positions(const std::vector<int64_t>& axes, int64_t in_rank) {
  return normalize_axes(axes, in_rank + static_cast<int64_t>(axes.size()));
}

Status unsqueeze_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(auto axes, kernel_axes(ctx));
  if (!axes) return Status::invalid("Unsqueeze needs axes");
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> pos, unsqueeze_positions(*axes, x->rank()));
  const size_t out_rank = x->dims().size() + pos.size();
  std::vector<int64_t> dims;
  size_t src = 0;
  for (size_t i = 0; i < out_rank; ++i) {
    if (std::find(pos.begin(), pos.end(), static_cast<int64_t>(i)) != pos.end())
      dims.push_back(1);
    else
      dims.push_back(x->dims()[src++]);
  }
  FERRY_ASSIGN_OR_RETURN(Tensor out, x->reshaped(dims));
  ctx.set_output(0, std::move(out));
  return Status();
}

Status unsqueeze_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  bool known = true;
  auto axes = infer_axes(ctx, known);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!known || !axes || !in || !*in) {
    // Axes unknown but their count known: the rank is known.
    const std::optional<Shape>* as = ctx.opset() >= 13 ? ctx.input_shape(1) : nullptr;
    std::optional<Shape> out;
    if (in && *in && as && *as && (*as)->size() == 1 && (**as)[0].is_static())
      out = unknown_dims(static_cast<int64_t>((*in)->size()) + (**as)[0].value);
    ctx.set_output(0, dt, out);
    return Status();
  }
  const Shape& s = **in;
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> pos, unsqueeze_positions(*axes, static_cast<int64_t>(s.size())));
  Shape out;
  size_t src = 0;
  for (size_t i = 0; i < s.size() + pos.size(); ++i) {
    if (std::find(pos.begin(), pos.end(), static_cast<int64_t>(i)) != pos.end())
      out.emplace_back(1);
    else
      out.push_back(s[src++]);
  }
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_squeeze(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Squeeze", .since_version = 1, .min_inputs = 1, .max_inputs = 2,
                 .infer = squeeze_infer, .kernel = squeeze_kernel});
  r.add(OpSchema{.op_type = "Unsqueeze", .since_version = 1, .min_inputs = 1, .max_inputs = 2,
                 .infer = unsqueeze_infer, .kernel = unsqueeze_kernel});
}

}  // namespace ferry::ops
