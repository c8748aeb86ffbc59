// Loading target profiles. Every key is checked: an unknown key (a typo such as "opsets") is an error,
// not a silently ignored setting, and every error names the profile, the key path and its line.
#include "targets/target.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ops/op.h"

namespace ferry::targets {

// Generated at build time from src/targets/profiles/*.json (builtin_profiles.cc).
const std::vector<std::pair<std::string, const char*>>& builtin_profiles();

namespace {

using json = nlohmann::json;

// The line of the first occurrence of "key" in text (1-based), 0 when not found: nlohmann keeps no
// positions for parsed elements, and a key's first textual occurrence is right for profiles' shapes.
int line_of_key(const std::string& text, const std::string& key) {
  size_t at = text.find("\"" + key + "\"");
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

struct Reader {
  const std::string& text;
  const std::string& label;

  Status fail(const std::string& path, const std::string& leaf, const std::string& msg) const {
    int line = line_of_key(text, leaf);
    std::string where = label + (line > 0 ? ":" + std::to_string(line) : "");
    return Status::invalid(where + ": key '" + path + "': " + msg);
  }

  Result<std::vector<std::string>> strings(const json& j, const std::string& path, const std::string& leaf) const {
    if (!j.is_array()) return fail(path, leaf, "expected a list of strings");
    std::vector<std::string> out;
    for (const json& e : j) {
      if (e.is_string()) out.push_back(e.get<std::string>());
      else if (e.is_number_integer()) out.push_back(std::to_string(e.get<int64_t>()));
      else return fail(path, leaf, "expected a list of strings, got " + e.dump());
    }
    return out;
  }

  Result<std::vector<DType>> dtypes(const json& j, const std::string& path, const std::string& leaf) const {
    auto names = strings(j, path, leaf);
    if (!names.ok()) return names.status();
    std::vector<DType> out;
    for (const std::string& n : *names) {
      auto d = dtype_from_name(n);
      if (!d) return fail(path, leaf, "unknown dtype '" + n + "' (float32, float16, bfloat16, int64, ...)");
      out.push_back(*d);
    }
    return out;
  }

  Status opset_range(const json& j, const std::string& path, const std::string& leaf, int& lo, int& hi) const {
    if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer() || !j[1].is_number_integer())
      return fail(path, leaf, "expected [min, max] opset numbers");
    lo = j[0].get<int>();
    hi = j[1].get<int>();
    if (lo < 1 || hi < lo) return fail(path, leaf, "range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] is empty");
    return Status();
  }

  Status check_keys(const json& obj, const std::string& path, const std::set<std::string>& known) const {
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (!known.count(it.key())) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        return fail(path.empty() ? it.key() : path + "." + it.key(), it.key(), "unknown key (known: " + list + ")");
      }
    return Status();
  }

  Result<OpRule> op_rule(const std::string& op, const json& j) const {
    const std::string path = "ops." + op;
    if (!j.is_object()) return fail(path, op, "expected an object ({} for no constraints)");
    FERRY_RETURN_IF_ERROR(check_keys(j, path, {"opset", "dtypes", "attrs", "const_inputs", "data_dependent"}));
    OpRule r;
    if (j.contains("opset")) FERRY_RETURN_IF_ERROR(opset_range(j["opset"], path + ".opset", "opset", r.min_opset, r.max_opset));
    if (j.contains("dtypes")) {
      if (!j["dtypes"].is_object()) return fail(path + ".dtypes", "dtypes", "expected {\"in:0\": [dtypes], ...}");
      for (auto it = j["dtypes"].begin(); it != j["dtypes"].end(); ++it) {
        const std::string& slot = it.key();
        bool ok = slot == "*" || ((slot.rfind("in:", 0) == 0 || slot.rfind("out:", 0) == 0) &&
                                  slot.find_first_not_of("0123456789", slot.find(':') + 1) == std::string::npos &&
                                  slot.size() > slot.find(':') + 1);
        if (!ok) return fail(path + ".dtypes." + slot, slot, "slot must be \"*\", \"in:N\" or \"out:N\"");
        auto d = dtypes(it.value(), path + ".dtypes." + slot, slot);
        if (!d.ok()) return d.status();
        r.dtypes[slot] = *d;
      }
    }
    if (j.contains("attrs")) {
      if (!j["attrs"].is_object()) return fail(path + ".attrs", "attrs", "expected {\"name\": [values] | {values, default}}");
      for (auto it = j["attrs"].begin(); it != j["attrs"].end(); ++it) {
        const std::string apath = path + ".attrs." + it.key();
        AttrConstraint c;
        const json& a = it.value();
        if (a.is_object()) {
          FERRY_RETURN_IF_ERROR(check_keys(a, apath, {"values", "default"}));
          if (!a.contains("values")) return fail(apath, it.key(), "missing \"values\"");
          auto v = strings(a["values"], apath + ".values", it.key());
          if (!v.ok()) return v.status();
          c.values = *v;
          if (a.contains("default")) {
            if (a["default"].is_string()) c.dflt = a["default"].get<std::string>();
            else if (a["default"].is_number_integer()) c.dflt = std::to_string(a["default"].get<int64_t>());
            else return fail(apath + ".default", "default", "expected a string or an integer");
          }
        } else {
          auto v = strings(a, apath, it.key());
          if (!v.ok()) return v.status();
          c.values = *v;
        }
        r.attrs[it.key()] = c;
      }
    }
    if (j.contains("const_inputs")) {
      const json& c = j["const_inputs"];
      if (!c.is_array()) return fail(path + ".const_inputs", "const_inputs", "expected a list of input indices");
      for (const json& e : c) {
        if (!e.is_number_integer() || e.get<int>() < 0)
          return fail(path + ".const_inputs", "const_inputs", "expected input indices >= 0, got " + e.dump());
        r.const_inputs.push_back(e.get<int>());
      }
    }
    if (j.contains("data_dependent")) {
      if (!j["data_dependent"].is_boolean()) return fail(path + ".data_dependent", "data_dependent", "expected true or false");
      r.data_dependent = j["data_dependent"].get<bool>();
    }
    return r;
  }

