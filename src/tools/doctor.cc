#include "tools/doctor.h"

#include <omp.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <dnnl.hpp>
#include <fmt/format.h>

#include "backends/backend.h"
#include "backends/cpu/isa_probe.h"
#include "backends/cpu/vec_math.h"
#include "tools/bench.h"

namespace ferry::tools {

int DoctorReport::problems() const {
  int n = 0;
  for (const auto& f : findings) n += !f.ok;
  return n;
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The first "key : value" line of /proc/cpuinfo with this key.
std::string cpuinfo_field(const std::string& info, const std::string& key) {
  std::istringstream in(info);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "";
}

// Runs a command, returns its stdout (empty when it cannot run or fails).
std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  std::array<char, 512> buf;
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  if (::pclose(p) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

bool on_path(const std::string& exe) {
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "");
  std::string dir;
  while (std::getline(in, dir, ':'))
    if (!dir.empty() && ::access((dir + "/" + exe).c_str(), X_OK) == 0) return true;
  return false;
}

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other (" + std::to_string(static_cast<int>(isa)) + ")";
  }
}

}  // namespace

std::string cpu_model_name() {
  const std::string info = read_file("/proc/cpuinfo");
  return info.empty() ? "unknown (no /proc/cpuinfo)" : cpuinfo_field(info, "model name");
}

