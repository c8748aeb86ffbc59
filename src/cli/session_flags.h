// The flags every command that builds a Session shares: --backend, --opt-level, --threads, with the
// CLI's defaults (cpu backend, opt level 2, all cores), so run, inspect (and later tools) agree.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

#include "runtime/session.h"

namespace ferry::cli {

struct SessionFlags {
  std::string backend = "cpu";
  int opt_level = 2;
  int threads = 0;  // 0: all cores
};

inline void add_session_flags(CLI::App* cmd, SessionFlags& f) {
  cmd->add_option("--backend", f.backend,
                  "kernels to run on: 'cpu' (oneDNN and vectorized kernels; nodes it lacks run their reference "
                  "kernel) or 'reference' (the plain reference kernels, the correctness oracle); default cpu")
      ->check(CLI::IsMember({"cpu", "reference"}))
      ->type_name("NAME");
  cmd->add_option("--opt-level", f.opt_level,
                  "graph optimization before running: 0 none, 1 cleanup (dead code, identities, constant folding), "
                  "2 + fusions (default), 3 + layout")
      ->check(CLI::Range(0, 3))
      ->type_name("0..3");
  cmd->add_option("--threads", f.threads, "threads for the cpu backend's kernels (default: all cores)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
}

inline runtime::SessionOptions session_options(const SessionFlags& f) {
  runtime::SessionOptions so;
  so.backend = f.backend;
  so.opt_level = f.opt_level;
  so.threads = f.threads;
  return so;
}

}  // namespace ferry::cli