  // Applies the keys of `j` onto `t` (a base profile's values, or defaults).
  Status apply(const json& j, Target& t) const {
    FERRY_RETURN_IF_ERROR(check_keys(j, "", {"name", "base", "description", "source", "backend", "emulated", "host",
                                             "opset", "all_ops", "dtypes", "ops", "remove_ops", "dynamic_shapes",
                                             "data_dependent_shapes", "control_flow", "precision"}));
    auto str = [&](const char* key, std::string& out) -> Status {
      if (!j.contains(key)) return Status();
      if (!j[key].is_string()) return fail(key, key, "expected a string");
      out = j[key].get<std::string>();
      return Status();
    };
    auto boolean = [&](const char* key, bool& out) -> Status {
      if (!j.contains(key)) return Status();
      if (!j[key].is_boolean()) return fail(key, key, "expected true or false");
      out = j[key].get<bool>();
      return Status();
    };
    FERRY_RETURN_IF_ERROR(str("name", t.name));
    FERRY_RETURN_IF_ERROR(str("description", t.description));
    FERRY_RETURN_IF_ERROR(str("source", t.source));
    FERRY_RETURN_IF_ERROR(str("backend", t.backend));
    if (t.backend != "cpu" && t.backend != "reference")
      return fail("backend", "backend", "'" + t.backend + "' is not a local backend (cpu, reference)");
    FERRY_RETURN_IF_ERROR(boolean("emulated", t.emulated));
    FERRY_RETURN_IF_ERROR(str("host", t.host));
    FERRY_RETURN_IF_ERROR(boolean("all_ops", t.all_ops));
    if (j.contains("opset")) FERRY_RETURN_IF_ERROR(opset_range(j["opset"], "opset", "opset", t.min_opset, t.max_opset));
    if (j.contains("dtypes")) {
      auto d = dtypes(j["dtypes"], "dtypes", "dtypes");
      if (!d.ok()) return d.status();
      t.dtypes = *d;
    }
    if (j.contains("ops")) {
      if (!j["ops"].is_object()) return fail("ops", "ops", "expected {\"OpType\": {constraints}, ...}");
      for (auto it = j["ops"].begin(); it != j["ops"].end(); ++it) {
        auto r = op_rule(it.key(), it.value());
        if (!r.ok()) return r.status();
        t.ops[it.key()] = *r;
      }
    }
    if (j.contains("remove_ops")) {
      auto names = strings(j["remove_ops"], "remove_ops", "remove_ops");
      if (!names.ok()) return names.status();
      for (const auto& n : *names) t.ops.erase(n);
    }
    if (j.contains("dynamic_shapes")) {
      auto m = strings(j["dynamic_shapes"], "dynamic_shapes", "dynamic_shapes");
      if (!m.ok()) return m.status();
      for (const auto& s : *m)
        if (s != "static" && s != "gears" && s != "ranges" && s != "any")
          return fail("dynamic_shapes", "dynamic_shapes", "'" + s + "' is not one of static, gears, ranges, any");
      t.dynamic_shapes = *m;
    }
    FERRY_RETURN_IF_ERROR(str("data_dependent_shapes", t.data_dependent_shapes));
    if (t.data_dependent_shapes != "device" && t.data_dependent_shapes != "host" && t.data_dependent_shapes != "unsupported")
      return fail("data_dependent_shapes", "data_dependent_shapes",
                  "'" + t.data_dependent_shapes + "' is not one of device, host, unsupported");
    if (j.contains("control_flow")) {
      auto m = strings(j["control_flow"], "control_flow", "control_flow");
      if (!m.ok()) return m.status();
      t.control_flow = *m;
    }
    if (j.contains("precision")) {
      const json& p = j["precision"];
      if (!p.is_object()) return fail("precision", "precision", "expected {\"modes\": [...], \"default\": \"fp16\"}");
      FERRY_RETURN_IF_ERROR(check_keys(p, "precision", {"modes", "default"}));
      if (p.contains("modes")) {
        auto m = strings(p["modes"], "precision.modes", "modes");
        if (!m.ok()) return m.status();
        for (const auto& s : *m)
          if (s != "fp32" && s != "fp16" && s != "bf16" && s != "mixed_fp16" && s != "mixed_bf16")
            return fail("precision.modes", "modes", "'" + s + "' is not one of fp32, fp16, bf16, mixed_fp16, mixed_bf16");
        t.precision_modes = *m;
      }
      if (p.contains("default")) {
        if (!p["default"].is_string()) return fail("precision.default", "default", "expected a string");
        t.default_precision = p["default"].get<std::string>();
      }
    }
    if (!t.has_precision(t.default_precision))
      return fail("precision.default", "default", "'" + t.default_precision + "' is not among the target's modes");
    return Status();
  }
};

}  // namespace

