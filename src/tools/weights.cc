#include "tools/weights.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/model_session.h"

namespace ferry::tools {

namespace {

Result<std::vector<weights::ExpectedParam>> from_state_signature(const nlohmann::json& state, const std::string& where) {
  std::vector<weights::ExpectedParam> out;
  for (auto it = state.begin(); it != state.end(); ++it) {
    const auto& v = it.value();
    weights::ExpectedParam p;
    p.key = it.key();
    if (!v.is_object()) return Status::invalid(where + ": state entry '" + p.key + "' is not an object");
    if (v.contains("shape") && v["shape"].is_array()) {
      p.has_dims = true;
      for (const auto& d : v["shape"]) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0) return Status::invalid(where + ": bad shape of '" + p.key + "'");
        p.dims.push_back(d.get<int64_t>());
      }
    }
    if (v.contains("dtype") && v["dtype"].is_string())
      if (auto dt = dtype_from_name(v["dtype"].get<std::string>())) p.dtype = *dt;
    if (v.contains("class") && v["class"].is_string()) p.module_class = v["class"].get<std::string>();
    out.push_back(std::move(p));
  }
  return out;
}

// Initializers the module map ties to state_dict keys (exports from before the map held "state").
std::vector<weights::ExpectedParam> from_initializer_map(const nlohmann::json& inits, const ir::Graph& g) {
  std::vector<weights::ExpectedParam> out;
  for (auto it = inits.begin(); it != inits.end(); ++it) {
    if (!it.value().is_object() || !it.value().contains("key") || !it.value()["key"].is_string()) continue;
    weights::ExpectedParam p;
    p.key = it.value()["key"].get<std::string>();
    const std::string match = it.value().value("match", "");
    if (const ir::Value* v = g.find_local_value(it.key()); v && v->is_constant() && match != "folded") {
      p.has_dims = true;
      p.dims = v->initializer.dims();
      if (match == "transposed") std::reverse(p.dims.begin(), p.dims.end());
      p.dtype = v->initializer.dtype();
    }
    out.push_back(std::move(p));
  }
  return out;
}

bool looks_like_state_key(const std::string& name) {
  return name.find('.') != std::string::npos && !name.starts_with("onnx::") && !name.starts_with("/") &&
         name.find("::") == std::string::npos;
}

}  // namespace

Result<std::vector<weights::ExpectedParam>> expected_params_from_map(const nlohmann::json& map, const std::string& where) {
  if (!map.is_object() || !map.contains("state") || !map["state"].is_object())
    return Status::invalid(where + ": the module map has no state signature (exported before ferry recorded it); "
                                   "export the model again with ferry.torch.export");
  return from_state_signature(map["state"], where);
}

Result<std::vector<weights::ExpectedParam>> expected_params(const ir::Model& model, std::vector<std::string>& notes) {
  auto it = model.metadata.find(kModuleMapKey);
  if (it != model.metadata.end()) {
    const std::string where = model.source_path + ": metadata " + kModuleMapKey;
    nlohmann::json map = nlohmann::json::parse(it->second, nullptr, false);
    if (map.is_discarded() || !map.is_object()) return Status::invalid(where + " is not JSON");
    if (map.contains("state") && map["state"].is_object()) return from_state_signature(map["state"], where);
    if (map.contains("initializers") && map["initializers"].is_object()) {
      notes.push_back("the module map predates state signatures: parameters folded by the exporter (BatchNorm "
                      "statistics) are not checked; export again with ferry.torch.export to check them");
      std::vector<weights::ExpectedParam> out;
      std::set<std::string> seen;
      for (auto& p : from_initializer_map(map["initializers"], *model.graph))
        if (seen.insert(p.key).second) out.push_back(std::move(p));
      return out;
    }
  }
  std::vector<weights::ExpectedParam> out;
  for (const ir::Value* v : model.graph->initializers()) {
    if (!looks_like_state_key(v->name)) continue;
    weights::ExpectedParam p{v->name, v->initializer.dims(), true, v->initializer.dtype(), ""};
    out.push_back(std::move(p));
  }
  if (out.empty())
    return Status::invalid(model.source_path + ": has no module map and no initializer named like a state_dict key, "
                                               "so ferry cannot tell which parameters it expects; export it with "
                                               "ferry.torch.export (Python), which records them");
  notes.push_back("the model has no module map: its initializers named like state_dict keys are taken as the "
                  "parameters (" + std::to_string(out.size()) + "); BatchNorm layers the exporter folded are not seen");
  return out;
}

Result<weights::AuditReport> audit_weights(const std::string& model_path, const std::string& checkpoint_path) {
  frontend::ImportOptions import;
  import.check_ops = false;  // the weights matter here, not whether ferry runs every op
  FERRY_ASSIGN_OR_RETURN(auto model, runtime::open_model(model_path, import));
  std::vector<std::string> notes;
  FERRY_ASSIGN_OR_RETURN(auto expected, expected_params(*model, notes));
  FERRY_ASSIGN_OR_RETURN(weights::Checkpoint ck, weights::read_checkpoint(checkpoint_path));
  weights::AuditReport r = weights::audit_checkpoint(ck, expected);
  r.notes.insert(r.notes.begin(), notes.begin(), notes.end());
  return r;
}

Result<ConvertResult> convert_weights_to_mindspore(const std::string& checkpoint_path, const std::string& names_path,
                                                   const std::string& output) {
  FERRY_ASSIGN_OR_RETURN(auto targets, weights::read_param_list(names_path));
  FERRY_ASSIGN_OR_RETURN(weights::Checkpoint ck, weights::read_checkpoint(checkpoint_path));
  FERRY_ASSIGN_OR_RETURN(weights::Conversion c, weights::convert_to_mindspore(ck, targets));
  c.audit.checkpoint = output;
  FERRY_RETURN_IF_ERROR(weights::write_mindspore_ckpt(output, c.tensors));
  return ConvertResult{std::move(c), output};
}

std::string conversion_to_text(const weights::Conversion& c, const std::string& output) {
  size_t same = 0, renamed = 0, positional = 0, left = 0, missing = 0;
  std::string lines;
  for (const auto& m : c.mapping) {
    if (m.target.empty()) ++left;
    else if (m.source.empty()) ++missing;
    else if (m.how.starts_with("same name")) ++same;
    else if (m.how.starts_with("by position")) ++positional;
    else ++renamed;
    if (!m.how.starts_with("same name"))
      lines += "  " + (m.source.empty() ? "-" : m.source) + " -> " + (m.target.empty() ? "-" : m.target) + ": " + m.how + "\n";
  }
  std::string s = "wrote " + output + ": " + std::to_string(c.tensors.size()) + " parameters (" + std::to_string(same) +
                  " same name, " + std::to_string(renamed) + " renamed, " + std::to_string(positional) +
                  " by position); " + std::to_string(left) + " checkpoint keys left out, " + std::to_string(missing) +
                  " parameters missing\n" + lines;
  return s + "audit of the result:\n" + weights::audit_to_text(c.audit);
}

nlohmann::json conversion_to_json(const weights::Conversion& c, const std::string& output) {
  nlohmann::json j = {{"schema", "ferry.weights-convert/1"}, {"output", output}, {"to", "mindspore"},
                      {"mapping", nlohmann::json::array()}, {"audit", weights::audit_to_json(c.audit)}};
  for (const auto& m : c.mapping) j["mapping"].push_back({{"source", m.source}, {"target", m.target}, {"how", m.how}});
  return j;
}

}  // namespace ferry::tools
