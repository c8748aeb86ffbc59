#include "passes/precision.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "ops/op.h"
#include "ops/util/round_float.h"
#include "passes/pass_util.h"
#include "passes/precision_lists.h"

namespace ferry::passes {

bool is_low(PrecisionMode m) { return m != PrecisionMode::kFp32; }

Result<PrecisionMode> parse_precision(const std::string& s) {
  if (s == "fp32") return PrecisionMode::kFp32;
  if (s == "fp16") return PrecisionMode::kFp16;
  if (s == "bf16") return PrecisionMode::kBf16;
  if (s == "mixed-fp16") return PrecisionMode::kMixedFp16;
  if (s == "mixed-bf16") return PrecisionMode::kMixedBf16;
  return Status::invalid("unknown precision '" + s + "' (expected fp32, fp16, bf16, mixed-fp16 or mixed-bf16)");
}

std::string to_string(PrecisionMode m) {
  switch (m) {
    case PrecisionMode::kFp32: return "fp32";
    case PrecisionMode::kFp16: return "fp16";
    case PrecisionMode::kBf16: return "bf16";
    case PrecisionMode::kMixedFp16: return "mixed-fp16";
    case PrecisionMode::kMixedBf16: return "mixed-bf16";
  }
  return "?";
}

std::string describe(PrecisionMode m, const std::string& backend, bool native_bf16, const std::string& why) {
  switch (m) {
    case PrecisionMode::kFp32: return "fp32";
    case PrecisionMode::kFp16:
    case PrecisionMode::kMixedFp16:
      return to_string(m) + " (emulated: tensors rounded to fp16, arithmetic in fp32)";
    case PrecisionMode::kBf16:
    case PrecisionMode::kMixedBf16:
      if (native_bf16)
        return to_string(m) + " (tensors rounded to bf16; Conv/MatMul native bf16 on the " + backend + " backend: " + why + ")";
      return to_string(m) + " (EMULATED on the " + backend + " backend: tensors rounded to bf16, arithmetic in fp32" +
             (why.empty() ? "" : "; " + why) + ")";
  }
  return "?";
}

std::string atc_equivalent(PrecisionMode m) {
  switch (m) {
    case PrecisionMode::kFp32: return "must_keep_origin_dtype";
    case PrecisionMode::kFp16: return "force_fp16";
    case PrecisionMode::kBf16: return "allow_fp32_to_bf16";
    case PrecisionMode::kMixedFp16: return "allow_mix_precision";
    case PrecisionMode::kMixedBf16: return "allow_mix_precision_bf16";
  }
  return "?";
}

Result<std::vector<std::string>> read_keep_list(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::io("cannot read the keep-fp32 file '" + path + "'");
  std::vector<std::string> out;
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const auto b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b, e - b + 1);
    if (line.rfind("OpType::", 0) == 0 && line.size() == 8)
      return Status::invalid(path + ":" + std::to_string(n) + ": 'OpType::' needs an op type after it");
    if (line.find_first_of(" \t") != std::string::npos && line.rfind("OpType::", 0) == 0)
      return Status::invalid(path + ":" + std::to_string(n) + ": '" + line + "' is not one op type");
    out.push_back(line);
  }
  return out;
}

