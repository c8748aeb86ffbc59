// Unique: the distinct elements (or, with `axis`, distinct slices along the axis) with the index of each
// one's first occurrence, the inverse mapping and the counts, like numpy.unique. sorted=1 (default)
// orders them ascending (slices lexicographically); sorted=0 in order of first occurrence.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

// Total order used for sorting: NaN after everything and equal to NaN (numpy's equal_nan).
template <class C>
int compare_values(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

Status unique_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "X"));
  const bool sorted = ctx.node().attr_int("sorted", 1) != 0;
  const bool has_axis = ctx.node().has_attr("axis");
  int64_t axis = 0;
  std::vector<int64_t> dims = {x->numel()};
  if (has_axis) {
    if (x->rank() == 0) return Status::invalid("Unique with an axis needs rank >= 1");
    FERRY_ASSIGN_OR_RETURN(axis, normalize_axis(ctx.node().attr_int("axis", 0), x->rank()));
    dims = x->dims();
  }
  const int64_t m = dims[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  // Item i is the slice at position i along the axis: elements (o, i, k) in row-major order of (o, k).
  std::vector<int64_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> group(m, 0);  // group id of each item, in sorted order of groups
  int64_t n_groups = 0;
  bool ok = dispatch_all(x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* p = x->data<T>();
    auto cmp = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < inner; ++k) {
          int c = compare_values<C>(static_cast<C>(p[(o * m + a) * inner + k]), static_cast<C>(p[(o * m + b) * inner + k]));
          if (c) return c;
        }
      return 0;
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    for (int64_t i = 0; i < m; ++i) {
      if (i > 0 && cmp(order[i - 1], order[i]) != 0) ++n_groups;
      group[order[i]] = n_groups;
    }
    if (m > 0) ++n_groups;
  });
  if (!ok) return unsupported_dtype("Unique", x->dtype());
  // first[g]: first occurrence of sorted group g; counts[g].
  std::vector<int64_t> first(n_groups, -1), counts(n_groups, 0);
  for (int64_t i = 0; i < m; ++i) {
    if (first[group[i]] < 0) first[group[i]] = i;
    ++counts[group[i]];
  }
  // rank[g]: position of group g in the output.
  std::vector<int64_t> out_order(n_groups);  // output position -> group
  std::iota(out_order.begin(), out_order.end(), 0);
  if (!sorted) std::sort(out_order.begin(), out_order.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
  std::vector<int64_t> rank(n_groups);
  for (int64_t j = 0; j < n_groups; ++j) rank[out_order[j]] = j;

  std::vector<int64_t> ydims = dims;
  ydims[axis] = n_groups;
  FERRY_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0, x->dtype(), ydims));
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const uint8_t*>(x->raw());
  auto* dst = static_cast<uint8_t*>(y->raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n_groups; ++j)
      copy_elems(dst + ((o * n_groups + j) * inner) * es, src + ((o * m + first[out_order[j]]) * inner) * es, inner, es);
  if (ctx.wants_output(1)) {
    FERRY_ASSIGN_OR_RETURN(Tensor* t, ctx.allocate_output(1, DType::kInt64, {n_groups}));
    for (int64_t j = 0; j < n_groups; ++j) t->data<int64_t>()[j] = first[out_order[j]];
  }
  if (ctx.wants_output(2)) {
    FERRY_ASSIGN_OR_RETURN(Tensor* t, ctx.allocate_output(2, DType::kInt64, {m}));
    for (int64_t i = 0; i < m; ++i) t->data<int64_t>()[i] = rank[group[i]];
  }
  if (ctx.wants_output(3)) {
    FERRY_ASSIGN_OR_RETURN(Tensor* t, ctx.allocate_output(3, DType::kInt64, {n_groups}));
    for (int64_t j = 0; j < n_groups; ++j) t->data<int64_t>()[j] = counts[out_order[j]];
  }
  return Status();
}

Status unique_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  std::optional<Shape> y;
  Dim m;
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!ctx.node().has_attr("axis")) {
    y = Shape{Dim()};
    if (auto d = static_input_dims(ctx, 0)) {
      int64_t n = 1;
      for (int64_t v : *d) n *= v;
      m = Dim(n);
    }
  } else if (in && *in && !(*in)->empty()) {
    FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), (*in)->size()));
    y = **in;
    m = (*y)[axis];
    (*y)[axis] = Dim();
  }
  ctx.set_output(0, dt, y);
  ctx.set_output(1, DType::kInt64, Shape{Dim()});
  ctx.set_output(2, DType::kInt64, Shape{m});
  ctx.set_output(3, DType::kInt64, Shape{Dim()});
  return Status();
}
}  // namespace

void register_unique(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Unique", .since_version = 11, .min_inputs = 1, .max_inputs = 1,
                 .infer = unique_infer, .kernel = unique_kernel});
}

}  // namespace ferry::ops
