// Slice: numpy-style slicing with per-axis starts/ends/steps (attributes before opset 10, inputs from
// 10). Out-of-range starts/ends are clamped; negative steps walk backwards.
#include <algorithm>
#include <cstdint>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

struct AxisSlice {
  int64_t start = 0, step = 1, count = 0;
};

// Clamps start/end for an axis of size `dim` the way the ONNX spec (and numpy) do.
AxisSlice clamp_slice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  AxisSlice s;
  s.step = step;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    s.count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    const int64_t mag = step == INT64_MIN ? INT64_MAX : -step;  // -INT64_MIN overflows
    s.count = start > end ? (start - end - 1) / mag + 1 : 0;
  }
  s.start = start;
  return s;
}

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Validates lengths and normalizes axes; fills defaults.
Status finish_args(SliceArgs& a, int64_t rank, bool have_axes, bool have_steps) {
  const size_t n = a.starts.size();
  if (a.ends.size() != n)
    return Status::invalid("starts " + dims_to_string(a.starts) + " and ends " + dims_to_string(a.ends) +
                           " differ in length");
  if (!have_axes) {
    a.axes.clear();
    for (size_t i = 0; i < n; ++i) a.axes.push_back(static_cast<int64_t>(i));
  }
  if (!have_steps) a.steps.assign(n, 1);
  if (a.axes.size() != n) return Status::invalid("axes " + dims_to_string(a.axes) + " do not match starts in length");
  if (a.steps.size() != n) return Status::invalid("steps " + dims_to_string(a.steps) + " do not match starts in length");
  FERRY_ASSIGN_OR_RETURN(a.axes, normalize_axes(a.axes, rank));
  for (int64_t s : a.steps)
    if (s == 0) return Status::invalid("slice step must not be 0");
  return Status();
}

Result<SliceArgs> kernel_args(const KernelContext& ctx, int64_t rank) {
  SliceArgs a;
  bool have_axes, have_steps = false;
  if (ctx.opset() < 10) {
    a.starts = ctx.node().attr_ints("starts");
    a.ends = ctx.node().attr_ints("ends");
    have_axes = ctx.node().has_attr("axes");
    if (have_axes) a.axes = ctx.node().attr_ints("axes");
  } else {
    FERRY_ASSIGN_OR_RETURN(const Tensor* st, tensor_input(ctx, 1, "starts"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* en, tensor_input(ctx, 2, "ends"));
    FERRY_ASSIGN_OR_RETURN(a.starts, int_values(*st, "starts"));
    FERRY_ASSIGN_OR_RETURN(a.ends, int_values(*en, "ends"));
    have_axes = has_tensor_input(ctx, 3);
    if (have_axes) {
      FERRY_ASSIGN_OR_RETURN(a.axes, int_values(ctx.input(3), "axes"));
    }
    have_steps = has_tensor_input(ctx, 4);
    if (have_steps) {
      FERRY_ASSIGN_OR_RETURN(a.steps, int_values(ctx.input(4), "steps"));
    }
  }
  FERRY_RETURN_IF_ERROR(finish_args(a, rank, have_axes, have_steps));
  return a;
}

Status slice_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(SliceArgs a, kernel_args(ctx, x->rank()));
  std::vector<int64_t> dims = x->dims();
  std::vector<int64_t> in_strides = strides_of(x->dims());
  std::vector<int64_t> strides = in_strides;
  int64_t base = 0;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const int64_t ax = a.axes[i];
    AxisSlice s = clamp_slice(a.starts[i], a.ends[i], a.steps[i], x->dims()[ax]);
    dims[ax] = s.count;
    if (s.count > 0) base += s.start * in_strides[ax];
    strides[ax] = in_strides[ax] * s.step;
  }
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  strided_copy(x->raw(), base, strides, out->raw(), dims, dtype_size(x->dtype()));
  return Status();
}

Status slice_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  const Shape& s = **in;
  const int64_t rank = static_cast<int64_t>(s.size());
  SliceArgs a;
  bool known = true, have_axes, have_steps = false;
  if (ctx.opset() < 10) {
    a.starts = ctx.node().attr_ints("starts");
    a.ends = ctx.node().attr_ints("ends");
    have_axes = ctx.node().has_attr("axes");
    if (have_axes) a.axes = ctx.node().attr_ints("axes");
  } else {
    auto get = [&](int i, std::vector<int64_t>& dst) {
      auto v = known_ints(ctx, i);
      if (v) dst = *v;
      else known = false;
    };
    get(1, a.starts);
    get(2, a.ends);
    have_axes = ctx.has_input(3);
    if (have_axes) get(3, a.axes);
    have_steps = ctx.has_input(4);
    if (have_steps) get(4, a.steps);
  }
  Shape out = s;
  if (!known) {
    // Only the axes are known (or nothing): those dims become unknown.
    if (have_axes && ctx.opset() >= 10) {
      if (auto ax = known_ints(ctx, 3)) {
        auto norm = normalize_axes(*ax, rank);
        if (norm.ok()) {
          for (int64_t i : *norm) out[i] = Dim();
          ctx.set_output(0, dt, out);
          return Status();
        }
      }
    }
    ctx.set_output(0, dt, unknown_dims(rank));
    return Status();
  }
  FERRY_RETURN_IF_ERROR(finish_args(a, rank, have_axes, have_steps));
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const int64_t ax = a.axes[i];
    if (!s[ax].is_static()) {
      out[ax] = Dim();
      continue;
    }
    out[ax] = Dim(clamp_slice(a.starts[i], a.ends[i], a.steps[i], s[ax].value).count);
  }
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_slice(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Slice", .since_version = 1, .until_version = 9, .min_inputs = 1, .max_inputs = 1,
                 .infer = slice_infer, .kernel = slice_kernel});
  r.add(OpSchema{.op_type = "Slice", .since_version = 10, .min_inputs = 3, .max_inputs = 5,
                 .infer = slice_infer, .kernel = slice_kernel});
}

}  // namespace ferry::ops
