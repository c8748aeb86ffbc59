// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is coerced to 2D at `axis` (default 1) and
// the op runs over each row of prod(dims[axis:]) elements; from opset 13 it runs along the single axis
// `axis` (default -1).
#include <cmath>
#include <limits>
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

enum class SoftKind { kSoftmax, kLogSoftmax, kHardmax };

// Resolves the [outer, n, inner] view the op works on.
Result<AxisSplit> softmax_view(const ir::Node& node, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (node.opset < 13) {
    int64_t axis = node.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    // axis == rank is allowed by the 2D coercion (every row has one element).
    if (axis < 0 || axis > rank)
      return Status::invalid("axis " + std::to_string(node.attr_int("axis", 1)) + " is out of range for rank " +
                             std::to_string(rank));
    return split_2d(dims, axis);
  }
  if (rank == 0) return AxisSplit{};
  FERRY_ASSIGN_OR_RETURN(int64_t axis, axis_attr(node, -1, rank));
  return split_at_axis(dims, axis);
}

template <class T>
void soft_typed(SoftKind kind, const Tensor& x, const AxisSplit& s, Tensor& out) {
  const T* px = x.data<T>();
  T* po = out.data<T>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      if (s.n == 0) continue;
      if (kind == SoftKind::kHardmax) {
        // One-hot of the first maximum (numpy argmax; a NaN counts as the maximum).
        int64_t best = 0;
        double bv = to_double(px[s.at(o, 0, i)]);
        for (int64_t k = 1; k < s.n && !std::isnan(bv); ++k) {
          double v = to_double(px[s.at(o, k, i)]);
          if (std::isnan(v) || v > bv) {
            best = k;
            bv = v;
          }
        }
        for (int64_t k = 0; k < s.n; ++k) po[s.at(o, k, i)] = from_double<T>(k == best ? 1.0 : 0.0);
        continue;
      }
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < s.n; ++k) mx = std::max(mx, to_double(px[s.at(o, k, i)]));
      double sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += std::exp(to_double(px[s.at(o, k, i)]) - mx);
      const double log_sum = std::log(sum);
      for (int64_t k = 0; k < s.n; ++k) {
        double shifted = to_double(px[s.at(o, k, i)]) - mx;
        po[s.at(o, k, i)] =
            from_double<T>(kind == SoftKind::kSoftmax ? std::exp(shifted) / sum : shifted - log_sum);
      }
    }
  }
}

Status soft_kernel(KernelContext& ctx, SoftKind kind) {
  const Tensor& x = ctx.input(0);
  FERRY_ASSIGN_OR_RETURN(AxisSplit s, softmax_view(ctx.node(), x.dims()));
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), x.dims()));
  // Hardmax only compares, so it also takes integers; the exponentials need a floating type.
  auto run = [&](auto tag) {
    using T = decltype(tag);
    soft_typed<T>(kind, x, s, *out);
  };
  bool handled = kind == SoftKind::kHardmax ? dispatch_numeric(x.dtype(), run) : dispatch_floating(x.dtype(), run);
  if (!handled)
    return Status::unsupported(ctx.node().op_type + ": unsupported dtype " + std::string(dtype_name(x.dtype())));
  return Status();
}

}  // namespace

void register_softmax(OpRegistry& r) {
  const std::pair<const char*, SoftKind> ops[] = {
      {"Softmax", SoftKind::kSoftmax}, {"LogSoftmax", SoftKind::kLogSoftmax}, {"Hardmax", SoftKind::kHardmax}};
  for (auto [name, kind] : ops) {
    r.add(OpSchema{
        .op_type = name,
        .since_version = 1,
        .min_inputs = 1,
        .max_inputs = 1,
        .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
        .kernel = [k = kind](KernelContext& ctx) { return soft_kernel(ctx, k); },
    });
  }
}

}  // namespace ferry::ops
