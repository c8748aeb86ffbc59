// The input flags every command that runs a model shares (run, compare, tune-precision, bench, profile,
// migrate): --input NAME=FILE.npy, --inputs DIR|FILE.npz, --shape NAME=DIMS, --seed N, --normal. They
// mean exactly what `ferry run` documents, so one set of inputs feeds every tool the same way.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "tools/run_inputs.h"

namespace ferry::cli {

struct InputFlags {
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string inputs_path;          // DIR or FILE.npz
  std::vector<std::string> shapes;  // NAME=DIMS
  uint64_t seed = 0;
  bool normal = false;
};

// `shape_help`: for commands where --shape means a little more (bench replaces dim 0 by each --batch).
inline void add_input_flags(CLI::App* cmd, InputFlags& f,
                            const char* shape_help = "concrete shape for an input with dynamic dims, e.g. x=1,3,224,224") {
  CLI::Option* one = cmd->add_option("--input", f.inputs, "feed input NAME from a .npy file (repeatable; not with --inputs)")
                         ->type_name("NAME=FILE.npy");
  CLI::Option* all = cmd->add_option("--inputs", f.inputs_path,
                                     "feed every input from DIR/<name>.npy (names sanitized as for outputs) or from an "
                                     ".npz archive (not with --input)")
                         ->type_name("DIR|FILE.npz");
  // Given both, one would silently win for the inputs they share: a usage error names the two instead.
  one->excludes(all);
  cmd->add_option("--shape", f.shapes, shape_help)->type_name("NAME=DIMS");
  cmd->add_option("--seed", f.seed, "seed for random inputs (default 0)");
  cmd->add_flag("--normal", f.normal, "random floats from N(0,1) instead of uniform [-1,1)");
}

// Parses the flags into what tools::prepare_inputs takes; errors name the flag and the argument.
inline Result<tools::InputOptions> input_options(const InputFlags& f) {
  tools::InputOptions opts;
  opts.seed = f.seed;
  opts.dist = f.normal ? tools::RandomDist::kNormal : tools::RandomDist::kUniform;
  opts.inputs_path = f.inputs_path;
  for (const std::string& s : f.inputs) {
    FERRY_ASSIGN_OR_RETURN(auto parsed, tools::parse_input_arg(s));
    if (!opts.files.emplace(parsed.first, parsed.second).second)
      return Status::invalid("--input " + parsed.first + " is given twice");
  }
  for (const std::string& s : f.shapes) {
    FERRY_ASSIGN_OR_RETURN(auto parsed, tools::parse_shape_arg(s));
    if (!opts.shapes.emplace(parsed.first, parsed.second).second)
      return Status::invalid("--shape " + parsed.first + " is given twice");
  }
  // A file fixes its input's shape as --shape would: the model is prepared for it (shape chains fold,
  // placement counts what runs), whichever command reads the file.
  FERRY_RETURN_IF_ERROR(tools::add_file_shapes(opts));
  return opts;
}

}  // namespace ferry::cli
