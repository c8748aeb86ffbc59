// The weights audit: a checkpoint held against the parameters a model expects, so a key that does not
// match is found before the accuracy drop is blamed on the hardware. Each finding names the key and
// the module it belongs to. What it finds:
//   missing       a parameter the checkpoint lacks: it would keep its initial (random) value
//   unexpected    a checkpoint key the model has no parameter for
//   renamed       a missing and an unexpected key that look like the same tensor (same shape, similar name)
//   shape         same key, another shape;   transposed: the shape matches only transposed
//   dtype         same key, another dtype (load_state_dict would cast it silently)
//   bn-stats      BatchNorm running statistics absent, or at their defaults (mean 0, variance 1): the
//                 network was never trained or calibrated in train mode
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "weights/checkpoint.h"

namespace ferry::weights {

struct ExpectedParam {
  std::string key;                  // "layer1.0.bn1.running_mean"
  std::vector<int64_t> dims;        // empty with has_dims false when unknown
  bool has_dims = false;
  DType dtype = DType::kUndefined;  // kUndefined when unknown
  std::string module_class;         // "BatchNorm2d" where known
};

enum class FindingKind { kMissing, kUnexpected, kRenamed, kShape, kTransposed, kDtype, kBnStats };

struct AuditFinding {
  FindingKind kind;
  std::string key;         // the model's key (the checkpoint's for kUnexpected)
  std::string module;      // "layer1.0.bn1"
  std::string detail;      // what differs, in words
  std::string checkpoint_key;  // kRenamed: the checkpoint's key
  bool absent = false;         // the model's key is not in the checkpoint (kMissing, kBnStats when absent)
};

struct AuditReport {
  std::string checkpoint, format, container;
  int64_t expected = 0, in_checkpoint = 0, matched = 0;
  std::vector<AuditFinding> findings;
  std::vector<std::string> notes;  // the reader's, and prefixes stripped
  bool clean() const { return findings.empty(); }
};

AuditReport audit_checkpoint(const Checkpoint& ck, const std::vector<ExpectedParam>& expected);

std::string_view finding_kind_name(FindingKind k);  // "missing", "renamed", "bn-stats", ...
// The prefix a wrapper (DataParallel's "module.", torch.compile's "_orig_mod.") put before every
// checkpoint key and the model's keys lack; empty when there is none.
std::string wrapper_prefix(const std::vector<std::string>& checkpoint_keys, const std::vector<std::string>& model_keys);
// The module a key belongs to: the key without its last component.
std::string module_of(const std::string& key);
std::string audit_to_text(const AuditReport& r);
nlohmann::json audit_to_json(const AuditReport& r);

}  // namespace ferry::weights