DoctorReport run_doctor(const backends::CpuOptions& cpu) {
  DoctorReport r;
  auto add = [&](std::string area, std::string name, std::string value, bool ok = true, std::string hint = "") {
    r.findings.push_back({std::move(area), std::move(name), std::move(value), ok, std::move(hint)});
  };

  // CPU and cores.
  const std::string info = read_file("/proc/cpuinfo");
  add("cpu", "model", cpu_model_name());
  cpu_set_t set;
  CPU_ZERO(&set);
  const int usable = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  add("cpu", "cores", fmt::format("{} usable by this process ({} online)", usable, sysconf(_SC_NPROCESSORS_ONLN)));
  const std::string quota = read_file("/sys/fs/cgroup/cpu.max");
  if (!quota.empty() && quota.rfind("max", 0) != 0) {
    double q = 0, period = 1;
    std::istringstream(quota) >> q >> period;
    const double cpus = period > 0 ? q / period : 0;
    add("cpu", "cgroup quota", fmt::format("{:.2f} CPUs", cpus), cpus + 0.01 >= usable,
        cpus + 0.01 >= usable ? "" : fmt::format("the container may use {:.2f} CPUs but {} cores are visible: pass --threads {} "
                                                 "so threads do not wait for each other", cpus, usable, std::max(1, static_cast<int>(cpus))));
  }

  // ISA features (the flags line of /proc/cpuinfo).
  std::set<std::string> flags;
  {
    std::istringstream in(cpuinfo_field(info, "flags"));
    std::string f;
    while (in >> f) flags.insert(f);
  }
  auto has = [&](const char* f) { return flags.count(f) != 0; };
  add("isa", "avx2", has("avx2") ? "yes" : "no", has("avx2"), has("avx2") ? "" : "without AVX2 the kernels run SSE code: expect several times slower");
  add("isa", "avx512f", has("avx512f") ? "yes" : "no", true, has("avx512f") ? "" : "no AVX-512: fp32 kernels run on AVX2");
  add("isa", "avx512_bf16", has("avx512_bf16") ? "yes" : "no", true,
      has("avx512_bf16") ? "" : "no native bf16: --precision bf16 runs as rounding emulation with fp32 arithmetic");
  add("isa", "vnni", has("avx512_vnni") ? "avx512_vnni" : (has("avx_vnni") ? "avx_vnni" : "no"));
  add("isa", "amx", has("amx_tile") ? std::string("yes") + (has("amx_bf16") ? " (bf16" : " (") + (has("amx_int8") ? ", int8)" : ")") : "no");
  add("isa", "f16c", has("f16c") ? "yes" : "no", true, has("f16c") ? "" : "fp16 rounding runs scalar (slower emulation)");

  // What the kernels dispatch to.
  const dnnl::version_t* v = dnnl::version();
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  const std::string isa_str = isa_name(isa);
  const bool bf16_isa = isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  // A cap set on purpose (ONEDNN_MAX_CPU_ISA, or its old name DNNL_MAX_CPU_ISA: scripts/test.sh proves the
  // AVX2 paths that way) is said, not reported as a problem.
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!cap) cap = std::getenv("DNNL_MAX_CPU_ISA");
  const bool mismatch = has("avx512_bf16") && !bf16_isa && !cap;
  add("kernels", "oneDNN",
      fmt::format("{}.{}.{}, dispatching to {}{}", v->major, v->minor, v->patch, isa_str,
                  cap ? std::string(" (capped: MAX_CPU_ISA=") + cap + ")" : ""),
      !mismatch, mismatch ? "the CPU has avx512_bf16 but oneDNN uses " + isa_str + ": a oneDNN older than the CPU?" : "");
  add("kernels", "vectorized kernels (Highway)", backends::cpu::vec_math_target());
  {
    // What the cpu backend takes by default on this machine (each row can be forced by a --cpu-* flag).
    const auto backend = backends::make_backend("cpu", {0, cpu});
    if (backend.ok())
      for (const std::string& line : (*backend)->kernel_choices()) {
        const size_t colon = line.find(": ");
        add("kernels", line.substr(0, colon), colon == std::string::npos ? "" : line.substr(colon + 2));
      }
    const int n = std::max(1, omp_get_max_threads());
    const double peak = backends::cpu::measure_fp32_peak_gflops(n);
    if (peak > 0)
      add("kernels", "fp32 FMA peak (measured)", fmt::format("{:.0f} GFLOP/s on {} thread(s)", peak, n));
  }

  // Threads.
  const int omp = omp_get_max_threads();
  const char* env = std::getenv("OMP_NUM_THREADS");
  add("threads", "OpenMP", fmt::format("{} thread(s){}", omp, env ? std::string(" (OMP_NUM_THREADS=") + env + ")" : ""),
      omp <= usable, omp <= usable ? "" : fmt::format("more OpenMP threads than usable cores ({}): kernels wait for each other; "
                                                     "set OMP_NUM_THREADS={} or pass --threads {}", usable, usable, usable));

  // Memory.
  const std::string mem = cpuinfo_field(read_file("/proc/meminfo"), "MemTotal");  // "24683584 kB"
  const double kib = std::atof(mem.c_str());
  add("memory", "total", kib > 0 ? fmt::format("{:.1f} GiB", kib / (1024.0 * 1024.0)) : "unknown");

  // GPU and CUDA.
  struct stat st;
  const bool gpu = ::stat("/dev/nvidia0", &st) == 0;
  std::string driver = read_file("/proc/driver/nvidia/version");
  if (auto nl = driver.find('\n'); nl != std::string::npos) driver.resize(nl);
  add("gpu", "NVIDIA GPU", gpu ? (driver.empty() ? "present" : driver) : "none", true,
      gpu ? "" : "no GPU here: ferry runs on the CPU (and emulates accelerator targets, e.g. --target ascend310p)");
  std::string nvcc = on_path("nvcc") ? run_command("nvcc --version | tail -n 1") : "";
  add("gpu", "CUDA toolkit", nvcc.empty() ? "not found" : nvcc, true,
      nvcc.empty() ? "" : (gpu ? "" : "the toolkit compiles CUDA code, but nothing can run it on this machine"));

  // Golden references in the venv.
  auto py = peer_python();
  if (!py.ok()) {
    add("python", "project venv", "missing", false, "run scripts/setup.sh (compare --golden onnxruntime and bench --peer need it)");
  } else {
    const std::string out = run_command("'" + *py + "' -I -c 'import onnxruntime, numpy, onnx; print(onnxruntime.__version__, "
                                        "numpy.__version__, onnx.__version__)'");
    std::istringstream in(out);
    std::string ort, np, ox;
    in >> ort >> np >> ox;
    add("python", "onnxruntime (golden reference)", ort.empty() ? "not importable" : ort + " in " + *py, !ort.empty(),
        ort.empty() ? "the venv cannot import onnxruntime/numpy/onnx: run scripts/setup.sh" : "");
    if (!ort.empty()) add("python", "numpy / onnx", np + " / " + ox);
  }
  return r;
}

std::string format_doctor(const DoctorReport& r) {
  std::string s = "ferry doctor: what this machine offers\n";
  std::string area;
  for (const auto& f : r.findings) {
    if (f.area != area) s += "\n" + (area = f.area) + ":\n";
    s += fmt::format("  {:<32} {}{}\n", f.name, f.value, f.ok ? "" : "   <- problem");
    if (!f.hint.empty()) s += fmt::format("  {:<32} hint: {}\n", "", f.hint);
  }
  s += r.problems() ? fmt::format("\n{} problem(s) found\n", r.problems()) : "\nno problems found\n";
  return s;
}

nlohmann::json doctor_to_json(const DoctorReport& r) {
  nlohmann::json j;
  j["schema"] = "ferry.doctor/1";
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : r.findings)
    a.push_back({{"area", f.area}, {"name", f.name}, {"value", f.value}, {"ok", f.ok}, {"hint", f.hint}});
  j["findings"] = a;
  j["problems"] = r.problems();
  return j;
}

}  // namespace ferry::tools
