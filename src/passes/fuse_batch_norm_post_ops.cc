// An inference BatchNormalization that fold_batch_norm could not fold into a producer's weights (it
// follows a Concat, an input, a pooling: DenseNet's and pre-activation ResNets' "norm -> relu -> conv")
// + a Concat along the channels that only it reads + the Relu / LeakyRelu / Clip chain after it
// -> com.ferry FusedBatchNorm (ops/fused_batch_norm.cc): one pass over memory instead of up to three.
// Other activations stay separate nodes (they are rarely what follows a normalization, and the
// backends' kernels for them are the tuned ones); a residual Add ends the chain.
#include "passes/post_op_chain.h"
#include "passes/passes.h"

namespace ferry::passes {

namespace {

bool fusable_activation(const ops::PostOp& p) { return p.name == "Relu" || p.name == "LeakyRelu" || p.name == "Clip"; }

// The Concat along dim 1 that produces x and that nothing else reads, or null.
ir::Node* channel_concat(const Uses& uses, ir::Value* x) {
  ir::Node* c = x->producer;
  if (!c || c->op_type != "Concat" || !c->domain.empty() || c->opset < 4 || !c->has_attr("axis")) return nullptr;
  if (!uses.single_use(x) || !x->shape || c->num_inputs() < 1) return nullptr;
  const int64_t rank = static_cast<int64_t>(x->shape->size());
  int64_t axis = c->attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis != 1) return nullptr;
  for (const ir::Value* in : c->inputs)
    if (!in || in->dtype != x->dtype) return nullptr;
  return c;
}

}  // namespace

Result<int> fuse_batch_norm_post_ops(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& bn, const Uses& uses) -> Result<bool> {
    if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || !bn.has_input(0) || !bn.has_output(0)) return false;
    ir::Value* x = bn.inputs[0];
    ir::Value* y = bn.outputs[0];
    if (!is_floating(x->dtype) || y->dtype != x->dtype || !x->shape || x->shape->size() < 2) return false;
    std::optional<BnParams> p = bn_params(bn);
    if (!p) return false;
    const auto& channels = (*x->shape)[1];
    if (!channels.is_static() || channels.value != static_cast<int64_t>(p->s.size())) return false;

    std::vector<ir::Node*> covered;
    std::vector<ir::Value*> inputs = {x};
    if (ir::Node* cat = channel_concat(uses, x)) {
      covered.push_back(cat);
      inputs = cat->inputs;
    }
    covered.push_back(&bn);
    // The activations up to the first one that does not fuse (or a residual Add, or any other reader).
    PostOpChain chain = collect_post_ops(uses, y);
    std::vector<ops::PostOp> post;
    ir::Value* out = y;
    for (size_t i = 0; i < chain.covered.size() && i < chain.post.size(); ++i) {
      const ir::Node* n = chain.covered[i];
      if (!fusable_activation(chain.post[i]) || n->inputs.empty() || n->inputs[0] != out) break;
      covered.push_back(chain.covered[i]);
      post.push_back(chain.post[i]);
      out = chain.covered[i]->outputs[0];
    }
    std::vector<float> s(p->s.begin(), p->s.end()), t(p->t.begin(), p->t.end());
    ir::Node* f = replace_with(g, covered, "FusedBatchNorm", "com.ferry", 1, inputs, out);
    f->attrs["axis"] = make_int(1);
    f->attrs["bn_scale"] = make_floats(std::move(s));
    f->attrs["bn_shift"] = make_floats(std::move(t));
    set_post_op_attrs(*f, post);
    return true;
  });
}

}  // namespace ferry::passes
