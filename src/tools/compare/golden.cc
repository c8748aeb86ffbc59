// Where golden and candidate tensors come from: a capturing run of a ferry session, a folder of .npy
// files, or ONNX Runtime (through a script in the project venv).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/npy.h"
#include "tools/bench.h"
#include "ops/util/round_float.h"
#include "tools/compare/compare_internal.h"

namespace ferry::tools::compare {

namespace fs = std::filesystem;

Result<GoldenSpec> parse_golden(const std::string& arg) {
  GoldenSpec g;
  if (arg.empty() || arg == "reference") return g;
  if (arg == "onnxruntime" || arg == "ort") {
    g.kind = GoldenSpec::Kind::kOnnxRuntime;
    return g;
  }
  std::error_code ec;
  if (fs::is_directory(arg, ec)) {
    g.kind = GoldenSpec::Kind::kDir;
    g.path = arg;
    return g;
  }
  if (fs::is_regular_file(arg, ec)) {
    g.kind = GoldenSpec::Kind::kModel;
    g.path = arg;
    return g;
  }
  return Status::invalid("--golden '" + arg +
                         "' is neither 'reference', 'onnxruntime', a folder of .npy files nor a model file");
}

std::string describe(const GoldenSpec& g) {
  switch (g.kind) {
    case GoldenSpec::Kind::kReference: return "reference backend, opt level 0";
    case GoldenSpec::Kind::kOnnxRuntime: return "ONNX Runtime (CPU, graph optimizations off)";
    case GoldenSpec::Kind::kDir: return "tensors in " + g.path;
    case GoldenSpec::Kind::kModel: return g.path + " on the reference backend, opt level 0";
  }
  return "?";
}

std::pair<int64_t, int64_t> count_nonfinite(const Tensor& t) {
  int64_t nan = 0, inf = 0;
  auto scan = [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float v = static_cast<float>(p[i]);
      if (std::isnan(v)) ++nan;
      else if (std::isinf(v)) ++inf;
    }
  };
  switch (t.dtype()) {
    case DType::kFloat32: scan(float{}); break;
    case DType::kFloat64: scan(double{}); break;
    case DType::kFloat16: scan(float16{}); break;
    case DType::kBFloat16: scan(bfloat16{}); break;
    default: break;
  }
  return {nan, inf};
}

const ir::Node& described_node(const ir::Node& n) {
  const ir::Node* desc = &n;
  for (int hops = 0; desc && desc->provenance.empty() && hops < 8 && !desc->inputs.empty() && desc->inputs[0]; ++hops)
    desc = desc->inputs[0]->producer;
  return desc && !desc->provenance.empty() ? *desc : n;
}

std::string onnx_node_of(const ir::Node& n) {
  const ir::Node& d = described_node(n);
  return d.provenance.empty() ? d.name : d.provenance.back();
}

Result<CapturedRun> run_capturing(runtime::ModelSession& runner, const std::map<std::string, RtValue>& feeds, bool keep_tensors) {
  CapturedRun run;
  FERRY_ASSIGN_OR_RETURN(size_t which, runner.pick_session(feeds));
  const ir::Graph& g = runner.session(which).graph();
  for (const ir::Value* in : g.inputs) {
    if (in->is_constant()) continue;
    auto it = feeds.find(in->name);
    if (it == feeds.end() || !it->second.is_tensor()) continue;
    run.order.push_back({in->onnx_name.empty() ? in->name : in->onnx_name, "", "", {}, in});
    if (keep_tensors) run.tensors[run.order.back().onnx_name] = it->second.tensor;
  }
  runner.set_node_hook([&](const ir::Node& node, const std::vector<const RtValue*>&, const std::vector<RtValue>& outs) {
    for (size_t k = 0; k < outs.size() && k < node.outputs.size(); ++k) {
      const ir::Value* v = node.outputs[k];
      if (!v || v->onnx_name.empty() || !outs[k].is_tensor()) continue;
      const Tensor& t = outs[k].tensor;
      const ir::Node* desc = &described_node(node);
      std::string op = desc->domain.empty() ? desc->op_type : desc->domain + "." + desc->op_type;
      if (desc != &node) op += " (+" + (node.domain.empty() ? node.op_type : node.domain + "." + node.op_type) + ")";
      run.order.push_back({v->onnx_name, desc->name, op, desc->provenance, v});
      if (is_floating(t.dtype())) run.nonfinite[v->onnx_name] = count_nonfinite(t);
      if (keep_tensors) {
        Tensor kept = t.clone();
        // A RoundFloat to bf16 may hand its input on unrounded when its readers round themselves (the cpu
        // backend's readers_convert_to_bf16): the tensor the device stores is the rounded one. Rounding is
        // idempotent, so a rounded output stays as it is.
        if (node.domain == "com.ferry" && node.op_type == "RoundFloat" && node.attr_int("to", 0) == 16 &&
            kept.dtype() == DType::kFloat32) {
          if (!kept.is_plain())
            if (auto plain = kept.plain(); plain.ok()) kept = std::move(plain).value();
          if (kept.is_plain())
            ops::round_float_array(DType::kBFloat16, kept.data<float>(), kept.data<float>(), kept.numel());
        }
        run.tensors[v->onnx_name] = std::move(kept);
      }
    }
  });
  auto outs = runner.run(feeds);
  runner.set_node_hook(nullptr);
  if (!outs.ok()) return outs.status();
  run.outputs = std::move(outs).value();
  return run;
}

