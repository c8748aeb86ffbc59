// LayerNormalization (opset 17) and RMSNormalization (opset 23): normalize X over the trailing axes
// [axis, rank) — each of the prod(dims[:axis]) rows of prod(dims[axis:]) elements — then scale (and, for
// LayerNormalization, add the bias), Scale and B broadcasting numpy-style against X.
//   LayerNormalization: y = (x - mean) / sqrt(var + epsilon) * scale + bias, optional outputs Mean and
//                       InvStdDev of shape dims[:axis] + [1]*(rank-axis) in the stash_type.
//   RMSNormalization:   y = x / sqrt(mean(x^2) + epsilon) * scale.
// Statistics are computed in double whatever stash_type says; stash_type only picks the statistics'
// output dtype.
#include <cmath>
#include <string>

#include "ops/op.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

// stash_type holds an ONNX TensorProto element type.
DType stash_dtype(const ir::Node& node, DType fallback) {
  switch (node.attr_int("stash_type", 1)) {
    case 1: return DType::kFloat32;
    case 10: return DType::kFloat16;
    case 11: return DType::kFloat64;
    case 16: return DType::kBFloat16;
    default: return fallback;
  }
}

template <class T>
void store_all(Tensor& t, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = from_double<T>(v[i]);
}

Status norm_kernel(KernelContext& ctx, bool rms) {
  const char* op = rms ? "RMSNormalization" : "LayerNormalization";
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return Status::invalid(std::string(op) + " needs a Scale input");
  const int64_t rank = x.rank();
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    return Status::invalid(std::string(op) + ": axis " + std::to_string(ctx.node().attr_int("axis", -1)) +
                           " is out of range for input " + x.describe());
  const AxisSplit rows = split_2d(x.dims(), axis);  // outer = rows, n = row length
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  FERRY_ASSIGN_OR_RETURN(std::vector<double> scale, expand_trailing(ctx.input(1), x.dims(), "Scale"));
  std::vector<double> bias;
  if (!rms && ctx.has_input(2)) {
    FERRY_ASSIGN_OR_RETURN(bias, expand_trailing(ctx.input(2), x.dims(), "B"));
  }
  if (!is_floating(x.dtype())) return Status::unsupported(std::string(op) + ": unsupported dtype " + x.describe());
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, x.dtype(), x.dims()));

  const std::vector<double> xv = x.to_double_vector();
  std::vector<double> yv(xv.size()), means(rows.outer), inv_std(rows.outer);
  for (int64_t r = 0; r < rows.outer; ++r) {
    const double* row = xv.data() + r * rows.n;
    double mean = 0, var = 0;
    if (rms) {
      for (int64_t k = 0; k < rows.n; ++k) var += row[k] * row[k];
      var = rows.n ? var / rows.n : 0.0;
    } else {
      for (int64_t k = 0; k < rows.n; ++k) mean += row[k];
      mean = rows.n ? mean / rows.n : 0.0;
      for (int64_t k = 0; k < rows.n; ++k) var += (row[k] - mean) * (row[k] - mean);
      var = rows.n ? var / rows.n : 0.0;
    }
    const double inv = 1.0 / std::sqrt(var + eps);
    means[r] = mean;
    inv_std[r] = inv;
    for (int64_t k = 0; k < rows.n; ++k) {
      const int64_t e = r * rows.n + k;
      double v = (row[k] - mean) * inv * scale[e % scale.size()];
      if (!bias.empty()) v += bias[e % bias.size()];
      yv[e] = v;
    }
  }
  dispatch_floating(x.dtype(), [&](auto tag) { store_all<decltype(tag)>(*y, yv); });

  if (rms) return Status();
  // Mean / InvStdDev keep the rank: dims[:axis] followed by ones.
  std::vector<int64_t> stat_dims(x.dims().begin(), x.dims().begin() + axis);
  stat_dims.resize(static_cast<size_t>(rank), 1);
  const DType st = stash_dtype(ctx.node(), x.dtype());
  const std::vector<double>* stats[] = {&means, &inv_std};
  for (int out = 1; out <= 2; ++out) {
    if (!ctx.wants_output(out)) continue;
    FERRY_ASSIGN_OR_RETURN(Tensor * t, ctx.allocate_output(out, st, stat_dims));
    dispatch_floating(st, [&](auto tag) { store_all<decltype(tag)>(*t, *stats[out - 1]); });
  }
  return Status();
}

Status norm_infer(InferContext& ctx, bool rms) {
  const DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  ctx.set_output(0, dt, in ? *in : std::nullopt);
  if (rms) return Status();
  const DType st = stash_dtype(ctx.node(), dt);
  std::optional<Shape> stat;
  if (in && *in) {
    const int64_t rank = static_cast<int64_t>((*in)->size());
    int64_t axis = ctx.node().attr_int("axis", -1);
    if (axis < 0) axis += rank;
    if (axis >= 0 && axis <= rank) {
      stat = Shape((*in)->begin(), (*in)->begin() + axis);
      stat->resize(static_cast<size_t>(rank), Dim(1));
    }
  }
  ctx.set_output(1, st, stat);
  ctx.set_output(2, st, stat);
  return Status();
}

}  // namespace

void register_layer_normalization(OpRegistry& r) {
  for (bool rms : {false, true}) {
    r.add(OpSchema{
        .op_type = rms ? "RMSNormalization" : "LayerNormalization",
        .since_version = 1,
        .min_inputs = 2,
        .max_inputs = rms ? 2 : 3,
        .infer = [rms](InferContext& ctx) { return norm_infer(ctx, rms); },
        .kernel = [rms](KernelContext& ctx) { return norm_kernel(ctx, rms); },
    });
  }
}

}  // namespace ferry::ops
