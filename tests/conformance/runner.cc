// ONNX node conformance runner: runs every test of the ONNX package's node suite on one of ferry's
// backends (--backend, default reference; --opt-level, default 0) and compares with the expected outputs using the ONNX backend-test rule
// (|out - ref| <= atol + rtol * |ref|, NaN == NaN, same shape and dtype; bfloat16 gets rtol >= 2^-6).
// Each test runs in a forked child with a time limit, so a crash or a hang is a result, not the end.
// A checked-in manifest gives each test its expected status (pass, a known non-pass with a reason, or
// random: a random op matched against one numpy draw, where either outcome is fine but a crash is not);
// the summary counts passes, unexpected results (regressions and unexpected passes) and known non-passes.
// The same manifest serves every backend: a line "<backend>: <test> <status> [reason]" (e.g. "cpu: ...")
// overrides the plain line for that backend only.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/onnx/import.h"
#include "runtime/session.h"

namespace fs = std::filesystem;
using namespace ferry;

namespace {

struct Tol {
  double rtol = 1e-3, atol = 1e-7;
};

std::string compare_tensor(const Tensor& out, const Tensor& ref, Tol tol, const std::string& what) {
  if (out.dtype() != ref.dtype())
    return what + ": dtype " + std::string(dtype_name(out.dtype())) + ", expected " + std::string(dtype_name(ref.dtype()));
  if (out.dims() != ref.dims())
    return what + ": shape " + dims_to_string(out.dims()) + ", expected " + dims_to_string(ref.dims());
  double rtol = ref.dtype() == DType::kBFloat16 ? std::max(tol.rtol, 1.0 / 64) : tol.rtol;
  bool exact = !is_floating(ref.dtype());
  for (int64_t i = 0; i < ref.numel(); ++i) {
    if (exact) {
      if (out.as_int64(i) != ref.as_int64(i) || out.as_double(i) != ref.as_double(i)) {
        return what + ": element " + std::to_string(i) + " is " + std::to_string(out.as_double(i)) + ", expected " +
               std::to_string(ref.as_double(i));
      }
      continue;
    }
    double a = out.as_double(i), b = ref.as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(b) || std::isinf(a)) {
      if (a == b) continue;
    } else if (std::fabs(a - b) <= tol.atol + rtol * std::fabs(b)) {
      continue;
    }
    std::ostringstream o;
    o << what << ": element " << i << " is " << a << ", expected " << b;
    return o.str();
  }
  return "";
}

std::string compare_value(const RtValue& out, const RtValue& ref, Tol tol, const std::string& what) {
  if (ref.is_none()) return out.is_none() ? "" : what + ": expected an empty optional";
  if (ref.is_sequence()) {
    if (!out.is_sequence()) return what + ": expected a sequence";
    if (out.sequence.size() != ref.sequence.size())
      return what + ": sequence of " + std::to_string(out.sequence.size()) + ", expected " +
             std::to_string(ref.sequence.size());
    for (size_t j = 0; j < ref.sequence.size(); ++j) {
      std::string e = compare_tensor(out.sequence[j], ref.sequence[j], tol, what + "[" + std::to_string(j) + "]");
      if (!e.empty()) return e;
    }
    return "";
  }
  if (!out.is_tensor()) return what + ": expected a tensor";
  return compare_tensor(out.tensor, ref.tensor, tol, what);
}

