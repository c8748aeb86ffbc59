// `ferry compare ... --repro DIR`: the evidence for a vendor's bug tracker. For the first divergent
// row, the ONNX nodes its candidate node covers are cut out of the model file as they are (attributes,
// names, the initializers they read, Constant nodes feeding them), their other inputs become graph
// inputs fed with the golden's values, and the golden's output is stored beside them:
//   DIR/model.onnx   the subgraph, standalone
//   DIR/inputs.npz   its inputs (the golden's values: the fault shows without its upstream)
//   DIR/golden/      the golden output as .npy (`--golden DIR`'s naming rule)
//   DIR/README.md    the metrics seen, the one `ferry compare` command that reproduces them, ferry's
//                    version and the CPU
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/onnx_dtype.h"
#include "onnx/onnx_pb.h"
#include "tools/compare/compare_internal.h"
#include "tools/compare/repro.h"
#include "tools/doctor.h"
#include "tools/run_inputs.h"

#ifndef FERRY_VERSION
#define FERRY_VERSION "unknown"
#endif

namespace ferry::tools::compare {

namespace fs = std::filesystem;

namespace {

Result<onnx::ModelProto> read_proto(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::ModelProto mp;
  if (!f || !mp.ParseFromIstream(&f)) return Status::invalid(path + ": cannot read it back as ONNX for --repro");
  return mp;
}

// An initializer with its bytes inline: external data is read from beside the model (the location
// must stay inside the model's folder, as the importer requires).
Result<onnx::TensorProto> inline_initializer(const onnx::TensorProto& t, const fs::path& model_dir) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return t;
  std::string location;
  uint64_t offset = 0, length = 0;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = std::stoull(kv.value());
    if (kv.key() == "length") length = std::stoull(kv.value());
  }
  fs::path p = fs::weakly_canonical(model_dir / location);
  if (location.empty() || fs::path(location).is_absolute() ||
      p.string().rfind(fs::weakly_canonical(model_dir).string(), 0) != 0)
    return Status::invalid("initializer '" + t.name() + "': external data outside the model's folder");
  std::ifstream f(p, std::ios::binary);
  if (!f) return Status::io("cannot read external data '" + p.string() + "'");
  if (length == 0) {
    f.seekg(0, std::ios::end);
    length = static_cast<uint64_t>(f.tellg()) - offset;
  }
  std::string bytes(length, '\0');
  f.seekg(static_cast<std::streamoff>(offset));
  if (!f.read(bytes.data(), static_cast<std::streamsize>(length))) return Status::io("short external data in '" + p.string() + "'");
  onnx::TensorProto out = t;
  out.clear_external_data();
  out.set_data_location(onnx::TensorProto::DEFAULT);
  out.set_raw_data(std::move(bytes));
  return out;
}

Result<onnx::ValueInfoProto> value_info(const std::string& name, const Tensor& t) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  FERRY_ASSIGN_OR_RETURN(int code, onnx_code_of(t.dtype()));
  tt->set_elem_type(code);
  for (int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return vi;
}

// The cut: the nodes (by the ONNX tensors they write), and what feeds them from outside.
struct Cut {
  std::vector<const onnx::NodeProto*> nodes;  // in model order
  std::vector<std::string> inputs;            // fed with golden values
  std::vector<const onnx::TensorProto*> initializers;
};

Result<Cut> cut_nodes(const onnx::ModelProto& mp, const std::set<std::string>& outputs_of_covered) {
  Cut cut;
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : mp.graph().initializer()) inits[t.name()] = &t;
  std::map<std::string, const onnx::NodeProto*> constants;  // Constant nodes by output
  for (const auto& n : mp.graph().node())
    if (n.op_type() == "Constant" && n.output_size() == 1) constants[n.output(0)] = &n;
  std::set<std::string> produced, fed;
  for (const auto& n : mp.graph().node()) {
    bool covered = false;
    for (const auto& o : n.output()) covered |= outputs_of_covered.count(o) > 0;
    if (!covered) continue;
    cut.nodes.push_back(&n);
    for (const auto& o : n.output()) produced.insert(o);
  }
  if (cut.nodes.empty()) return Status::internal("the divergent node is not in the model file");
  std::vector<const onnx::NodeProto*> feeding_constants;
  for (const auto* n : cut.nodes)
    for (const auto& in : n->input()) {
      if (in.empty() || produced.count(in) || !fed.insert(in).second) continue;
      if (auto it = inits.find(in); it != inits.end()) cut.initializers.push_back(it->second);
      else if (auto c = constants.find(in); c != constants.end()) feeding_constants.push_back(c->second);
      else cut.inputs.push_back(in);
    }
  cut.nodes.insert(cut.nodes.begin(), feeding_constants.begin(), feeding_constants.end());
  return cut;
}

}  // namespace

std::string session_flags_text(const runtime::SessionOptions& so, const std::string& keep_fp32_file) {
  std::string f = "--backend " + so.backend + " --opt-level " + std::to_string(so.opt_level);
  if (!so.target.empty()) f += " --target " + so.target;
  if (so.precision_given) f += " --precision " + passes::to_string(so.precision.mode);
  if (!keep_fp32_file.empty()) f += " --keep-fp32 " + keep_fp32_file;
  if (so.precision.keep_io_types) f += " --keep-io-types";
  return f;
}

