// Pass pipelines by level. (Scaffolding until the passes land: only fixes input shapes and re-infers.)
#include "passes/pipeline.h"

#include "ops/op.h"

namespace ferry::passes {

Status optimize(ir::Model& model, const OptimizeOptions& opts, std::vector<PassReport>* /*report*/) {
  ir::Graph& g = *model.graph;
  for (const auto& [name, dims] : opts.input_shapes) {
    ir::Value* v = g.find_local_value(name);
    if (!v || !v->is_graph_input) return Status::invalid("--input-shape names '" + name + "', which is not a model input");
    v->shape = to_shape(dims);
  }
  FERRY_RETURN_IF_ERROR(ops::infer_graph(g));
  return ir::verify(g);
}

}  // namespace ferry::passes
