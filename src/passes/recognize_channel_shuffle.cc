// ShuffleNet's channel shuffle as exporters write it, Reshape X [N, C, ...] -> [N, g, C / g, ...] ->
// Transpose (0, 2, 1, 3, ...) -> Reshape back to X's shape -> com.ferry ChannelShuffle(groups = g)
// (ops/channel_shuffle.cc). Three nodes moved the tensor through a 5-D plain view (a CPU backend made its
// channels-last convolution output plain, transposed, and reordered back for the next convolution);
// one op shuffles in the layout the tensor is in.
//
// The shapes decide, not the Reshapes' shape inputs (exporters compute those from Shape ops): the first
// Reshape's result must be [?, g, C / g, d2, ...] and the last one's [?, C, d2, ...] for X [N, C, d2, ...],
// with C and every d static and non-zero; the leading dims then equal N by the element count. The
// intermediate results must have no other reader.
#include "passes/passes.h"

namespace ferry::passes {

namespace {

// dims[from..] of a static and positive, else empty.
std::vector<int64_t> static_tail(const ir::Value* v, size_t from) {
  if (!v || !v->shape || v->shape->size() < from) return {};
  std::vector<int64_t> out;
  for (size_t i = from; i < v->shape->size(); ++i) {
    const Dim& d = (*v->shape)[i];
    if (!d.is_static() || d.value <= 0) return {};
    out.push_back(d.value);
  }
  return out;
}

// The groups of a channel shuffle ending at Reshape `r2`, with the nodes it covers; 0 when none.
int64_t shuffle_groups(const Uses& uses, ir::Node& r2, std::vector<ir::Node*>& covered, ir::Value*& x) {
  if (r2.op_type != "Reshape" || !r2.domain.empty() || !r2.has_input(0) || !r2.has_output(0)) return 0;
  ir::Value* t = r2.inputs[0];
  ir::Node* tr = producer_op(t, "Transpose");
  if (!tr || !uses.single_use(t)) return 0;
  ir::Value* s = tr->inputs[0];
  ir::Node* r1 = producer_op(s, "Reshape");
  if (!r1 || !uses.single_use(s)) return 0;
  x = r1->inputs[0];
  const std::vector<int64_t> xt = static_tail(x, 1), st = static_tail(s, 1), yt = static_tail(r2.outputs[0], 1);
  const size_t rank = x->shape ? x->shape->size() : 0;
  if (rank < 3 || xt.size() != rank - 1 || st.size() != rank || yt != xt) return 0;
  if (r2.outputs[0]->shape->size() != rank || x->dtype != r2.outputs[0]->dtype) return 0;
  std::vector<int64_t> perm = tr->attr_ints("perm"), want{0, 2, 1};
  for (size_t i = 3; i <= rank; ++i) want.push_back(static_cast<int64_t>(i));
  if (perm != want) return 0;
  const int64_t g = st[0], per_group = st[1];
  if (g * per_group != xt[0]) return 0;
  for (size_t i = 2; i < st.size(); ++i)
    if (st[i] != xt[i - 1]) return 0;
  covered = {r1, tr, &r2};
  return g;
}

}  // namespace

Result<int> recognize_channel_shuffle(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& n, const Uses& uses) -> Result<bool> {
    std::vector<ir::Node*> covered;
    ir::Value* x = nullptr;
    const int64_t groups = shuffle_groups(uses, n, covered, x);
    if (groups == 0) return false;
    ir::Node* f = replace_with(g, covered, "ChannelShuffle", "com.ferry", 1, {x}, n.outputs[0]);
    f->attrs["groups"] = make_int(groups);
    return true;
  });
}

}  // namespace ferry::passes
