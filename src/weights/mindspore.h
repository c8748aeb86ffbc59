// The PyTorch -> MindSpore weights route: a torch state_dict renamed onto a MindSpore network's
// parameter names and written as a MindSpore .ckpt. The name map is derived, not written per model:
// same names first, then the renames MindSpore's layers imply (BatchNorm gamma/beta/moving_mean/
// moving_variance for weight/bias/running_mean/running_var, Embedding's embedding_table), then what
// is left paired in order where the shapes agree. Every key ends up mapped, renamed or left out, and
// the report says which.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "weights/audit.h"
#include "weights/checkpoint.h"

namespace ferry::weights {

struct NameMapping {
  std::string source;  // the checkpoint's key ("" for a target nothing maps to)
  std::string target;  // the MindSpore parameter ("" for a source key left out)
  // "same name", "renamed (BatchNorm running_mean -> moving_mean)", "by position (same shape)",
  // "left out: num_batches_tracked has no MindSpore counterpart", "missing: no checkpoint key", ...
  std::string how;
};

struct Conversion {
  std::vector<CheckpointTensor> tensors;  // in the target's parameter order, under the target's names
  std::vector<NameMapping> mapping;       // every source and target key, once
  AuditReport audit;                      // of the converted tensors against the target's parameters
};

// Maps `source` onto `targets` (the MindSpore network's parameters: names, shapes, dtypes).
Result<Conversion> convert_to_mindspore(const Checkpoint& source, const std::vector<ExpectedParam>& targets);

// Reads PARAMS.txt: one MindSpore parameter per line, "name [dims] [dtype]" ("conv1.weight 64,3,7,7
// float32"; dims and dtype optional), '#' starts a comment. `path` names the file in errors.
Result<std::vector<ExpectedParam>> read_param_list(const std::string& path);

Status write_mindspore_ckpt(const std::string& path, const std::vector<CheckpointTensor>& tensors);
// "Float32", "Int64", ...: MindSpore's name of a dtype; empty when it has none.
std::string_view mindspore_dtype_name(DType t);

}  // namespace ferry::weights
