#include "weights/audit.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/shape.h"

namespace ferry::weights {

namespace {

// Prefixes wrappers add to every key: DataParallel/DistributedDataParallel, torch.compile, Lightning.
constexpr std::string_view kWrapperPrefixes[] = {"module.", "_orig_mod.", "model.", "net."};

bool all_start_with(const std::vector<std::string>& keys, std::string_view p) {
  return !keys.empty() && std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return k.starts_with(p); });
}
bool none_start_with(const std::vector<std::string>& keys, std::string_view p) {
  return std::none_of(keys.begin(), keys.end(), [&](const std::string& k) { return k.starts_with(p); });
}

bool is_running_stat(const std::string& key) {
  for (std::string_view s : {".running_mean", ".running_var", ".moving_mean", ".moving_variance"})
    if (key.ends_with(s)) return true;
  return false;
}

std::vector<int64_t> reversed(std::vector<int64_t> d) {
  std::reverse(d.begin(), d.end());
  return d;
}

bool all_equal(const Tensor& t, double v) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.as_double(i) != v) return false;
  return true;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// A missing and an unexpected key are one renamed tensor when shapes agree and the names are close:
// within a quarter of the longer name's edits, or one is the other under a prefix (conv1.weight vs
// backbone.conv1.weight).
bool looks_renamed(const std::string& model_key, const std::string& ck_key) {
  size_t limit = std::max<size_t>(3, std::max(model_key.size(), ck_key.size()) / 4);
  if (edit_distance(model_key, ck_key) <= limit) return true;
  return ck_key.ends_with("." + model_key) || model_key.ends_with("." + ck_key);
}

struct Matcher {
  const std::vector<ExpectedParam>& expected;
  std::map<std::string, const CheckpointTensor*> by_key;  // after stripping a wrapper prefix
  AuditReport& r;

  void check_present(const ExpectedParam& p, const Tensor& t) {
    const std::string mod = module_of(p.key);
    if (p.has_dims && t.dims() != p.dims) {
      bool transposed = t.rank() >= 2 && reversed(t.dims()) == p.dims;
      r.findings.push_back({transposed ? FindingKind::kTransposed : FindingKind::kShape, p.key, mod,
                            "the model expects " + dims_to_string(p.dims) + ", the checkpoint holds " +
                                dims_to_string(t.dims()) + (transposed ? " (its transpose)" : ""), ""});
      return;
    }
    if (p.dtype != DType::kUndefined && t.dtype() != p.dtype)
      r.findings.push_back({FindingKind::kDtype, p.key, mod,
                            "the model's parameter is " + std::string(dtype_name(p.dtype)) + ", the checkpoint's " +
                                std::string(dtype_name(t.dtype())), ""});
    ++r.matched;
  }

  // Running statistics at mean 0 / variance 1 are BatchNorm's initial values: a network saved before
  // training (or trained in eval mode) has them, and its folded convolutions are wrong.
  void check_bn_defaults() {
    for (const ExpectedParam& p : expected) {
      if (!p.key.ends_with(".running_mean") && !p.key.ends_with(".moving_mean")) continue;
      const bool torch_names = p.key.ends_with(".running_mean");
      const std::string base = p.key.substr(0, p.key.rfind('.'));
      auto mean = by_key.find(p.key);
      auto var = by_key.find(base + (torch_names ? ".running_var" : ".moving_variance"));
      if (mean == by_key.end() || var == by_key.end()) continue;
      if (all_equal(mean->second->value, 0.0) && all_equal(var->second->value, 1.0))
        r.findings.push_back({FindingKind::kBnStats, p.key, base,
                              "running statistics at their defaults (mean 0, variance 1): never updated by training",
                              ""});
    }
  }
};

void pair_renames(AuditReport& r, std::vector<const ExpectedParam*>& missing, std::vector<const CheckpointTensor*>& extra) {
  for (auto m = missing.begin(); m != missing.end();) {
    auto hit = std::find_if(extra.begin(), extra.end(), [&](const CheckpointTensor* c) {
      return (!(*m)->has_dims || c->value.dims() == (*m)->dims) && looks_renamed((*m)->key, c->key);
    });
    if (hit == extra.end()) {
      ++m;
      continue;
    }
    r.findings.push_back({FindingKind::kRenamed, (*m)->key, module_of((*m)->key),
                          "the checkpoint has it as '" + (*hit)->key + "' (same shape)", (*hit)->key});
    extra.erase(hit);
    m = missing.erase(m);
  }
}

}  // namespace

std::string wrapper_prefix(const std::vector<std::string>& ck_keys, const std::vector<std::string>& model_keys) {
  for (std::string_view p : kWrapperPrefixes)
    if (all_start_with(ck_keys, p) && none_start_with(model_keys, p)) return std::string(p);
  return "";
}

