// Reading a Python pickle without running it: the part of the protocol (2 to 5) that torch.save writes
// for checkpoints, with nothing ever called. A pickle is a program for a small stack machine whose
// GLOBAL/REDUCE opcodes import and call any Python function (that is how a malicious checkpoint runs
// `os.system`); this reader interprets the data opcodes itself and accepts only the globals a
// checkpoint of tensors and plain containers needs (torch's tensor/parameter rebuild functions, its
// storage types, OrderedDict, set, _codecs.encode for bytes), building values for them. Any other
// global is refused by name before anything else happens -- torch.load(weights_only=True)'s rule,
// without needing Python.
//
// Values live in an arena and refer to each other by index, so hostile nesting cannot overflow the
// stack when they are freed, and cycles built through the memo are harmless.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace ferry::weights {

using ValueId = uint32_t;

enum class PyKind : uint8_t {
  kNone, kBool, kInt, kFloat, kStr, kBytes,
  kTuple, kList, kDict, kSet,  // items (a dict's are key, value, key, value, ...)
  kGlobal,                     // an allowed module.name, referenced and not yet called
  kStorage,                    // a torch storage: text = its key in the archive, dtype, numel
  kTensor,                     // a torch tensor: storage, offset, dims, strides
};

struct PyValue {
  PyKind kind = PyKind::kNone;
  int64_t number = 0;  // bool, int; a storage's numel; a tensor's storage offset (in elements)
  double real = 0.0;   // float
  std::string text;    // str, bytes, a global's "module.name", a storage's key
  std::vector<ValueId> items;
  DType dtype = DType::kUndefined;        // storage, tensor
  ValueId storage = 0;                    // tensor
  std::vector<int64_t> dims, strides;     // tensor
};

struct PickleDocument {
  std::vector<PyValue> values;
  ValueId root = 0;
  const PyValue& at(ValueId id) const { return values[id]; }
};

// Parses a pickle. `label` names it in errors ("model.pth:archive/data.pkl"). `persistent_load` turns
// a BINPERSID id (a tuple, already parsed) into a value; torch's zip format uses it for storages.
using PersistentLoad = std::function<Result<ValueId>(PickleDocument&, ValueId pid)>;
Result<PickleDocument> parse_pickle(std::string_view bytes, const std::string& label,
                                    const PersistentLoad& persistent_load);

// torch's legacy storage type name ("torch.FloatStorage") -> dtype; nullopt for types ferry lacks.
std::optional<DType> torch_storage_dtype(std::string_view global);

// A short, safe rendering of a value for reports ("90", "'adam'", "[3 items]").
std::string describe_value(const PickleDocument& doc, ValueId id);

}  // namespace ferry::weights