bool Target::allows_dynamic(const std::string& mode) const {
  return std::find(dynamic_shapes.begin(), dynamic_shapes.end(), mode) != dynamic_shapes.end();
}
bool Target::allows_control_flow(const std::string& op) const {
  return std::find(control_flow.begin(), control_flow.end(), op) != control_flow.end();
}
bool Target::has_precision(const std::string& mode) const {
  return std::find(precision_modes.begin(), precision_modes.end(), mode) != precision_modes.end();
}

const OpRule* Target::rule(const std::string& domain, const std::string& op_type) const {
  if (all_ops) {
    static const OpRule kAny;
    return ops::OpRegistry::global().knows(domain, op_type) ? (ops.count(op_type) ? &ops.at(op_type) : &kAny) : nullptr;
  }
  if (!domain.empty() && domain != "ai.onnx") return nullptr;  // profiles list default-domain ops
  auto it = ops.find(op_type);
  return it == ops.end() ? nullptr : &it->second;
}

std::vector<std::string> builtin_target_names() {
  std::vector<std::string> out;
  for (const auto& [name, text] : builtin_profiles()) out.push_back(name);
  return out;
}

const char* builtin_target_text(const std::string& name) {
  for (const auto& [n, text] : builtin_profiles())
    if (n == name) return text;
  return nullptr;
}

namespace {
Result<Target> parse_with_depth(const std::string& text, const std::string& label, int depth) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based offset where parsing stopped: turn it into a line.
    size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
    std::string what = e.what();
    size_t colon = what.find(": ", what.find("parse error"));
    return Status::invalid(label + ":" + std::to_string(line) + ": not valid JSON" +
                           (colon != std::string::npos ? what.substr(colon) : ": " + what));
  }
  if (!j.is_object()) return Status::invalid(label + ": a target profile is a JSON object");
  Reader rd{text, label};
  Target t;
  if (j.contains("base")) {
    if (!j["base"].is_string()) return rd.fail("base", "base", "expected a target name or file");
    if (depth > 4) return rd.fail("base", "base", "too many levels of base profiles (a cycle?)");
    std::string base = j["base"].get<std::string>();
    const char* builtin = builtin_target_text(base);
    Result<Target> b = Status::invalid("");
    if (builtin) {
      b = parse_with_depth(builtin, "builtin:" + base, depth + 1);
    } else {
      std::filesystem::path p = std::filesystem::path(label).parent_path() / base;
      std::ifstream f(p);
      if (!f) return rd.fail("base", "base", "'" + base + "' is neither a built-in target nor a readable file");
      std::stringstream buf;
      buf << f.rdbuf();
      b = parse_with_depth(buf.str(), p.string(), depth + 1);
    }
    if (!b.ok()) return Status(b.status()).with_context("in base profile of " + label);
    t = *b;
  }
  FERRY_RETURN_IF_ERROR(rd.apply(j, t));
  if (t.name.empty()) return Status::invalid(label + ": key 'name': missing (every profile names its target)");
  if (!t.all_ops && t.ops.empty()) return rd.fail("ops", "ops", "the target runs no ops (give \"ops\" or \"all_ops\": true)");
  if (t.dynamic_shapes.empty()) t.dynamic_shapes = {"static"};
  t.file = label;
  return t;
}
}  // namespace

Result<Target> parse_target(const std::string& text, const std::string& label) { return parse_with_depth(text, label, 0); }

Result<std::optional<Target>> load_host_target(const Target& t) {
  if (t.host.empty()) return std::optional<Target>();
  auto h = load_target(t.host);
  if (!h.ok()) return Status(h.status()).with_context("loading host target of " + t.name);
  return std::optional<Target>(std::move(h).value());
}

Result<Target> load_target(const std::string& name_or_path) {
  if (const char* text = builtin_target_text(name_or_path)) return parse_target(text, "builtin:" + name_or_path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(name_or_path, ec)) {
    std::string names;
    for (const auto& n : builtin_target_names()) names += (names.empty() ? "" : ", ") + n;
    return Status::invalid("target '" + name_or_path + "' is neither a built-in target (" + names +
                           ") nor a profile file");
  }
  std::ifstream f(name_or_path);
  std::stringstream buf;
  buf << f.rdbuf();
  if (!f && !f.eof()) return Status::io("cannot read target profile '" + name_or_path + "'");
  return parse_target(buf.str(), name_or_path);
}

}  // namespace ferry::targets
