// `ferry refit MODEL --weights CHECKPOINT -o OUT`: new weights into an exported model, TensorRT-refit
// style. MODEL is an .onnx from ferry.torch.export, whose module map ties each initializer to the
// state_dict key it holds (by name, by value, transposed, or folded: a Conv weight the exporter
// multiplied by its BatchNorm's scale, with the folded bias beside it). Each is rewritten from the
// checkpoint; folded ones are folded again from the checkpoint's conv and BatchNorm tensors (with the
// BatchNorm's eps from the module map). OUT.onnx is the refitted model; OUT.ferry also compiles it, so
// ferry's own preparation (its BatchNorm folding, constant folds) runs on the new values. The
// checkpoint is audited first: a key the model needs and the checkpoint lacks is an error, not a
// model that silently keeps its export-time weights.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tools/compile.h"
#include "weights/audit.h"

namespace ferry::tools {

struct RefitRequest {
  std::string model;       // .onnx with a module map
  std::string checkpoint;  // any format weights::read_checkpoint reads
  std::string output;      // .onnx or .ferry
  CompileRequest compile;  // for a .ferry output: its options (model_path/output_path are set by refit)
};

struct RefitReport {
  std::string output;
  int64_t replaced = 0, transposed = 0, refolded = 0;
  // Float initializers the module map ties to no state_dict key: constants the exporter made (they
  // keep their exported values); listed so a user sees what refit did not touch.
  std::vector<std::string> untouched;
  weights::AuditReport audit;
  std::vector<std::string> notes;
};

Result<RefitReport> refit_model(const RefitRequest& req);
std::string refit_to_text(const RefitReport& r);
nlohmann::json refit_to_json(const RefitReport& r);

}  // namespace ferry::tools
