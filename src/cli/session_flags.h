// The flags every command that builds a Session shares: --backend, --opt-level, --threads, with the
// CLI's defaults (cpu backend, opt level 2, all cores), so run, inspect (and later tools) agree.
#pragma once
#include <algorithm>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/byte_size.h"
#include "runtime/session.h"

namespace ferry::cli {

struct SessionFlags {
  std::string backend = "cpu";
  int opt_level = 2;
  int threads = 0;  // 0: all cores
  std::string precision;  // "": fp32, or the --target's default
  std::string target;
  std::string keep_fp32_file;
  bool keep_io_types = false;
  std::string mixlist;
  // The cpu backend's kernel choices (backends/backend_options.h); "auto" lets it decide.
  std::string cpu_gemm = "auto", cpu_bf16 = "auto", cpu_winograd = "auto", cpu_blocked_1x1 = "auto",
              cpu_own_depthwise = "auto";
  bool allow_newer_opset = false;
  std::string max_memory;  // "": the machine's memory
};

// --allow-newer-opset (also used alone by `ferry compile`).
inline void add_opset_flag(CLI::App* cmd, SessionFlags& f) {
  cmd->add_flag("--allow-newer-opset", f.allow_newer_opset,
                "load a model whose ai.onnx opset is newer than ferry supports (its ops run as the newest version "
                "ferry knows; results may be wrong)");
}

// --cpu-gemm, --cpu-bf16, ...: which kernels the cpu backend takes where it has a choice (`ferry
// doctor` shows what `auto` picks on this machine and why).
inline void add_cpu_flags(CLI::App* cmd, SessionFlags& f) {
  const auto choice = CLI::IsMember({"auto", "on", "off"});
  cmd->add_option("--cpu-gemm", f.cpu_gemm,
                  "GEMM for fp32 Linear layers with constant weights: 'mkl' (Intel MKL packed sgemm), 'own' (ferry's "
                  "packed AVX2 GEMM), 'onednn', or 'auto' (default: own without AVX-512, MKL on Intel, else oneDNN)")
      ->check(CLI::IsMember({"auto", "mkl", "own", "onednn"}))
      ->type_name("KIND")
      ->group("CPU kernels");
  cmd->add_option("--cpu-bf16", f.cpu_bf16,
                  "native bf16 Conv/MatMul for bf16 nodes: auto (AMX, or avx512_bf16 measured at least as fast as fp32), "
                  "on, off (fp32 arithmetic on bf16-rounded values)")
      ->check(choice)->type_name("auto|on|off")->group("CPU kernels");
  cmd->add_option("--cpu-winograd", f.cpu_winograd, "oneDNN's Winograd 3x3 convolutions where measured faster (auto/on) or never (off)")
      ->check(choice)->type_name("auto|on|off")->group("CPU kernels");
  cmd->add_option("--cpu-blocked-1x1", f.cpu_blocked_1x1,
                  "1x1 convolutions on the nChw16c jit_1x1 kernel (AVX-512): auto (streaming CNNs), on (every one), off")
      ->check(choice)->type_name("auto|on|off")->group("CPU kernels");
  cmd->add_option("--cpu-own-depthwise", f.cpu_own_depthwise,
                  "ferry's channels-last depthwise convolution instead of oneDNN's: on, or off/auto (default: off)")
      ->check(choice)->type_name("auto|on|off")->group("CPU kernels");
}

inline backends::CpuOptions cpu_options(const SessionFlags& f) {
  backends::CpuOptions o;  // CLI11 checked every value
  o.gemm = backends::parse_gemm(f.cpu_gemm).value();
  o.bf16 = backends::parse_choice(f.cpu_bf16, "--cpu-bf16").value();
  o.winograd = backends::parse_choice(f.cpu_winograd, "--cpu-winograd").value();
  o.blocked_1x1 = backends::parse_choice(f.cpu_blocked_1x1, "--cpu-blocked-1x1").value();
  o.own_depthwise = backends::parse_choice(f.cpu_own_depthwise, "--cpu-own-depthwise").value();
  return o;
}

// The --precision help: every mode with its ATC equivalent (docs/precision.md has the details).
inline const char* kPrecisionHelp =
    "precision mode (ATC --precision_mode in brackets): 'fp32' (must_keep_origin_dtype; default), 'fp16' "
    "(force_fp16: every float op in fp16), 'bf16' (allow_fp32_to_bf16 / force_bf16), 'mixed-fp16' "
    "(allow_mix_precision: allow-list ops in fp16, deny-list ops in fp32, the rest follow their inputs), "
    "'mixed-bf16' (allow_mix_precision_bf16); default fp32, or the --target's default. fp16 is EMULATED on this CPU: tensors are rounded to fp16 "
    "(overflow to inf included) while the arithmetic is fp32; bf16 Conv/MatMul run natively in bf16 where "
    "that is faster than fp32 on this CPU (AMX, or avx512_bf16 at full rate; `ferry doctor` says which)";

// --precision, --keep-fp32, --keep-io-types, --mixlist (also used alone by `ferry compile`).
inline void add_precision_flags(CLI::App* cmd, SessionFlags& f) {
  cmd->add_option("--precision", f.precision, kPrecisionHelp)
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "mixed-fp16", "mixed-bf16"}))
      ->type_name("MODE");
  cmd->add_option("--keep-fp32", f.keep_fp32_file,
                  "keep these nodes in fp32 (ATC --keep_dtype): a file with one ONNX node name or OpType::X per "
                  "line, '#' comments; names match fused nodes through the ONNX nodes they cover")
      ->type_name("FILE");
  cmd->add_flag("--keep-io-types", f.keep_io_types,
                "the model's outputs stay fp32: nodes that write a graph output do not round it to fp16/bf16");
  cmd->add_option("--mixlist", f.mixlist,
                  "edit the mixed modes' op lists (ATC --modify_mixlist): JSON {\"allow\"|\"deny\"|\"follow\": "
                  "{\"to-add\": [...], \"to-remove\": [...]}}; ATC's white-list/black-list/gray-list names work too")
      ->type_name("FILE.json");
}

