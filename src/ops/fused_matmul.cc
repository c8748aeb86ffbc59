// com.ferry FusedMatMul (produced by passes/fuse_matmul_post_ops from MatMul or Gemm):
// Y = post_ops(alpha * matmul(op(A), op(B)) + Bias), inputs A, B, Bias?, Z?. trans_a/trans_b (0/1)
// transpose the last two dims of that input (ignored for a 1-D input); matmul is numpy's (batch dims
// broadcast, 1-D operands promoted and the unit dim removed), Bias broadcasts unidirectionally to Y, Z
// (the residual for `sum`) has Y's shape.
#include "ops/util/broadcast.h"
#include "ops/util/nn_matmul.h"
#include "ops/util/post_ops.h"

namespace ferry::ops {

namespace {
// Swaps the last two dims of a row-major array.
void transpose_last2(std::vector<double>& v, std::vector<int64_t>& dims) {
  if (dims.size() < 2) return;
  const int64_t r = dims[dims.size() - 2], c = dims.back();
  const int64_t mat = r * c;
  if (mat == 0) {
    std::swap(dims[dims.size() - 2], dims.back());
    return;
  }
  std::vector<double> out(v.size());
  for (size_t base = 0; base < v.size(); base += mat)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) out[base + j * r + i] = v[base + i * c + j];
  v.swap(out);
  std::swap(dims[dims.size() - 2], dims.back());
}

std::optional<Shape> transposed(const std::optional<Shape>* s, bool t) {
  if (!s || !*s) return std::nullopt;
  Shape out = **s;
  if (t && out.size() >= 2) std::swap(out[out.size() - 2], out.back());
  return out;
}

Status fused_matmul_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* a, nn::tensor_in(ctx, 0, "A"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* b, nn::tensor_in(ctx, 1, "B"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* bias, nn::optional_tensor_in(ctx, 2, "Bias"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* z, nn::optional_tensor_in(ctx, 3, "Z"));
  FERRY_ASSIGN_OR_RETURN(std::vector<PostOp> post, read_post_ops(ctx.node()));
  if (!is_floating(a->dtype())) return nn::bad_dtype(ctx, *a, "A");
  if (b->dtype() != a->dtype() || (bias && bias->dtype() != a->dtype()) || (z && z->dtype() != a->dtype()))
    return Status::invalid("FusedMatMul: A, B, Bias and Z must have the same type");
  if (has_sum(post) && !z) return Status::invalid("FusedMatMul: post-op 'sum' needs the residual input Z");
  const bool ta = ctx.node().attr_int("trans_a", 0) != 0, tb = ctx.node().attr_int("trans_b", 0) != 0;
  const double alpha = ctx.node().attr_float("alpha", 1.0f);
  std::vector<double> av = nn::to_doubles(*a), bv = nn::to_doubles(*b);
  std::vector<int64_t> ad = a->dims(), bd = b->dims();
  if (ta) transpose_last2(av, ad);
  if (tb) transpose_last2(bv, bd);
  FERRY_ASSIGN_OR_RETURN(nn::MatMulPlan p, nn::plan_matmul(ad, bd, "FusedMatMul"));
  if (bias) {
    auto bc = broadcast_dims(bias->dims(), p.out_dims);
    if (!bc.ok() || *bc != p.out_dims)
      return Status::invalid("FusedMatMul: Bias " + bias->describe() + " does not broadcast to the output " +
                             dims_to_string(p.out_dims));
  }
  if (z && z->dims() != p.out_dims)
    return Status::invalid("FusedMatMul: Z " + z->describe() + " must have the output's shape " + dims_to_string(p.out_dims));
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, a->dtype(), p.out_dims));
  std::vector<double> yv(y->numel());
  nn::matmul_core<double>(av.data(), bv.data(), yv.data(), p);
  if (alpha != 1.0)
    for (double& v : yv) v *= alpha;
  if (bias) {
    std::vector<double> bsv = nn::to_doubles(*bias);
    for_each_broadcast(p.out_dims, p.out_dims, bias->dims(), [&](int64_t o, int64_t, int64_t ib) { yv[o] += bsv[ib]; });
  }
  std::vector<double> zv = z ? nn::to_doubles(*z) : std::vector<double>();
  apply_post_ops(post, yv.data(), static_cast<int64_t>(yv.size()), z ? zv.data() : nullptr);
  nn::store_doubles(*y, yv.data());
  return Status();
}
}  // namespace

void register_fused_matmul(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "FusedMatMul",
      .domain = "com.ferry",
      .since_version = 1,
      .min_inputs = 2,
      .max_inputs = 4,
      .infer =
          [](InferContext& ctx) {
            auto post = read_post_ops(ctx.node());
            if (!post.ok()) return post.status();
            const bool ta = ctx.node().attr_int("trans_a", 0) != 0, tb = ctx.node().attr_int("trans_b", 0) != 0;
            std::optional<Shape> as = transposed(ctx.input_shape(0), ta), bs = transposed(ctx.input_shape(1), tb);
            ctx.set_output(0, ctx.input_dtype(0), nn::infer_matmul_shape(&as, &bs));
            return Status();
          },
      .kernel = fused_matmul_kernel,
  });
}

}  // namespace ferry::ops
