// Conv (constant W, constant or no B) + an Add of a per-channel constant (folded into B) + the
// activation/residual chain (post_op_chain.h) -> com.ferry FusedConv. A Conv with nothing to fuse still
// becomes a FusedConv without post-ops, so the backend sees one convolution op. Applies only when every
// intermediate is read by the next link alone and is no graph output.
#include "passes/post_op_chain.h"
#include "passes/passes.h"

namespace ferry::passes {

namespace {
// c broadcasts as one value per output channel of y [N, M, spatial...]: [M, 1, ..., 1] (rank r-1) or
// [1, M, 1, ..., 1] (rank r). Returns the M values.
std::optional<std::vector<double>> per_channel(const ir::Value* c, const ir::Value* y, int64_t M) {
  const Tensor* t = constant_of(c);
  if (!t || !y->shape || t->dtype() != y->dtype || t->numel() != M) return std::nullopt;
  const int r = static_cast<int>(y->shape->size());
  if (r < 3) return std::nullopt;
  const auto& d = t->dims();
  if (t->rank() == r - 1 && d[0] == M) return t->to_double_vector();
  if (t->rank() == r && d[0] == 1 && d[1] == M) return t->to_double_vector();
  return std::nullopt;
}
}  // namespace

Result<int> fuse_conv_post_ops(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& conv, const Uses& uses) -> Result<bool> {
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.num_outputs() != 1 || !conv.outputs[0]) return false;
    if (conv.num_inputs() < 2 || !conv.has_input(0) || !conv.has_input(1) || !conv.inputs[1]->is_constant()) return false;
    if (conv.has_input(2) && !conv.inputs[2]->is_constant()) return false;
    ir::Value* y = conv.outputs[0];
    if (!is_floating(y->dtype) && y->dtype != DType::kUndefined) return false;
    const Tensor& w = conv.inputs[1]->initializer;
    if (!is_floating(w.dtype()) || w.rank() < 3) return false;
    const int64_t M = w.dim(0);
    std::vector<ir::Node*> covered = {&conv};
    ir::Value* bias = conv.has_input(2) ? conv.inputs[2] : nullptr;
    ir::Value* cur = y;
    // Bias Add right after the conv.
    if (uses.single_use(cur) && uses.users(cur).size() == 1) {
      ir::Node* add = uses.users(cur)[0];
      // A per-channel constant broadcasts to Y's own shape (its dims are 1 or Y's channel count), so
      // the Add's output is Y's shape whatever the spatial dims: no shape check, dynamic dims fuse too.
      if (add->op_type == "Add" && add->domain.empty() && add->num_outputs() == 1 && add->outputs[0]) {
        if (auto c = per_channel(other_input(add, cur), cur, M)) {
          std::vector<double> b(M, 0.0);
          if (bias) b = bias->initializer.to_double_vector();
          for (int64_t m = 0; m < M; ++m) b[m] += (*c)[m];
          bias = add_constant(g, conv.name + "_bias", Tensor::from_vector(b, {M}).cast(w.dtype()));
          covered.push_back(add);
          cur = add->outputs[0];
        }
      }
    }
    PostOpChain chain = collect_post_ops(uses, cur);
    fuse_with_chain(g, covered, chain, "FusedConv", conv.inputs[0], conv.inputs[1], bias, conv.attrs);
    return true;
  });
}

}  // namespace ferry::passes