namespace {

std::string candidate_flags(const runtime::SessionOptions& so, const std::string& dir, std::vector<std::string>& notes) {
  std::vector<std::string> keep = so.precision.keep_fp32;
  if (!so.precision.keep_fp32_file.empty()) {
    std::ifstream in(so.precision.keep_fp32_file);
    for (std::string line; std::getline(in, line);) keep.push_back(line);
  }
  if (!keep.empty()) {
    std::ofstream out(fs::path(dir) / "keep_fp32.txt");
    for (const auto& k : keep) out << k << "\n";
  }
  std::string f = session_flags_text(so, keep.empty() ? "" : "keep_fp32.txt");
  if (!so.precision.mixlist_path.empty()) notes.push_back("the run used --mixlist " + so.precision.mixlist_path + ": attach it too");
  return f;
}

std::string metrics_line(const Metrics& m) {
  return fmt::format("cosine {:.6f}, max abs error {:.4g}, max rel error {:.4g}, rel. euclidean {:.4g}", m.cosine,
                     m.max_abs, m.max_rel, m.rel_euclid);
}

}  // namespace

Result<ReproBundle> write_repro(const std::string& model, const ir::Graph& original, const Row& row,
                                const TensorMap& golden, const runtime::SessionOptions& candidate,
                                const std::string& dir) {
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "golden", ec);
  if (ec) return Status::io("--repro " + dir + ": cannot create it: " + ec.message());
  // The ONNX tensors the covered nodes write, from the original graph's nodes of those names.
  std::set<std::string> covered(row.provenance.begin(), row.provenance.end());
  if (covered.empty()) covered.insert(row.onnx_node);
  std::set<std::string> outputs;
  for (const auto& n : original.nodes)
    if (covered.count(n->name))
      for (const ir::Value* v : n->outputs)
        if (v) outputs.insert(v->name);
  FERRY_ASSIGN_OR_RETURN(onnx::ModelProto mp, read_proto(model));
  FERRY_ASSIGN_OR_RETURN(Cut cut, cut_nodes(mp, outputs));

  onnx::ModelProto sub;
  sub.set_ir_version(mp.ir_version());
  *sub.mutable_opset_import() = mp.opset_import();
  *sub.mutable_functions() = mp.functions();
  sub.set_producer_name("ferry compare --repro");
  auto* g = sub.mutable_graph();
  g->set_name("repro_" + row.onnx_node);
  for (const auto* n : cut.nodes) *g->add_node() = *n;
  const fs::path model_dir = fs::path(model).parent_path().empty() ? fs::path(".") : fs::path(model).parent_path();
  for (const auto* t : cut.initializers) {
    FERRY_ASSIGN_OR_RETURN(onnx::TensorProto inl, inline_initializer(*t, model_dir));
    *g->add_initializer() = std::move(inl);
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const std::string& in : cut.inputs) {
    auto it = golden.find(in);
    if (it == golden.end()) return Status::unsupported("--repro: the golden has no value for the subgraph's input '" + in + "'");
    FERRY_ASSIGN_OR_RETURN(onnx::ValueInfoProto vi, value_info(in, it->second));
    *g->add_input() = std::move(vi);
    feeds.emplace_back(in, it->second);
  }
  auto out = golden.find(row.tensor);
  if (out == golden.end()) return Status::unsupported("--repro: the golden has no value for '" + row.tensor + "'");
  FERRY_ASSIGN_OR_RETURN(onnx::ValueInfoProto ovi, value_info(row.tensor, out->second));
  *g->add_output() = std::move(ovi);

  ReproBundle b;
  b.dir = dir;
  b.model = (fs::path(dir) / "model.onnx").string();
  {
    std::ofstream f(b.model, std::ios::binary | std::ios::trunc);
    if (!f || !sub.SerializeToOstream(&f)) return Status::io("cannot write '" + b.model + "'");
  }
  FERRY_RETURN_IF_ERROR(write_npz((fs::path(dir) / "inputs.npz").string(), feeds));
  FERRY_RETURN_IF_ERROR(write_npy((fs::path(dir) / "golden" / (sanitize_name(row.tensor) + ".npy")).string(), out->second));
  b.command = "ferry compare model.onnx --inputs inputs.npz --golden golden " + candidate_flags(candidate, dir, b.notes);
  b.nodes = static_cast<int>(cut.nodes.size());

  std::string readme = "# ferry repro: " + row.onnx_node + " (" + row.op_type + ")\n\n";
  readme += "The first node of `" + fs::path(model).filename().string() + "` whose output diverged from the golden, cut out with ";
  readme += "its weights: " + std::to_string(cut.nodes.size()) + " ONNX node(s) (" + fmt::format("{}", fmt::join(row.provenance, ", ")) +
            "), run by ferry as `" + row.candidate_node + "` (" + row.candidate_op + ").\n\n";
  readme += "## Seen\n\n- tensor `" + row.tensor + "` " + (row.metrics ? metrics_line(*row.metrics) : "(no metrics)") + "\n";
  if (row.single_op) readme += "- the node alone on golden inputs: " + metrics_line(*row.single_op) + "\n";
  readme += "\n## Reproduce (in this folder)\n\n```\n" + b.command + "\n```\n\n";
  readme += "`inputs.npz` holds the golden's values of the node's inputs, `golden/` its golden output; the command ";
  readme += "compares ferry's run of `model.onnx` with them and exits 3 while the fault is there.\n\n";
  readme += "## Where\n\n- ferry " + std::string(FERRY_VERSION) + "\n- CPU: " + cpu_model_name() + "\n";
  for (const std::string& n : b.notes) readme += "- note: " + n + "\n";
  std::ofstream(fs::path(dir) / "README.md") << readme;
  return b;
}

}  // namespace ferry::tools::compare