// What decides the prepared graph (runtime/prepare.h) and the kernels: --opt-level, precision flags,
// --target, --cpu-*. `compile` takes these; commands that run also take add_session_flags' rest.
inline void add_prepare_flags(CLI::App* cmd, SessionFlags& f) {
  cmd->add_option("--opt-level", f.opt_level,
                  "graph optimization: 0 none, 1 cleanup (dead code, identities, constant folding), "
                  "2 + fusions (default), 3 the same as 2 (no layout passes yet)")
      ->check(CLI::Range(0, 3))
      ->type_name("0..3");
  add_precision_flags(cmd, f);
  cmd->add_option("--target", f.target,
                  "prepare and run as on this target (built-in: cpu, reference, ascend310p, ascend910b; or a profile file, "
                  "docs/targets.md): nodes its device lacks stay fp32 on the host, and its default precision applies "
                  "unless --precision says otherwise. ascend* targets have no local device: they are EMULATED on "
                  "this CPU (the device's numerics, CPU timings)")
      ->type_name("NAME|FILE");
  add_cpu_flags(cmd, f);
  add_opset_flag(cmd, f);
}

inline void add_session_flags(CLI::App* cmd, SessionFlags& f) {
  cmd->add_option("--backend", f.backend,
                  "kernels to run on: 'cpu' (oneDNN and vectorized kernels; nodes it lacks run their reference "
                  "kernel) or 'reference' (the plain reference kernels, the correctness oracle); default cpu")
      ->check(CLI::IsMember({"cpu", "reference"}))
      ->type_name("NAME");
  cmd->add_option("--threads", f.threads, "threads for the cpu backend's kernels (default: all cores)")
      ->check(at_least_one())
      ->type_name("N");
  cmd->add_option("--max-memory", f.max_memory,
                  "memory budget: a model whose declared shapes or memory plan need more is refused at load, before "
                  "anything is allocated, and a tensor past it fails the run (default: the machine's memory)")
      ->check([](const std::string& v) {
        auto r = parse_byte_size(v);
        return r.ok() ? std::string() : r.status().message();
      })
      // One command per process: the budget also caps every tensor the command reads (input .npy/.npz
      // files, whose decompression stops there), not only what the session allocates.
      ->each([](const std::string& v) {
        if (auto r = parse_byte_size(v); r.ok()) set_max_tensor_bytes(std::min(max_tensor_bytes(), *r));
      })
      ->type_name("SIZE");
  add_prepare_flags(cmd, f);
}

inline runtime::SessionOptions session_options(const SessionFlags& f) {
  runtime::SessionOptions so;
  so.backend = f.backend;
  so.opt_level = f.opt_level;
  so.backend_options.threads = f.threads;
  so.backend_options.cpu = cpu_options(f);
  so.precision.mode = passes::parse_precision(f.precision.empty() ? "fp32" : f.precision).value();  // CLI11 checked it
  so.precision_given = !f.precision.empty();
  so.target = f.target;
  so.precision.keep_fp32_file = f.keep_fp32_file;
  so.precision.keep_io_types = f.keep_io_types;
  so.precision.mixlist_path = f.mixlist;
  so.allow_newer_opset = f.allow_newer_opset;
  if (!f.max_memory.empty()) so.max_memory = parse_byte_size(f.max_memory).value();  // checked by CLI11
  return so;
}

}  // namespace ferry::cli
