// `ferry doctor`: what this machine offers ferry, each finding with a hint when something is missing or
// does not match: the CPU and its cores (and the cgroup's CPU quota), the ISA features the kernels
// care about (AVX2, AVX-512, avx512_bf16, VNNI, AMX) next to the ISA oneDNN actually dispatches to and
// the Highway target of the vectorized kernels, OpenMP's threads, memory, CUDA and a GPU, and the
// project venv's ONNX Runtime (the golden reference for compare).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend_options.h"

namespace ferry::tools {

struct DoctorFinding {
  std::string area;   // "cpu", "isa", "kernels", "threads", "memory", "gpu", "python"
  std::string name;   // "avx512_bf16"
  std::string value;  // "yes", "12 cores", "1.32.0", ...
  bool ok = true;     // false: missing or mismatched (the hint says what to do)
  std::string hint;
};

struct DoctorReport {
  std::vector<DoctorFinding> findings;
  int problems() const;
};

// Reads /proc, the CPU, oneDNN, OpenMP and runs the venv python once (a few hundred ms).
// `cpu`: the kernel choices to report (what `auto` picks on this machine, or what a --cpu-* flag forces).
DoctorReport run_doctor(const backends::CpuOptions& cpu = {});
// This machine's CPU as /proc/cpuinfo names it ("Intel(R) Xeon(R) Processor"), for reports.
std::string cpu_model_name();
std::string format_doctor(const DoctorReport& r);
nlohmann::json doctor_to_json(const DoctorReport& r);

}  // namespace ferry::tools