std::string module_of(const std::string& key) {
  size_t dot = key.rfind('.');
  return dot == std::string::npos ? "" : key.substr(0, dot);
}

AuditReport audit_checkpoint(const Checkpoint& ck, const std::vector<ExpectedParam>& expected) {
  AuditReport r;
  r.checkpoint = ck.path;
  r.format = ck.format;
  r.container = ck.container;
  r.notes = ck.notes;
  r.expected = static_cast<int64_t>(expected.size());
  r.in_checkpoint = static_cast<int64_t>(ck.tensors.size());
  std::vector<std::string> ck_keys, model_keys;
  for (const auto& t : ck.tensors) ck_keys.push_back(t.key);
  for (const auto& p : expected) model_keys.push_back(p.key);
  const std::string prefix = wrapper_prefix(ck_keys, model_keys);
  if (!prefix.empty())
    r.notes.push_back("every checkpoint key starts with '" + prefix + "' (a wrapper such as DataParallel added it); "
                      "read without it");
  Matcher m{expected, {}, r};
  for (const auto& t : ck.tensors) m.by_key[t.key.substr(prefix.size())] = &t;
  std::vector<const ExpectedParam*> missing;
  std::set<std::string> used;
  for (const ExpectedParam& p : expected) {
    auto it = m.by_key.find(p.key);
    if (it == m.by_key.end()) {
      missing.push_back(&p);
      continue;
    }
    used.insert(p.key);
    m.check_present(p, it->second->value);
  }
  std::vector<const CheckpointTensor*> extra;
  for (const auto& [key, t] : m.by_key)
    if (!used.count(key)) extra.push_back(t);
  pair_renames(r, missing, extra);
  for (const ExpectedParam* p : missing) {
    bool stat = is_running_stat(p->key);
    r.findings.push_back({stat ? FindingKind::kBnStats : FindingKind::kMissing, p->key, module_of(p->key),
                          stat ? "BatchNorm running statistics absent from the checkpoint: the layer would normalize "
                                 "with its initial mean 0 / variance 1"
                               : "not in the checkpoint: the parameter would keep its initial (random) value",
                          "", true});
  }
  for (const CheckpointTensor* t : extra)
    r.findings.push_back({FindingKind::kUnexpected, t->key, module_of(t->key),
                          "the model has no parameter of this name (" + dims_to_string(t->value.dims()) + ")", t->key});
  m.check_bn_defaults();
  return r;
}

std::string_view finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::kMissing: return "missing";
    case FindingKind::kUnexpected: return "unexpected";
    case FindingKind::kRenamed: return "renamed";
    case FindingKind::kShape: return "shape";
    case FindingKind::kTransposed: return "transposed";
    case FindingKind::kDtype: return "dtype";
    case FindingKind::kBnStats: return "bn-stats";
  }
  return "?";
}

std::string audit_to_text(const AuditReport& r) {
  std::string s = "checkpoint " + r.checkpoint + " (" + r.format +
                  (r.container.empty() ? "" : ", weights from its '" + r.container + "' entry") + "): " +
                  std::to_string(r.in_checkpoint) + " tensors; model: " + std::to_string(r.expected) +
                  " parameters, " + std::to_string(r.matched) + " matched\n";
  for (const std::string& n : r.notes) s += "note: " + n + "\n";
  if (r.findings.empty()) return s + "no findings: every parameter has its tensor, with the right shape and dtype\n";
  s += std::to_string(r.findings.size()) + " finding" + (r.findings.size() == 1 ? "" : "s") + ":\n";
  for (const AuditFinding& f : r.findings)
    s += "  " + std::string(finding_kind_name(f.kind)) + "  " + f.key + "  (module " +
         (f.module.empty() ? "<root>" : f.module) + "): " + f.detail + "\n";
  return s;
}

nlohmann::json audit_to_json(const AuditReport& r) {
  nlohmann::json j = {{"schema", "ferry.weights-audit/1"}, {"checkpoint", r.checkpoint}, {"format", r.format},
                      {"container", r.container}, {"expected", r.expected}, {"in_checkpoint", r.in_checkpoint},
                      {"matched", r.matched}, {"notes", r.notes}, {"findings", nlohmann::json::array()}};
  for (const AuditFinding& f : r.findings) {
    nlohmann::json e = {{"kind", finding_kind_name(f.kind)}, {"key", f.key}, {"module", f.module}, {"detail", f.detail}};
    if (!f.checkpoint_key.empty()) e["checkpoint_key"] = f.checkpoint_key;
    j["findings"].push_back(e);
  }
  return j;
}

}  // namespace ferry::weights