namespace {

bool is_float32(const ir::Value* v) { return v && v->kind == ir::ValueKind::kTensor && v->dtype == DType::kFloat32; }

bool has_float_output(const ir::Node& n) {
  for (const ir::Value* v : n.outputs)
    if (is_float32(v)) return true;
  return false;
}

// "OpType::Conv" matches Conv and the FusedConv that absorbed a Conv (Gemm: FusedMatMul;
// BatchNormalization: FusedBatchNorm).
bool type_matches(const std::string& want, const ir::Node& n) {
  if (n.op_type == want) return true;
  if (n.domain != "com.ferry") return false;
  return n.op_type == "Fused" + want || (want == "Gemm" && n.op_type == "FusedMatMul") ||
         (want == "BatchNormalization" && n.op_type == "FusedBatchNorm");
}

struct KeepMatcher {
  std::set<std::string> names, types;
  std::set<std::string> used;
  explicit KeepMatcher(const std::vector<std::string>& entries) {
    for (const std::string& e : entries) (e.rfind("OpType::", 0) == 0 ? types : names).insert(e);
  }
  bool matches(const ir::Node& n) {
    bool hit = false;
    for (const std::string& t : types)
      if (type_matches(t.substr(8), n)) used.insert(t), hit = true;
    auto check = [&](const std::string& name) {
      if (names.count(name)) used.insert(name), hit = true;
    };
    check(n.name);
    for (const std::string& p : n.provenance) check(p);
    return hit;
  }
};

// A new float32 value in g named after `base`, with v's shape.
ir::Value* new_value_like(ir::Graph& g, const ir::Value* v, const std::string& suffix) {
  ir::Value* r = g.add_value(g.fresh_name(v->name + suffix));
  r->onnx_name.clear();  // not an ONNX tensor: compare keys nothing on it
  r->dtype = DType::kFloat32;
  r->shape = v->shape;
  r->onnx_name.clear();  // internal: compare and dumps key on onnx_name (contract in the issue 4-6 guide)
  return r;
}

ir::Node* make_round(ir::Graph& g, ir::Value* in, ir::Value* out, int64_t to, const std::string& name) {
  ir::Node* r = g.add_node("RoundFloat", g.fresh_name(name));
  r->domain = "com.ferry";
  r->opset = 1;
  r->inputs = {in};
  r->outputs = {out};
  r->attrs["to"] = make_int(to);
  r->provenance = {};  // not an ONNX node: compare does not key anything on it
  out->producer = r;
  out->producer_output = 0;
  return r;
}

}  // namespace

