// torch state_dict -> MindSpore parameter names (weights/mindspore.h).
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/shape.h"
#include "weights/mindspore.h"

namespace ferry::weights {

namespace {

struct Rename {
  std::string_view mindspore, torch, layer;
};
// The parameter names MindSpore's layers use where torch's differ. Linear/Dense and Conv keep
// weight/bias (and the same [out, in] / OIHW layouts).
constexpr Rename kRenames[] = {
    {".gamma", ".weight", "BatchNorm/LayerNorm"},
    {".beta", ".bias", "BatchNorm/LayerNorm"},
    {".moving_mean", ".running_mean", "BatchNorm"},
    {".moving_variance", ".running_var", "BatchNorm"},
    {".embedding_table", ".weight", "Embedding"},
};

// What a parameter is for, by its last name component, in either framework's words.
std::string role_of(const std::string& key) {
  std::string last = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
  if (last == "weight" || last == "gamma" || last == "embedding_table") return "scale";
  if (last == "bias" || last == "beta") return "shift";
  if (last == "running_mean" || last == "moving_mean") return "mean";
  if (last == "running_var" || last == "moving_variance") return "variance";
  return last;
}

bool fits(const ExpectedParam& t, const Tensor& v) { return !t.has_dims || t.dims == v.dims(); }

struct Mapper {
  const std::vector<ExpectedParam>& targets;
  std::vector<const CheckpointTensor*> sources;  // in checkpoint order, wrapper prefix stripped below
  std::vector<std::string> source_keys;
  std::map<std::string, size_t> source_index;
  std::vector<int> source_used;  // index into targets, or -1
  std::vector<std::pair<size_t, std::string>> target_source;  // per target: (source index or npos, how)

  void by_name() {
    for (size_t i = 0; i < targets.size(); ++i) {
      const ExpectedParam& t = targets[i];
      if (auto it = source_index.find(t.key); it != source_index.end() && fits(t, sources[it->second]->value)) {
        take(i, it->second, "same name");
        continue;
      }
      for (const Rename& r : kRenames) {
        if (!t.key.ends_with(r.mindspore)) continue;
        std::string cand = t.key.substr(0, t.key.size() - r.mindspore.size()) + std::string(r.torch);
        auto it = source_index.find(cand);
        if (it != source_index.end() && source_used[it->second] < 0 && fits(t, sources[it->second]->value)) {
          take(i, it->second, "renamed (" + std::string(r.layer) + " " + std::string(r.torch.substr(1)) + " -> " +
                                  std::string(r.mindspore.substr(1)) + ")");
          break;
        }
      }
    }
  }

  // What is left is paired in order within each (role, shape) class: the n-th unmatched target that is
  // a [64] scale takes the n-th unmatched source that is a [64] scale. Module names differ between
  // the two codebases; the order of modules and the shapes do not (the order of parameters inside a
  // module may: MindSpore's BatchNorm lists its moving statistics before gamma and beta).
  void by_position() {
    std::map<std::pair<std::string, std::vector<int64_t>>, std::vector<size_t>> queues;
    for (size_t s = 0; s < sources.size(); ++s)
      if (source_used[s] < 0) queues[{role_of(source_keys[s]), sources[s]->value.dims()}].push_back(s);
    std::map<std::pair<std::string, std::vector<int64_t>>, size_t> taken;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (target_source[i].first != std::string::npos || !targets[i].has_dims) continue;
      auto cls = std::make_pair(role_of(targets[i].key), targets[i].dims);
      auto q = queues.find(cls);
      size_t& n = taken[cls];
      if (q == queues.end() || n >= q->second.size()) continue;
      take(i, q->second[n++], "by position (the next unmatched " + cls.first + " of shape " + dims_to_string(cls.second) + ")");
    }
  }

  void take(size_t target, size_t source, std::string how) {
    target_source[target] = {source, std::move(how)};
    source_used[source] = static_cast<int>(target);
  }
};

Result<ExpectedParam> parse_param_line(const std::string& line, const std::string& where) {
  std::istringstream in(line);
  ExpectedParam p;
  in >> p.key;
  std::string field;
  while (in >> field) {
    if (auto dt = dtype_from_name(field)) {
      p.dtype = *dt;
      continue;
    }
    p.has_dims = true;
    std::istringstream dims(field);
    std::string d;
    while (std::getline(dims, d, ',')) {
      if (d.empty()) continue;
      char* end = nullptr;
      long long v = std::strtoll(d.c_str(), &end, 10);
      if (*end || v < 0) return Status::invalid(where + ": '" + field + "' is neither dims (64,3,7,7) nor a dtype");
      p.dims.push_back(v);
    }
  }
  return p;
}

}  // namespace

Result<std::vector<ExpectedParam>> read_param_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::io("cannot open '" + path + "'");
  std::vector<ExpectedParam> out;
  std::set<std::string> seen;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    FERRY_ASSIGN_OR_RETURN(ExpectedParam p, parse_param_line(line, path + ":" + std::to_string(n)));
    if (!seen.insert(p.key).second) return Status::invalid(path + ":" + std::to_string(n) + ": '" + p.key + "' twice");
    out.push_back(std::move(p));
  }
  if (out.empty()) return Status::invalid(path + ": no parameter names");
  return out;
}

Result<Conversion> convert_to_mindspore(const Checkpoint& source, const std::vector<ExpectedParam>& targets) {
  Mapper m{targets, {}, {}, {}, {}, std::vector<std::pair<size_t, std::string>>(targets.size(), {std::string::npos, ""})};
  std::vector<std::string> ck_keys, target_keys;
  for (const auto& t : source.tensors) ck_keys.push_back(t.key);
  for (const auto& t : targets) target_keys.push_back(t.key);
  const std::string prefix = wrapper_prefix(ck_keys, target_keys);
  for (const auto& t : source.tensors) {
    m.source_index[t.key.substr(prefix.size())] = m.sources.size();
    m.sources.push_back(&t);
    m.source_keys.push_back(t.key.substr(prefix.size()));
  }
  m.source_used.assign(m.sources.size(), -1);
  m.by_name();
  m.by_position();

  Conversion c;
  Checkpoint converted;
  converted.path = "(converted)";
  converted.format = "mindspore ckpt";
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& [s, how] = m.target_source[i];
    if (s == std::string::npos) {
      c.mapping.push_back({"", targets[i].key, "missing: no checkpoint key maps to it"});
      continue;
    }
    Tensor v = m.sources[s]->value;
    std::string note = how;
    if (targets[i].dtype != DType::kUndefined && v.dtype() != targets[i].dtype) {
      v = v.cast(targets[i].dtype);
      note += ", cast to " + std::string(dtype_name(targets[i].dtype));
    }
    c.mapping.push_back({m.sources[s]->key, targets[i].key, note});
    converted.tensors.push_back({targets[i].key, v});
  }
  for (size_t s = 0; s < m.sources.size(); ++s) {
    if (m.source_used[s] >= 0) continue;
    const std::string& key = m.source_keys[s];
    c.mapping.push_back({m.sources[s]->key, "",
                         key.ends_with(".num_batches_tracked")
                             ? "left out: BatchNorm's num_batches_tracked counter has no MindSpore counterpart"
                             : "left out: no MindSpore parameter of this name, role and shape"});
  }
  c.audit = audit_checkpoint(converted, targets);
  c.tensors = std::move(converted.tensors);
  return c;
}

}  // namespace ferry::weights
