// ArgMax / ArgMin: int64 index of the largest / smallest element along `axis` (keepdims, and from opset
// 12 select_last_index to report the last of equal extremes instead of the first). Like numpy, a NaN
// counts as the extreme, and the first NaN wins.
#include <cmath>
#include <string>

#include "ops/op.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

template <class T>
void arg_extreme(const Tensor& x, const AxisSplit& s, bool want_max, bool last, int64_t* out) {
  const T* px = x.data<T>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      int64_t best = 0;
      auto bv = static_cast<compute_t<T>>(px[s.at(o, 0, i)]);
      for (int64_t k = 1; k < s.n; ++k) {
        auto v = static_cast<compute_t<T>>(px[s.at(o, k, i)]);
        if constexpr (is_float_like_v<T>) {
          if (std::isnan(bv)) {
            if (!last) break;
            if (std::isnan(v)) best = k;
            continue;
          }
          if (std::isnan(v)) {
            best = k;
            bv = v;
            continue;
          }
        }
        bool better = want_max ? v > bv : v < bv;
        if (better || (last && v == bv)) {
          best = k;
          bv = v;
        }
      }
      out[o * s.inner + i] = best;
    }
  }
}

Status arg_kernel(KernelContext& ctx, bool want_max) {
  const Tensor& x = ctx.input(0);
  const ir::Node& node = ctx.node();
  const int64_t rank = x.rank();
  // A scalar is treated as a one-element vector.
  FERRY_ASSIGN_OR_RETURN(int64_t axis, axis_attr(node, 0, rank == 0 ? 1 : rank));
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool last = node.opset >= 12 && node.attr_int("select_last_index", 0) != 0;
  std::vector<int64_t> dims = x.dims();
  if (rank == 0) dims = {1};
  if (dims[axis] == 0) return Status::invalid("cannot take " + node.op_type + " over an empty axis");
  std::vector<bool> mask(dims.size(), false);
  mask[axis] = true;
  std::vector<int64_t> out_dims = reduced_dims(dims, mask, keepdims);
  if (rank == 0) out_dims.clear();
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::kInt64, out_dims));
  const AxisSplit s = split_at_axis(dims, axis);
  bool handled = dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    arg_extreme<T>(x, s, want_max, last, out->data<int64_t>());
  });
  if (!handled) return Status::unsupported(node.op_type + ": unsupported dtype");
  return Status();
}

Status arg_infer(InferContext& ctx) {
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, DType::kInt64, std::nullopt);
    return Status();
  }
  const int64_t rank = static_cast<int64_t>((*in)->size());
  if (rank == 0) {
    ctx.set_output(0, DType::kInt64, Shape{});
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(int64_t axis, axis_attr(ctx.node(), 0, rank));
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[axis] = true;
  ctx.set_output(0, DType::kInt64, reduced_shape(**in, mask, ctx.node().attr_int("keepdims", 1) != 0));
  return Status();
}

}  // namespace

void register_arg_max_min(OpRegistry& r) {
  for (bool want_max : {true, false}) {
    r.add(OpSchema{
        .op_type = want_max ? "ArgMax" : "ArgMin",
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .infer = arg_infer,
        .kernel = [want_max](KernelContext& ctx) { return arg_kernel(ctx, want_max); },
    });
  }
}

}  // namespace ferry::ops
