// Checkpoints as ferry reads them: named tensors from a torch .pth/.pt (zip format), .safetensors,
// NumPy .npz or a MindSpore .ckpt, whatever wrote them, without running any code they carry
// (weights/pickle.h). The format is recognised by the file's bytes, not its name, except MindSpore's
// protobuf, which has no magic number and is recognised by its .ckpt extension.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace ferry::weights {

struct CheckpointTensor {
  std::string key;  // "layer1.0.conv1.weight"
  Tensor value;
};

struct Checkpoint {
  std::string path;
  std::string format;  // "torch zip (.pth)", "safetensors", "npz", "mindspore ckpt"
  // The tensors, in file order, keyed as the state_dict (or the checkpoint's own names).
  std::vector<CheckpointTensor> tensors;
  // Where the tensors came from inside a training checkpoint ("state_dict", "model"), or empty.
  std::string container;
  // Other entries a training checkpoint holds, rendered: {"epoch", "90"}, {"optimizer", "{2 entries}"}.
  std::vector<std::pair<std::string, std::string>> other;
  // What a reader noticed and the user should know ("keys carried the 'module.' prefix of
  // DataParallel: removed").
  std::vector<std::string> notes;

  const CheckpointTensor* find(const std::string& key) const;
};

// A file format's own dtype names ("F32" in safetensors, "Float32" in MindSpore) and the lookups both ways.
struct DtypeName {
  std::string_view name;
  DType dtype;
};
std::optional<DType> dtype_named(std::span<const DtypeName> table, std::string_view name);
std::string_view name_of_dtype(std::span<const DtypeName> table, DType dtype);  // "" when absent

// Reads a checkpoint of any supported format.
Result<Checkpoint> read_checkpoint(const std::string& path);

// The formats' readers (read_checkpoint picks one).
Result<Checkpoint> read_torch_zip(const std::string& path);
Result<Checkpoint> read_safetensors(const std::string& path);
Result<Checkpoint> read_mindspore_ckpt(const std::string& path);

}  // namespace ferry::weights