std::vector<std::string> sorted_entries(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs one test; returns "" on pass, else the reason.
std::string run_test(const fs::path& dir, const runtime::SessionOptions& so) {
  Tol tol;
  if (std::ifstream tf(dir / "tolerance.txt"); tf) tf >> tol.rtol >> tol.atol;
  auto session = runtime::Session::load((dir / "model.onnx").string(), so);
  if (!session.ok()) return session.status().to_string();
  const ir::Graph& g = (*session)->graph();
  auto sets = sorted_entries(dir, "test_data_set_");
  if (sets.empty()) return "no test data sets";
  for (const auto& set : sets) {
    fs::path sd = dir / set;
    std::map<std::string, RtValue> feeds;
    for (size_t k = 0;; ++k) {
      fs::path p = sd / ("input_" + std::to_string(k) + ".pb");
      if (!fs::exists(p)) break;
      if (k >= g.inputs.size()) return "test data has more inputs than the model";
      auto v = frontend::read_value_pb(p.string(), g.inputs[k]->kind);
      if (!v.ok()) return v.status().to_string();
      feeds[g.inputs[k]->name] = std::move(v).value();
    }
    auto outs = (*session)->run(feeds);
    if (!outs.ok()) return outs.status().to_string();
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      fs::path p = sd / ("output_" + std::to_string(k) + ".pb");
      if (!fs::exists(p)) continue;
      auto ref = frontend::read_value_pb(p.string(), g.outputs[k]->kind);
      if (!ref.ok()) return ref.status().to_string();
      std::string e = compare_value((*outs)[k].second, *ref, tol, "output '" + g.outputs[k]->name + "'");
      if (!e.empty()) return set + ": " + e;
    }
  }
  return "";
}

// Forks, runs the test with a time limit, returns {passed, reason}.
std::pair<bool, std::string> run_isolated(const fs::path& dir, int timeout_s, const runtime::SessionOptions& so) {
  int fds[2];
  if (pipe(fds) != 0) return {false, "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(timeout_s));
    std::string r = run_test(dir, so);
    std::string msg = r.empty() ? "PASS" : "FAIL " + r;
    if (msg.size() > 4000) msg.resize(4000);
    ssize_t unused = write(fds[1], msg.data(), msg.size());
    (void)unused;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM) return {false, "timed out after " + std::to_string(timeout_s) + " s"};
    return {false, std::string("crashed with signal ") + strsignal(sig)};
  }
  if (msg == "PASS") return {true, ""};
  if (msg.rfind("FAIL ", 0) == 0) return {false, msg.substr(5)};
  return {false, "no result (exit status " + std::to_string(WEXITSTATUS(status)) + ")"};
}

struct ManifestEntry {
  std::string status;  // "pass" or "fail"
  std::string reason;
};

// Plain lines first, then this backend's "<backend>:" lines override them; other backends' are skipped.
std::map<std::string, ManifestEntry> read_manifest(const std::string& path, const std::string& backend) {
  std::map<std::string, ManifestEntry> m, overrides;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string name, status;
    is >> name;
    auto* into = &m;
    if (!name.empty() && name.back() == ':') {
      if (name != backend + ":") continue;
      into = &overrides;
      is >> name;
    }
    is >> status;
    std::string reason;
    std::getline(is, reason);
    size_t p = reason.find_first_not_of(" \t");
    reason = p == std::string::npos ? "" : reason.substr(p);
    (*into)[name] = {status, reason};
  }
  for (auto& [name, e] : overrides) m[name] = e;
  return m;
}

// One-line reason for the manifest: the error without per-run noise.
std::string short_reason(std::string r) {
  for (char& c : r)
    if (c == '\n' || c == '\t') c = ' ';
  if (r.size() > 300) r = r.substr(0, 297) + "...";
  return r;
}

