// `ferry weights audit` and `ferry weights convert`: checkpoints held against a model (src/weights/).
#pragma once
#include <string>
#include <vector>

#include "core/status.h"
#include "ir/graph.h"
#include "weights/audit.h"
#include "weights/mindspore.h"

namespace ferry::tools {

// The parameters a checkpoint for `model` must hold: the module map's state_dict signature (written
// by ferry.torch.export), else the initializers the module map ties to state_dict keys, else the
// initializers whose names look like state_dict keys (a plain torch.onnx.export keeps them). `notes`
// says which, and what that source cannot see.
Result<std::vector<weights::ExpectedParam>> expected_params(const ir::Model& model, std::vector<std::string>& notes);

// The model metadata key under which ferry.torch.export stores the module map (JSON).
inline constexpr const char* kModuleMapKey = "ferry.module_map";

// The parameters a module map (the JSON ferry.torch.export stores under kModuleMapKey) lists in
// its "state" signature; an error when it has none. `where` names the model in errors.
Result<std::vector<weights::ExpectedParam>> expected_params_from_map(const nlohmann::json& map, const std::string& where);

// Audits CHECKPOINT against MODEL (.onnx or .ferry).
Result<weights::AuditReport> audit_weights(const std::string& model_path, const std::string& checkpoint_path);

struct ConvertResult {
  weights::Conversion conversion;
  std::string output;
};
// Converts a checkpoint to a MindSpore .ckpt for the parameters in PARAMS.txt (weights/mindspore.h).
Result<ConvertResult> convert_weights_to_mindspore(const std::string& checkpoint_path, const std::string& names_path,
                                                   const std::string& output);
std::string conversion_to_text(const weights::Conversion& c, const std::string& output);
nlohmann::json conversion_to_json(const weights::Conversion& c, const std::string& output);

}  // namespace ferry::tools
