// `ferry profile MODEL [session flags] [input flags] [--batch N] [--runs N] [--trace FILE.json]
// [--csv FILE] [--json FILE]`: per-node time, share, kernel, FLOPs and GFLOP/s, bytes, per op type;
// the Chrome trace opens in chrome://tracing and Perfetto.
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/input_flags.h"
#include "cli/session_flags.h"
#include "core/text_file.h"
#include "runtime/model_session.h"
#include "tools/profile.h"

namespace ferry::cli {

namespace {

struct ProfileArgs {
  std::string model, trace, csv, json;
  InputFlags input;
  SessionFlags session;
  int runs = 10, top = 25;
  double link_gbps = 16;
  int64_t batch = 0;
};

int run_profile_cmd(const ProfileArgs& a) {
  auto inputs = input_options(a.input);
  if (!inputs.ok()) return report_error(inputs.status());
  tools::ProfileOptions o;
  o.model = a.model;
  o.session = session_options(a.session);
  o.inputs = *inputs;
  o.runs = a.runs;
  o.link_gb_per_s = a.link_gbps;
  o.progress = progress;
  if (a.batch > 0) {
    // --batch N: dim 0 of every input with a dynamic batch; other dynamic dims still need --shape.
    frontend::ImportOptions import;
    import.allow_newer_opset = o.session.allow_newer_opset;
    auto m = runtime::open_model(a.model, import);
    if (!m.ok()) return report_error(m.status());
    for (const ir::Value* v : (*m)->graph->inputs) {
      if (v->is_constant() || !v->shape || v->shape->empty() || o.inputs.shapes.count(v->name) || o.inputs.files.count(v->name))
        continue;
      std::vector<int64_t> d{a.batch};
      bool known = true;
      for (size_t i = 1; i < v->shape->size(); ++i) {
        known = known && (*v->shape)[i].is_static();
        d.push_back((*v->shape)[i].value);
      }
      if (known) o.inputs.shapes[v->name] = d;
    }
  }
  // Shapes given for inputs are fixed at load, as `ferry run --shape` does: shape subgraphs fold and the
  // fusions that need static shapes apply, so the profile is of the graph that really runs.
  for (const auto& [name, dims] : o.inputs.shapes) o.session.input_shapes.emplace(name, dims);
  for (const std::string& p : {a.trace, a.csv, a.json})
    if (!p.empty() && !std::ofstream(p, std::ios::app))
      return report_error(Status::io("cannot write '" + p + "'"));
  auto r = tools::run_profile(o);
  if (!r.ok()) return report_error(r.status());
  std::fputs(tools::format_profile(*r, static_cast<size_t>(a.top)).c_str(), stdout);
  if (!a.trace.empty()) {
    Status st = write_text_file(a.trace, tools::profile_to_trace(*r).dump() + "\n");
    if (!st.ok()) return report_error(st);
    std::printf("wrote %s (open it in https://ui.perfetto.dev or chrome://tracing)\n", a.trace.c_str());
  }
  if (!a.csv.empty()) {
    Status st = write_text_file(a.csv, tools::profile_to_csv(*r));
    if (!st.ok()) return report_error(st);
  }
  if (!a.json.empty()) {
    Status st = write_text_file(a.json, tools::profile_to_json(*r).dump(2) + "\n");
    if (!st.ok()) return report_error(st);
  }
  return 0;
}

}  // namespace

CommandFn add_profile_command(CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "Per-node time (fused kernels with the ONNX nodes they cover), kernels, FLOPs and GFLOP/s, bytes, a "
                 "summary per op type, memory; optionally a Chrome trace");
  cmd->add_option("MODEL", a->model, "the .onnx model or a compiled .ferry file")->required();
  cmd->add_option("--runs", a->runs, "measured runs (default 10, after 2 warmup runs)")->check(at_least_one());
  cmd->add_option("--batch", a->batch, "batch size for inputs with a dynamic dim 0")->check(at_least_one());
  cmd->add_option("--top", a->top, "nodes listed in the text report (default 25)")->check(at_least_one());
  cmd->add_option("--link-gbps", a->link_gbps,
                  "with an emulated --target: the host<->device bandwidth (GB/s) that estimates the transfer time "
                  "(default 16, PCIe 4.0 x16 effective)")
      ->check(CLI::Range(0.001, 100000.0));
  cmd->add_option("--trace", a->trace, "write a Chrome trace (JSON) of every node of every run")->type_name("FILE.json");
  cmd->add_option("--csv", a->csv, "write one CSV row per node")->type_name("FILE");
  cmd->add_option("--json", a->json, "write the report as JSON (schema ferry.profile/1)")->type_name("FILE");
  add_input_flags(cmd, a->input);
  add_session_flags(cmd, a->session);
  return [a] { return run_profile_cmd(*a); };
}

}  // namespace ferry::cli