int usage() {
  std::cerr << "usage: ferry_conformance --data DIR [--manifest FILE] [--filter REGEX] [--write-manifest FILE]\n"
               "                         [--timeout S] [--backend reference|cpu] [--opt-level 0..3] [--verbose]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, manifest_path, filter, write_path;
  int timeout_s = 60;
  bool verbose = false;
  runtime::SessionOptions so;  // reference backend, opt level 0 unless told otherwise
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--data") data = next();
    else if (a == "--manifest") manifest_path = next();
    else if (a == "--filter") filter = next();
    else if (a == "--write-manifest") write_path = next();
    else if (a == "--timeout") timeout_s = std::atoi(next().c_str());
    else if (a == "--backend") so.backend = next();
    else if (a == "--opt-level") so.opt_level = std::atoi(next().c_str());
    else if (a == "--verbose" || a == "-v") verbose = true;
    else return usage();
  }
  if (data.empty() || !fs::is_directory(data)) {
    std::cerr << "error: --data DIR must name the folder of ONNX node tests (see generate_node_tests.py)\n";
    return 2;
  }
  if (so.backend != "reference" && so.backend != "cpu") return usage();
  if (so.opt_level < 0 || so.opt_level > 3) return usage();
  auto manifest = manifest_path.empty() ? std::map<std::string, ManifestEntry>() : read_manifest(manifest_path, so.backend);
  std::vector<std::string> tests;
  std::regex re(filter.empty() ? ".*" : filter);
  for (const auto& e : fs::directory_iterator(data)) {
    std::string n = e.path().filename().string();
    if (e.is_directory() && fs::exists(e.path() / "model.onnx") && std::regex_search(n, re)) tests.push_back(n);
  }
  std::sort(tests.begin(), tests.end());
  int passed = 0, failed = 0, skipped = 0, actual_pass = 0;
  std::vector<std::pair<std::string, std::string>> results;  // name -> reason ("" = pass)
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < tests.size(); ++i) {
    const std::string& t = tests[i];
    auto [ok, reason] = run_isolated(fs::path(data) / t, timeout_s, so);
    results.emplace_back(t, ok ? "" : short_reason(reason));
    if (ok) actual_pass++;
    auto it = manifest.find(t);
    bool expect_pass = manifest_path.empty() || (it != manifest.end() && it->second.status == "pass");
    if (!manifest_path.empty() && it == manifest.end()) {
      failed++;
      std::cout << "UNLISTED " << t << (ok ? " (passes)" : ": " + short_reason(reason)) << "\n";
    } else if (!manifest_path.empty() && it->second.status == "random" &&
               (ok || (reason.rfind("crashed", 0) != 0 && reason.rfind("timed out", 0) != 0 &&
                       reason.rfind("no result", 0) != 0))) {
      // A random op's expected output is one numpy draw: a run matches it only by chance (about 1 in 2^10
      // for test_bernoulli), so neither a match nor a mismatch says anything. A crash or a hang still
      // fails (below, as a regression).
      skipped++;
      if (verbose) std::cout << "random " << t << (ok ? ": matched the draw by chance" : ": " + it->second.reason) << "\n";
    } else if (!manifest_path.empty() && it->second.status == "random") {
      failed++;
      std::cout << "REGRESSION " << t << ": " << short_reason(reason) << "\n";
    } else if (ok && expect_pass) {
      passed++;
      if (verbose) std::cout << "pass " << t << "\n";
    } else if (ok) {
      failed++;
      std::cout << "UNEXPECTED PASS " << t << " (manifest: " << it->second.reason << ")\n";
    } else if (expect_pass) {
      failed++;
      std::cout << (manifest_path.empty() ? "FAIL " : "REGRESSION ") << t << ": " << short_reason(reason) << "\n";
    } else {
      skipped++;
      if (verbose) std::cout << "known " << t << ": " << it->second.reason << "\n";
    }
    if ((i + 1) % 200 == 0)
      std::cerr << "conformance: " << (i + 1) << "/" << tests.size() << " tests run\n";
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!write_path.empty()) {
    std::ofstream f(write_path);
    f << "# ONNX node conformance manifest: <test> <pass|fail> [reason]. Regenerate with\n"
         "# ferry_conformance --data DIR --write-manifest FILE, then review every reason.\n";
    for (const auto& [t, r] : results) {
      auto it = manifest.find(t);
      // Keep a hand-written reason when the test still fails.
      std::string reason = (!r.empty() && it != manifest.end() && it->second.status == "fail" && !it->second.reason.empty())
                               ? it->second.reason
                               : r;
      if (it != manifest.end() && it->second.status == "random") {
        f << t << " random " << it->second.reason << "\n";
        continue;
      }
      f << t << (r.empty() ? " pass" : " fail " + reason) << "\n";
    }
  }
  std::cout << "conformance (" << so.backend << ", opt level " << so.opt_level << "): " << passed << " passed, " << failed << " failed, " << skipped << " skipped (total "
            << tests.size() << ", " << actual_pass << " pass = " << (tests.empty() ? 0 : 100.0 * actual_pass / tests.size())
            << "%, " << static_cast<int>(secs) << " s)\n";
  return failed ? 1 : 0;
}