Result<TensorMap> load_dir(const std::string& dir, const std::vector<std::string>& names) {
  TensorMap out;
  std::error_code ec;
  for (const std::string& n : names) {
    if (out.count(n)) continue;
    fs::path p = fs::path(dir) / (sanitize_name(n) + ".npy");
    if (!fs::is_regular_file(p, ec)) continue;
    auto t = read_npy(p.string());
    if (!t.ok()) return t.status().with_context("while reading the tensor '" + n + "'");
    out.emplace(n, std::move(t).value());
  }
  return out;
}

namespace {

// The first folder above the running executable that holds the golden script (a build tree sits
// inside the repository: <repo>/build/ferry).
Result<std::string> golden_script() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::io("cannot find the ferry executable's folder (/proc/self/exe): " + ec.message());
  const fs::path rel = fs::path("src") / "tools" / "compare" / "onnxruntime_golden.py";
  for (fs::path d = exe.parent_path(); !d.empty(); d = d.parent_path()) {
    if (fs::is_regular_file(d / rel, ec)) return (d / rel).string();
    if (d == d.parent_path()) break;
  }
  return Status::io("cannot find " + rel.string() + " in any folder above " + exe.string() +
                    " (the ONNX Runtime golden's script ships with the ferry repository)");
}

std::string last_line(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

}  // namespace

Status run_onnxruntime_golden(const std::string& model, const std::string& inputs_npz, const std::string& out_dir) {
  FERRY_ASSIGN_OR_RETURN(std::string script, golden_script());
  FERRY_ASSIGN_OR_RETURN(std::string python, peer_python());
  const std::string err_path = (fs::path(out_dir).parent_path() / "onnxruntime_stderr.txt").string();
  int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (err_fd < 0) return Status::io("cannot create " + err_path);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(err_fd);
    return Status::io("cannot start the ONNX Runtime golden (fork failed)");
  }
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    // -s -E: no user site-packages or PYTHON* variables steering which onnxruntime is imported.
    const char* argv[] = {python.c_str(), "-s", "-E", script.c_str(), model.c_str(), inputs_npz.c_str(),
                          out_dir.c_str(), nullptr};
    ::execv(python.c_str(), const_cast<char* const*>(argv));
    std::fprintf(stderr, "cannot execute %s\n", python.c_str());
    ::_exit(127);
  }
  ::close(err_fd);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(wstatus)) return Status::io("the ONNX Runtime golden was killed by signal " + std::to_string(WTERMSIG(wstatus)));
  int rc = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
  std::string why = last_line(err_path);
  if (rc == 3) return Status::io("the ONNX Runtime golden needs the project venv (.venv/bin/python with onnxruntime): run scripts/setup.sh (" + why + ")");
  if (rc != 0)
    return Status::io("the ONNX Runtime golden failed (exit " + std::to_string(rc) + ")" + (why.empty() ? "" : ": " + why));
  return Status();
}

}  // namespace ferry::tools::compare
