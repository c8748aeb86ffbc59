// Peers of `ferry bench`: bench/peers/<name>_peer.py run by the project venv's python in a child process.
//
// The protocol is a JSON job file (model, threads, warmup/measure policies, one .npz of inputs per batch,
// where to write the result) passed as the script's only argument. The script prints progress lines on
// stdout, which ferry forwards, and writes its result JSON to the file the job names; its stderr is kept
// so a failure's last line ends up in ferry's error. Exit code 3 means "the runtime's Python package is
// missing" and becomes the setup hint.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/text_file.h"
#include "tools/bench.h"

namespace ferry::tools {

namespace fs = std::filesystem;

namespace {

const char* kSetupHint =
    "the {} peer needs the project venv (.venv/bin/python with {}): run scripts/setup.sh";

std::string package_of(const std::string& peer) { return peer == "openvino" ? "openvino" : "onnxruntime"; }
std::string display_name(const std::string& peer) { return peer == "openvino" ? "OpenVINO" : "ONNX Runtime"; }

// The first folder above the running executable that holds bench/peers/ (a build tree sits inside the
// repository: <repo>/build/ferry).
Result<fs::path> repo_root() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::io("cannot find the ferry executable's folder (/proc/self/exe): " + ec.message());
  for (fs::path d = exe.parent_path(); !d.empty(); d = d.parent_path()) {
    if (fs::is_directory(d / "bench" / "peers", ec)) return d;
    if (d == d.parent_path()) break;
  }
  return Status::io("cannot find bench/peers/ in any folder above " + exe.string() +
                    " (the peers' scripts ship with the ferry repository)");
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string last_line(const std::string& text) {
  std::string line, last;
  std::istringstream in(text);
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

Result<BatchResult> parse_batch(const nlohmann::json& b) {
  BatchResult r;
  r.batch = b.at("batch").get<int64_t>();
  r.load_s = b.value("load_s", 0.0);
  r.first_run_ms = b.value("first_run_ms", 0.0);
  r.warmup_iterations = b.value("warmup_iterations", int64_t{0});
  r.warmup_s = b.value("warmup_s", 0.0);
  r.latencies_ms = b.at("latencies_ms").get<std::vector<double>>();
  if (r.latencies_ms.empty()) return Status::invalid("batch " + std::to_string(r.batch) + " has no latencies");
  for (double v : r.latencies_ms)
    if (!(v >= 0)) return Status::invalid("batch " + std::to_string(r.batch) + " has a negative or NaN latency");
  r.stats = compute_stats(r.latencies_ms, r.batch, b.value("total_s", 0.0));
  r.peak_rss_bytes = b.value("peak_rss_bytes", int64_t{0});
  r.peak_rss_scope = b.value("peak_rss_scope", std::string("process"));
  if (b.contains("input_shapes"))
    for (const auto& [k, v] : b.at("input_shapes").items()) r.input_shapes[k] = v.get<std::vector<int64_t>>();
  return r;
}

}  // namespace

Result<std::string> peer_script(const std::string& name) {
  if (name != "onnxruntime" && name != "openvino")
    return Status::invalid("unknown peer '" + name + "' (known: onnxruntime, openvino)");
  FERRY_ASSIGN_OR_RETURN(fs::path root, repo_root());
  fs::path script = root / "bench" / "peers" / (name + "_peer.py");
  std::error_code ec;
  if (!fs::is_regular_file(script, ec)) return Status::io("the " + name + " peer's script " + script.string() + " is missing");
  return script.string();
}

Result<std::string> peer_python() {
  if (const char* env = std::getenv("FERRY_PYTHON"); env && *env) {
    if (::access(env, X_OK) != 0)
      return Status::io(std::string("FERRY_PYTHON=") + env + " is not an executable file");
    return std::string(env);
  }
  auto root = repo_root();
  std::string py = root.ok() ? (*root / ".venv" / "bin" / "python").string() : std::string();
  if (py.empty() || ::access(py.c_str(), X_OK) != 0)
    return Status::io("the ONNX Runtime peer needs the project venv (.venv/bin/python with onnxruntime): run "
                      "scripts/setup.sh" +
                      (py.empty() ? std::string() : " (" + py + " is missing)"));
  return py;
}

Result<PeerResult> parse_peer_json(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::invalid("the peer's result is not a JSON object");
  try {
    PeerResult p;
    p.name = j.at("name").get<std::string>();
    p.version = j.value("version", std::string("?"));
    p.model = j.value("model", std::string());
    p.settings = j.value("settings", std::string());
    for (const auto& b : j.at("results")) {
      auto r = parse_batch(b);
      if (!r.ok()) return r.status().with_context("the peer's result");
      p.results.push_back(std::move(r).value());
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid(std::string("the peer's result is malformed: ") + e.what());
  }
}

Result<PeerResult> run_peer(const PeerJob& job, const std::function<void(const std::string&)>& progress) {
  FERRY_ASSIGN_OR_RETURN(std::string script, peer_script(job.name));
  FERRY_ASSIGN_OR_RETURN(std::string python, peer_python());
  if (job.batches.empty()) return Status::internal("peer job without inputs");
  fs::path dir = fs::path(job.batches.front().inputs).parent_path();
  std::string job_path = (dir / (job.name + "_job.json")).string();
  std::string result_path = (dir / (job.name + "_result.json")).string();
  std::string stderr_path = (dir / (job.name + "_stderr.txt")).string();

  nlohmann::json jj = {{"model", job.model},
                       {"threads", job.threads},
                       {"precision", job.precision},
                       {"warmup", policy_to_json(job.warmup)},
                       {"measure", policy_to_json(job.measure)},
                       {"result", result_path}};
  jj["batches"] = nlohmann::json::array();
  for (const PeerJob::Batch& b : job.batches)
    jj["batches"].push_back({{"batch", b.batch}, {"inputs", b.inputs}, {"outputs", b.outputs}});
  FERRY_RETURN_IF_ERROR(write_text_file(job_path, jj.dump(2) + "\n"));

  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0) return Status::io("cannot create a pipe for the peer");
  int err_fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (err_fd < 0) {
    ::close(pipe_fd[0]);
    ::close(pipe_fd[1]);
    return Status::io("cannot create " + stderr_path);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fd[0]);
    ::close(pipe_fd[1]);
    ::close(err_fd);
    return Status::io("cannot start the peer (fork failed)");
  }
  if (pid == 0) {
    ::dup2(pipe_fd[1], STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    ::close(pipe_fd[0]);
    ::close(pipe_fd[1]);
    // -u: unbuffered, so progress lines arrive as they are printed; -s -E: no user site-packages or
    // PYTHON* variables steering which onnxruntime is imported.
    const char* argv[] = {python.c_str(), "-u", "-s", "-E", script.c_str(), job_path.c_str(), nullptr};
    ::execv(python.c_str(), const_cast<char* const*>(argv));
    std::fprintf(stderr, "cannot execute %s\n", python.c_str());
    ::_exit(127);
  }
  ::close(pipe_fd[1]);
  ::close(err_fd);
  std::string buf;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(pipe_fd[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (progress && !line.empty()) progress(job.name + ": " + line);
    }
  }
  ::close(pipe_fd[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  std::string err_text = read_all(stderr_path);
  if (WIFSIGNALED(wstatus))
    return Status::io(fmt::format("the {} peer was killed by signal {}", job.name, WTERMSIG(wstatus)));
  int rc = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
  if (rc == 3) return Status::io(fmt::format(fmt::runtime(kSetupHint), display_name(job.name), package_of(job.name)) +
                                 " (" + last_line(err_text) + ")");
  if (rc != 0) {
    std::string why = last_line(err_text);
    return Status::io(fmt::format("the {} peer failed (exit {}){}", job.name, rc, why.empty() ? "" : ": " + why));
  }
  auto parsed = parse_peer_json(read_all(result_path));
  if (!parsed.ok()) return parsed.status().with_context("the " + job.name + " peer");
  return parsed;
}

}  // namespace ferry::tools
