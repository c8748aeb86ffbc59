// MatMul/Gemm + Add(constant bias that broadcasts unidirectionally to the output) + the
// activation/residual chain (post_op_chain.h) -> com.ferry FusedMatMul. Gemm maps transA/transB/alpha to
// trans_a/trans_b/alpha and beta*C to a Bias (C constant unless beta is 1); every Gemm becomes a
// FusedMatMul. A MatMul operand made by a Transpose that swaps only its last two dims, read by nothing
// else, is read transposed instead (trans_a/trans_b: the cpu kernel's operand strides), so the transposed
// copy is never written: Swin V2's cosine attention, q @ normalize(k).transpose(-2, -1), and exporters
// that write x @ W.T as Transpose + MatMul. A MatMul with nothing to fuse stays a MatMul.
#include "passes/post_op_chain.h"
#include "passes/passes.h"

namespace ferry::passes {

namespace {
// c (constant) broadcasts to y without changing y's shape.
bool broadcasts_to(const ir::Value* c, const ir::Value* y) {
  auto cd = static_shape(c);
  if (!cd || !y->shape || c->dtype != y->dtype) return false;
  const Shape& ys = *y->shape;
  if (cd->size() > ys.size()) return false;
  const size_t off = ys.size() - cd->size();
  for (size_t i = 0; i < cd->size(); ++i) {
    const int64_t d = (*cd)[i];
    if (d != 1 && !(ys[off + i].is_static() && ys[off + i].value == d)) return false;
  }
  return true;
}

// The input of `t` when t is a Transpose swapping only the last two dims of a rank >= 2 tensor, read by
// nothing but one input of one node; else null.
ir::Value* untransposed_last2(const ir::Node* t, const Uses& uses) {
  if (!t || t->op_type != "Transpose" || !t->domain.empty() || t->num_outputs() != 1 || !t->outputs[0] ||
      !t->has_input(0) || !t->has_attr("perm"))
    return nullptr;
  if (!uses.single_use(t->outputs[0]) || uses.users(t->outputs[0]).size() != 1) return nullptr;
  const std::vector<int64_t> perm = t->attr_ints("perm");
  const auto& in = t->inputs[0]->shape;
  const size_t r = perm.size();
  if (r < 2 || !in || in->size() != r) return nullptr;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != static_cast<int64_t>(i)) return nullptr;
  if (perm[r - 2] != static_cast<int64_t>(r - 1) || perm[r - 1] != static_cast<int64_t>(r - 2)) return nullptr;
  return t->inputs[0];
}
}  // namespace

Result<int> fuse_matmul_post_ops(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& mm, const Uses& uses) -> Result<bool> {
    const bool gemm = mm.op_type == "Gemm";
    if ((!gemm && mm.op_type != "MatMul") || !mm.domain.empty() || mm.num_outputs() != 1 || !mm.outputs[0]) return false;
    if (!mm.has_input(0) || !mm.has_input(1) || mm.num_inputs() > (gemm ? 3 : 2)) return false;
    ir::Value* y = mm.outputs[0];
    if (!is_floating(y->dtype) || !y->shape) return false;
    ir::Value* bias = nullptr;
    std::map<std::string, ir::Attribute> attrs;
    std::vector<ir::Node*> covered = {&mm};
    if (gemm) {
      // Gemm's operands are 2-D by definition; the shapes must say so for FusedMatMul's rules to agree.
      auto as = mm.inputs[0]->shape, bs = mm.inputs[1]->shape;
      if (!as || !bs || as->size() != 2 || bs->size() != 2) return false;
      const float alpha = mm.attr_float("alpha", 1.0f), beta = mm.attr_float("beta", 1.0f);
      if (mm.has_input(2) && beta != 0.0f) {
        if (beta == 1.0f) {
          bias = mm.inputs[2];
        } else {
          const Tensor* c = constant_of(mm.inputs[2]);
          if (!c || !is_floating(c->dtype())) return false;
          std::vector<double> v = c->to_double_vector();
          for (double& x : v) x *= beta;
          bias = add_constant(g, mm.name + "_bias", Tensor::from_vector(v, c->dims()).cast(c->dtype()));
        }
      }
      if (mm.attr_int("transA", 0)) attrs["trans_a"] = make_int(1);
      if (mm.attr_int("transB", 0)) attrs["trans_b"] = make_int(1);
      if (alpha != 1.0f) attrs["alpha"] = make_float(alpha);
    }
    // Transposed operands of a MatMul read through trans_a / trans_b (not both of one input twice: a
    // MatMul reading one Transpose output as A and B has two uses of it, which untransposed_last2 refuses).
    ir::Value* a = mm.inputs[0];
    ir::Value* b = mm.inputs[1];
    if (!gemm) {
      for (auto [operand, key] : {std::pair{&a, "trans_a"}, std::pair{&b, "trans_b"}}) {
        ir::Node* t = (*operand)->producer;
        if (ir::Value* in = untransposed_last2(t, uses)) {
          *operand = in;
          attrs[key] = make_int(1);
          covered.push_back(t);
        }
      }
    }
    ir::Value* cur = y;
    if (!bias && uses.single_use(cur) && uses.users(cur).size() == 1) {
      ir::Node* add = uses.users(cur)[0];
      ir::Value* c = add->op_type == "Add" && add->domain.empty() ? other_input(add, cur) : nullptr;
      if (c && c->is_constant() && add->num_outputs() == 1 && add->outputs[0] && broadcasts_to(c, cur) &&
          same_shape(add->outputs[0], cur)) {
        bias = c;
        covered.push_back(add);
        cur = add->outputs[0];
      }
    }
    PostOpChain chain = collect_post_ops(uses, cur);
    if (!gemm && covered.size() == 1 && chain.covered.empty()) return false;
    fuse_with_chain(g, covered, chain, "FusedMatMul", a, b, bias, std::move(attrs));
    return true;
  });
}

}  // namespace ferry::passes
