// Pass pipelines by level, in one place. Level 0 only fixes input shapes; 1 cleans up and folds;
// 2 adds BatchNorm folding, the recognitions (GELU, LayerNorm, attention) and the conv/matmul post-op
// fusions; 3 is level 2 (no layout pass yet). Subgraphs (If/Loop/Scan bodies) get the cleanup passes
// only. After every pass the graph is verified and shapes are re-inferred; a failure names the pass.
#include "passes/pipeline.h"

#include "ops/op.h"
#include "passes/legalize.h"
#include "passes/passes.h"

namespace ferry::passes {

namespace {
struct PassEntry {
  const char* name;
  PassFn fn;
};

const std::vector<PassEntry>& cleanup_passes() {
  static const std::vector<PassEntry> k = {
      {"fold_constants", fold_constants},
      {"eliminate_identity", eliminate_identity},
      {"drop_broadcast_expand", drop_broadcast_expand},
      {"simplify_transpose_reshape", simplify_transpose_reshape},
      {"eliminate_dead_code", eliminate_dead_code},
  };
  return k;
}

const std::vector<PassEntry>& fusion_passes() {
  // Recognitions first (they read the decomposed Add/Mul patterns), then BN into weights (what is left
  // becomes FusedBatchNorm with its concat and activations), then the post-op fusions, which must see
  // the final Conv/MatMul + activation chains.
  static const std::vector<PassEntry> k = {
      // Einsum as Transpose/Reshape/MatMul (legalize_einsum.cc) on every backend: the MatMuls get the
      // tuned kernels and recognize_attention sees torch's einsum attention (maxvit_t: 44 Einsums ran
      // the reference kernel, 14x slower than ONNX Runtime).
      {"lower_einsum", [](ir::Graph& g, const PassContext&) { return apply_rule_everywhere(g, "legalize_einsum"); }},
      {"fold_pad", fold_pad},
      {"recognize_gelu", recognize_gelu},
      {"recognize_layer_norm", recognize_layer_norm},
      {"recognize_attention", recognize_attention},
      {"recognize_channel_shuffle", recognize_channel_shuffle},
      {"fold_batch_norm", fold_batch_norm},
      {"fuse_batch_norm_post_ops", fuse_batch_norm_post_ops},
      {"fuse_conv_post_ops", fuse_conv_post_ops},
      {"fuse_matmul_post_ops", fuse_matmul_post_ops},
      {"eliminate_dead_code", eliminate_dead_code},
  };
  return k;
}

std::vector<PassEntry> passes_for(int level) {
  std::vector<PassEntry> out;
  if (level >= 1) {
    // Twice: folding exposes identities and vice versa (Shape chains, Cast of folded values).
    for (int i = 0; i < 2; ++i) out.insert(out.end(), cleanup_passes().begin(), cleanup_passes().end());
  }
  if (level >= 2) out.insert(out.end(), fusion_passes().begin(), fusion_passes().end());
  return out;
}

}  // namespace

PassFn pass_by_name(const std::string& name) {
  for (const auto* list : {&cleanup_passes(), &fusion_passes()})
    for (const PassEntry& p : *list)
      if (name == p.name) return p.fn;
  // A legalization rule (not in any level's pipeline: legalize() applies them where a target lacks
  // the op) as a pass that rewrites every node it matches, so fixtures can name it.
  for (const LegalizeRule& r : legalize_rules())
    if (name == r.name)
      return [rule = std::string(r.name)](ir::Graph& g, const PassContext&) { return apply_rule_everywhere(g, rule.c_str()); };
  return nullptr;
}

namespace {
void add_report(std::vector<PassReport>* report, const std::string& pass, int changes) {
  if (!report) return;
  for (auto& r : *report)
    if (r.pass == pass) {
      r.changes += changes;
      return;
    }
  report->push_back({pass, changes});
}

Status run_on(ir::Graph& g, const std::vector<PassEntry>& list, const PassContext& ctx, std::vector<PassReport>* report,
              bool top) {
  for (const PassEntry& p : list) {
    Result<int> r = p.fn(g, ctx);
    if (!r.ok()) return Status(r.status()).with_context("in pass " + std::string(p.name));
    Status st = ir::verify(g);
    if (!st.ok()) return st.with_context("graph invalid after pass " + std::string(p.name));
    st = ops::infer_graph(g);
    if (!st.ok()) return st.with_context("shape inference failed after pass " + std::string(p.name));
    add_report(report, p.name, *r);
  }
  // Bodies: cleanup only (their interfaces are fixed by the enclosing op).
  for (auto& node : g.nodes)
    for (ir::Graph* sub : node->subgraphs()) {
      std::vector<PassEntry> body;
      if (!list.empty()) body = cleanup_passes();
      FERRY_RETURN_IF_ERROR(run_on(*sub, body, ctx, report, false));
    }
  (void)top;
  return Status();
}
}  // namespace

Status optimize(ir::Model& model, const OptimizeOptions& opts, std::vector<PassReport>* report) {
  if (opts.opt_level < 0 || opts.opt_level > 3)
    return Status::invalid("optimization level " + std::to_string(opts.opt_level) + " is not 0..3");
  ir::Graph& g = *model.graph;
  for (const auto& [name, dims] : opts.input_shapes) {
    ir::Value* v = g.find_local_value(name);
    if (!v || !v->is_graph_input) return Status::invalid("--input-shape names '" + name + "', which is not a model input");
    v->shape = to_shape(dims);
  }
  FERRY_RETURN_IF_ERROR(ops::infer_graph(g));
  PassContext ctx{&opts, &model};
  FERRY_RETURN_IF_ERROR(run_on(g, passes_for(opts.opt_level), ctx, report, true));
  // Fused ops live in com.ferry; a model that has them imports that domain.
  bool fused = false;
  for (const auto& n : g.nodes) fused = fused || n->domain == "com.ferry";
  if (fused && model.opset_for("com.ferry") == 0) model.opsets.push_back({"com.ferry", 1});
  return ir::verify(g);
}

}  // namespace ferry::passes