Status apply_precision(ir::Model& model, const PrecisionOptions& opts, PrecisionReport* report) {
  PrecisionReport rep;
  rep.mode = opts.mode;
  const bool mixed = opts.mode == PrecisionMode::kMixedFp16 || opts.mode == PrecisionMode::kMixedBf16;
  if (!opts.mixlist_path.empty() && !mixed)
    return Status::invalid("--mixlist edits the mixed modes' lists; precision '" + to_string(opts.mode) +
                           "' has none (use mixed-fp16 or mixed-bf16)");
  std::vector<std::string> keep = opts.keep_fp32;
  if (!opts.keep_fp32_file.empty()) {
    FERRY_ASSIGN_OR_RETURN(std::vector<std::string> more, read_keep_list(opts.keep_fp32_file));
    keep.insert(keep.end(), more.begin(), more.end());
  }
  MixLists lists = default_mix_lists();
  if (!opts.mixlist_path.empty()) FERRY_RETURN_IF_ERROR(apply_mixlist_file(opts.mixlist_path, lists));
  if (!is_low(opts.mode)) {
    if (report) *report = rep;
    return Status();
  }
  const bool fp16 = opts.mode == PrecisionMode::kFp16 || opts.mode == PrecisionMode::kMixedFp16;
  const int64_t to = fp16 ? 10 : 16;
  const DType low_type = fp16 ? DType::kFloat16 : DType::kBFloat16;
  ir::Graph& g = *model.graph;
  // Which values are float32 is what the pass goes by: a graph straight from the parser (no optimizer
  // ran, e.g. opt-level 0) has no inferred types yet.
  FERRY_RETURN_IF_ERROR(ops::infer_graph(g));

  // 1. Which nodes compute in the low type, in topological order (follow-list ops look at producers).
  KeepMatcher keeper(keep);
  std::set<const ir::Node*> low;
  for (const auto& node : g.nodes) {
    const ir::Node& n = *node;
    if (!has_float_output(n) || !n.subgraphs().empty() || n.op_type == "RoundFloat") continue;
    if (keeper.matches(n)) {
      rep.kept.push_back(n.name);
      continue;
    }
    bool is_low_node = true;
    if (mixed) {
      if (lists.deny.count(n.op_type)) {
        is_low_node = false;
      } else if (!lists.allow.count(n.op_type)) {
        // Follow: low when every non-constant float input comes from a low node.
        bool any = false, all = true;
        for (const ir::Value* v : n.inputs) {
          if (!is_float32(v) || v->is_constant()) continue;
          any = true;
          all = all && v->producer && low.count(v->producer);
        }
        is_low_node = any && all;
      }
    }
    if (is_low_node) low.insert(&n);
  }
  for (const std::string& e : keep)
    if (!keeper.used.count(e)) rep.unmatched.push_back(e);

  // 2. Rewrite: round what low nodes read (constants once, here; other values by a RoundFloat node
  // shared by every low reader) and what they write (unless the op only moves values).
  std::set<const ir::Value*> graph_outputs(g.outputs.begin(), g.outputs.end());
  std::map<const ir::Value*, ir::Value*> rounded;
  std::vector<std::unique_ptr<ir::Node>> old = std::move(g.nodes);
  g.nodes.clear();
  for (auto& owned : old) {
    ir::Node* n = owned.get();
    if (!low.count(n)) {
      g.nodes.push_back(std::move(owned));
      continue;
    }
    ++rep.low_nodes;
    for (ir::Value*& v : n->inputs) {
      if (!is_float32(v)) continue;
      // Already holds low-type values: written by a low node (through the RoundFloat after it).
      if (v->producer && (low.count(v->producer) || v->producer->op_type == "RoundFloat")) continue;
      auto it = rounded.find(v);
      if (it == rounded.end()) {
        ir::Value* r;
        if (v->is_constant() && v->initializer.is_plain()) {
          Tensor t(DType::kFloat32, v->initializer.dims());
          ops::round_float_array(low_type, v->initializer.data<float>(), t.data<float>(), t.numel());
          r = add_constant(g, v->name + (fp16 ? "_fp16" : "_bf16"), std::move(t));
        } else {
          r = new_value_like(g, v, fp16 ? "_fp16" : "_bf16");
          make_round(g, v, r, to, "round_" + v->name);
          ++rep.rounding_nodes;
        }
        it = rounded.emplace(v, r).first;
      }
      v = it->second;
    }
    if (!fp16 && (n->op_type == "Conv" || n->op_type == "FusedConv" || n->op_type == "MatMul" ||
                  n->op_type == "Gemm" || n->op_type == "FusedMatMul" || n->op_type == "FusedAttention")) {
      n->attrs["ferry_precision"] = make_string("bfloat16");
      rep.native_bf16 = true;
    }
    g.nodes.push_back(std::move(owned));
    if (n->domain.empty() && value_preserving(n->op_type)) continue;
    for (size_t k = 0; k < n->outputs.size(); ++k) {
      ir::Value* y = n->outputs[k];
      if (!is_float32(y)) continue;
      if (opts.keep_io_types && graph_outputs.count(y)) continue;
      // The node now writes an internal value; the RoundFloat after it writes y, which keeps its name,
      // onnx_name and readers: the tensor the device stores is the rounded one.
      ir::Value* pre = new_value_like(g, y, "_unrounded");
      n->outputs[k] = pre;
      pre->producer = n;
      pre->producer_output = static_cast<int>(k);
      make_round(g, pre, y, to, "round_" + y->name);
      ++rep.rounding_nodes;
    }
  }
  for (const auto& node : g.nodes)
    if (has_float_output(*node) && !low.count(node.get()) && node->op_type != "RoundFloat") ++rep.fp32_nodes;
  prune_values(g);
  FERRY_RETURN_IF_ERROR(ops::infer_graph(g));
  if (report) *report = rep;
  return Status();
}

}  // namespace ferry::passes
