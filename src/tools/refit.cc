#include "tools/refit.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "core/onnx_dtype.h"
#include "core/shape.h"
#include "onnx/onnx_pb.h"
#include "tools/weights.h"
#include "weights/checkpoint.h"

namespace ferry::tools {

namespace {

constexpr double kDefaultEps = 1e-5;  // torch's BatchNorm default, for maps that predate "eps"

Result<onnx::ModelProto> read_onnx(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return Status::io("cannot open model '" + path + "'");
  std::ifstream f(path, std::ios::binary);
  onnx::ModelProto mp;
  if (!f || !mp.ParseFromIstream(&f)) return Status::invalid(path + ": not a valid ONNX model (the protobuf does not parse)");
  for (const auto& init : mp.graph().initializer())
    if (init.data_location() == onnx::TensorProto::EXTERNAL)
      return Status::unsupported(path + ": initializer '" + init.name() +
                                 "' is stored as external data, which refit does not rewrite yet");
  return mp;
}

Result<nlohmann::json> module_map(const onnx::ModelProto& mp, const std::string& path) {
  for (const auto& p : mp.metadata_props()) {
    if (p.key() != kModuleMapKey) continue;
    nlohmann::json j = nlohmann::json::parse(p.value(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return Status::invalid(path + ": its module map is not JSON");
    return j;
  }
  return Status::invalid(path + ": has no module map, so ferry cannot tell which state_dict key each weight holds; "
                                "export the model with ferry.torch.export");
}

// The audit's findings that would leave a wrong model behind.
Status check_audit(const weights::AuditReport& a) {
  std::string bad;
  for (const auto& f : a.findings) {
    if (f.kind == weights::FindingKind::kUnexpected || f.kind == weights::FindingKind::kDtype ||
        (f.kind == weights::FindingKind::kBnStats && !f.absent))  // statistics at defaults: refolded as they are
      continue;
    if (f.kind == weights::FindingKind::kMissing && f.key.ends_with(".num_batches_tracked")) continue;
    bad += "\n  " + std::string(weights::finding_kind_name(f.kind)) + "  " + f.key + ": " + f.detail;
  }
  if (bad.empty()) return Status();
  return Status::invalid(a.checkpoint + ": does not fit the model (ferry weights audit shows the same):" + bad);
}

Tensor transposed_2d(const Tensor& t) {
  Tensor out(t.dtype(), {t.dim(1), t.dim(0)});
  const size_t es = dtype_size(t.dtype());
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t i = 0; i < t.dim(0); ++i)
    for (int64_t j = 0; j < t.dim(1); ++j) std::copy_n(src + (i * t.dim(1) + j) * es, es, dst + (j * t.dim(0) + i) * es);
  return out;
}

class Refitter {
 public:
  Refitter(onnx::ModelProto& mp, const nlohmann::json& map, const weights::Checkpoint& ck, RefitReport& r,
           const std::string& prefix)
      : mp_(mp), map_(map), r_(r) {
    for (const auto& t : ck.tensors) by_key_[t.key.substr(prefix.size())] = &t.value;
    for (auto& init : *mp_.mutable_graph()->mutable_initializer()) inits_[init.name()] = &init;
  }

  Status run() {
    for (auto it = map_["initializers"].begin(); it != map_["initializers"].end(); ++it) {
      auto init = inits_.find(it.key());
      if (init == inits_.end() || !it.value().contains("key")) continue;  // an Identity alias, not an initializer
      const std::string key = it.value()["key"].get<std::string>(), match = it.value().value("match", "");
      const std::string where = "initializer '" + it.key() + "' (" + key + ")";
      FERRY_RETURN_IF_ERROR(check_not_merged(it.value(), key).with_context(where));
      if (match == "folded") {
        FERRY_RETURN_IF_ERROR(refold(*init->second, key).with_context(where));
        ++r_.refolded;
        continue;
      }
      FERRY_ASSIGN_OR_RETURN(const Tensor* v, get(key));
      bool transpose = match == "transposed";
      FERRY_RETURN_IF_ERROR(set(*init->second, transpose ? transposed_2d(*v) : *v).with_context(where));
      ++(transpose ? r_.transposed : r_.replaced);
    }
    for (const auto& [name, init] : inits_) {
      bool is_float = init->data_type() == onnx::TensorProto::FLOAT || init->data_type() == onnx::TensorProto::FLOAT16 ||
                      init->data_type() == onnx::TensorProto::BFLOAT16 || init->data_type() == onnx::TensorProto::DOUBLE;
      int64_t numel = 1;
      for (int64_t d : init->dims()) numel *= d;
      if (is_float && numel >= 2 && !written_.count(name)) r_.untouched.push_back(name);
    }
    return Status();
  }

 private:
  Result<const Tensor*> get(const std::string& key) const {
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return Status::invalid("the checkpoint has no '" + key + "'");
    return it->second;
  }
  const Tensor* find(const std::string& key) const {
    auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : it->second;
  }

  // The exporter merges initializers with identical values (a deep-copied layer's weights, every
  // LayerNorm's ones): one initializer then stands for several keys, and refit can give it only one
  // value. Fine while the checkpoint's values agree; otherwise this export cannot hold the checkpoint.
  Status check_not_merged(const nlohmann::json& entry, const std::string& key) const {
    if (!entry.contains("also") || !entry["also"].is_array()) return Status();
    const Tensor* mine = find(key);
    for (const auto& other : entry["also"]) {
      const Tensor* t = other.is_string() ? find(other.get<std::string>()) : nullptr;
      if (mine && t && !mine->same_as(*t))
        return Status::invalid("the exporter merged it with '" + other.get<std::string>() +
                               "' (their values were identical when exported), but the checkpoint gives them different "
                               "values: export from weights that differ (the trained model, or each layer initialized "
                               "on its own) to refit this model");
    }
    return Status();
  }

  Status set(onnx::TensorProto& init, const Tensor& value) {
    std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
    if (dims != value.dims())
      return Status::invalid("the model holds " + dims_to_string(dims) + ", the checkpoint " + dims_to_string(value.dims()));
    FERRY_ASSIGN_OR_RETURN(DType dt, dtype_from_onnx(init.data_type()));
    Tensor v = value.dtype() == dt ? value : value.cast(dt);
    FERRY_ASSIGN_OR_RETURN(Tensor plain, v.plain());
    init.clear_float_data();
    init.clear_int32_data();
    init.clear_int64_data();
    init.clear_double_data();
    init.clear_uint64_data();
    init.set_raw_data(std::string(static_cast<const char*>(plain.raw()), plain.nbytes()));
    written_.insert(init.name());
    return Status();
  }

  double eps_of(const std::string& bn) {
    const auto& state = map_.value("state", nlohmann::json::object());
    auto it = state.find(bn + ".running_var");
    if (it != state.end() && it->contains("eps") && (*it)["eps"].is_number()) return (*it)["eps"].get<double>();
    r_.notes.push_back(bn + ": the module map has no eps; refolded with torch's default 1e-5");
    return kDefaultEps;
  }

  // The exporter computed W * gamma / sqrt(var + eps) per output channel and (b - mean) * scale + beta
  // as the bias; the same from the checkpoint's conv and BatchNorm tensors.
  Status refold(onnx::TensorProto& init, const std::string& weight_key) {
    const std::string conv = weights::module_of(weight_key);
    const auto& absorbed = map_.value("absorbed", nlohmann::json::object());
    if (!absorbed.contains(conv) || !absorbed[conv].is_string())
      return Status::invalid("the exporter changed its values, but the module map names no BatchNorm folded into '" + conv + "'");
    const std::string bn = absorbed[conv].get<std::string>();
    FERRY_ASSIGN_OR_RETURN(const Tensor* w, get(weight_key));
    FERRY_ASSIGN_OR_RETURN(const Tensor* mean, get(bn + ".running_mean"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* var, get(bn + ".running_var"));
    const Tensor *gamma = find(bn + ".weight"), *beta = find(bn + ".bias"), *b0 = find(conv + ".bias");
    const int64_t c = w->rank() > 0 ? w->dim(0) : 0;
    for (const Tensor* t : {mean, var, gamma, beta, b0})
      if (t && t->numel() != c)
        return Status::invalid("BatchNorm '" + bn + "' has " + std::to_string(t->numel()) + " channels, the conv " + std::to_string(c));
    const double eps = eps_of(bn);
    Tensor wf = w->cast(DType::kFloat32), bias(DType::kFloat32, {c});
    const int64_t per = c ? wf.numel() / c : 0;
    for (int64_t o = 0; o < c; ++o) {
      double s = (gamma ? gamma->as_double(o) : 1.0) / std::sqrt(var->as_double(o) + eps);
      for (int64_t i = 0; i < per; ++i) wf.data<float>()[o * per + i] = static_cast<float>(wf.data<float>()[o * per + i] * s);
      bias.data<float>()[o] = static_cast<float>(((b0 ? b0->as_double(o) : 0.0) - mean->as_double(o)) * s +
                                                 (beta ? beta->as_double(o) : 0.0));
    }
    FERRY_RETURN_IF_ERROR(set(init, wf));
    return set_bias(init, bias);
  }

  // The folded bias: the Conv's third input, added when the exporter dropped a zero bias.
  Status set_bias(const onnx::TensorProto& weight, const Tensor& bias) {
    for (auto& node : *mp_.mutable_graph()->mutable_node()) {
      if (node.input_size() < 2 || node.input(1) != weight.name()) continue;
      if (node.op_type() != "Conv")
        return Status::unsupported("folded into a " + node.op_type() + " node ('" + node.name() + "'); refit refolds Conv only");
      if (node.input_size() >= 3 && !node.input(2).empty()) {
        auto it = inits_.find(node.input(2));
        if (it == inits_.end()) return Status::invalid("Conv '" + node.name() + "' has a bias that is not an initializer");
        return set(*it->second, bias);
      }
      std::string name = weight.name() + "_bias";
      while (inits_.count(name)) name += "_";
      auto* b = mp_.mutable_graph()->add_initializer();
      b->set_name(name);
      b->set_data_type(weight.data_type());
      b->add_dims(bias.numel());
      inits_[name] = b;
      if (node.input_size() == 2) node.add_input(name);
      else node.set_input(2, name);
      return set(*b, bias);
    }
    return Status::invalid("no Conv reads it");
  }

  onnx::ModelProto& mp_;
  const nlohmann::json& map_;
  RefitReport& r_;
  std::map<std::string, const Tensor*> by_key_;
  std::map<std::string, onnx::TensorProto*> inits_;
  std::set<std::string> written_;
};

Status write_onnx(const onnx::ModelProto& mp, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !mp.SerializeToOstream(&f)) return Status::io("cannot write '" + path + "'");
  f.close();
  return f ? Status() : Status::io("cannot write '" + path + "'");
}

}  // namespace

Result<RefitReport> refit_model(const RefitRequest& req) {
  if (!req.output.ends_with(".onnx") && !req.output.ends_with(".ferry"))
    return Status::invalid("-o " + req.output + ": the output must be an .onnx or a .ferry file");
  FERRY_ASSIGN_OR_RETURN(onnx::ModelProto mp, read_onnx(req.model));
  FERRY_ASSIGN_OR_RETURN(nlohmann::json map, module_map(mp, req.model));
  if (!map.contains("initializers") || !map["initializers"].is_object())
    return Status::invalid(req.model + ": its module map lists no initializers");
  FERRY_ASSIGN_OR_RETURN(auto expected, expected_params_from_map(map, req.model));
  FERRY_ASSIGN_OR_RETURN(weights::Checkpoint ck, weights::read_checkpoint(req.checkpoint));
  RefitReport r;
  r.output = req.output;
  r.audit = weights::audit_checkpoint(ck, expected);
  FERRY_RETURN_IF_ERROR(check_audit(r.audit));
  std::vector<std::string> ck_keys, model_keys;
  for (const auto& t : ck.tensors) ck_keys.push_back(t.key);
  for (const auto& p : expected) model_keys.push_back(p.key);
  Refitter refitter(mp, map, ck, r, weights::wrapper_prefix(ck_keys, model_keys));
  FERRY_RETURN_IF_ERROR(refitter.run().with_context(req.model));
  if (req.output.ends_with(".onnx")) {
    FERRY_RETURN_IF_ERROR(write_onnx(mp, req.output));
    return r;
  }
  // .ferry: the refitted ONNX beside the output, compiled, removed.
  const std::string tmp = req.output + ".refit.onnx";
  FERRY_RETURN_IF_ERROR(write_onnx(mp, tmp));
  CompileRequest c = req.compile;
  c.model_path = tmp;
  c.output_path = req.output;
  auto compiled = compile_model(c);
  std::remove(tmp.c_str());
  if (!compiled.ok()) return compiled.status();
  return r;
}

std::string refit_to_text(const RefitReport& r) {
  std::string s = "wrote " + r.output + ": " + std::to_string(r.replaced) + " weights replaced, " +
                  std::to_string(r.transposed) + " transposed, " + std::to_string(r.refolded) +
                  " refolded with their BatchNorm\n";
  for (const std::string& n : r.notes) s += "note: " + n + "\n";
  for (const auto& f : r.audit.findings) s += "note: " + std::string(weights::finding_kind_name(f.kind)) + "  " + f.key + ": " + f.detail + "\n";
  if (!r.untouched.empty()) {
    s += "note: " + std::to_string(r.untouched.size()) +
         " float initializers are tied to no state_dict key (the exporter's own constants) and keep their values:";
    for (size_t i = 0; i < r.untouched.size() && i < 8; ++i) s += " " + r.untouched[i];
    s += r.untouched.size() > 8 ? " ...\n" : "\n";
  }
  return s;
}

nlohmann::json refit_to_json(const RefitReport& r) {
  return {{"schema", "ferry.refit/1"}, {"output", r.output},     {"replaced", r.replaced},
          {"transposed", r.transposed}, {"refolded", r.refolded}, {"untouched", r.untouched},
          {"notes", r.notes},           {"audit", weights::audit_to_json(r.audit)}};
}

}  // namespace ferry::tools
