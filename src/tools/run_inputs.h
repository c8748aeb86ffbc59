// What `ferry run` feeds a model and what it writes back: input tensors from .npy/.npz files or made up
// (seeded, of the declared dtype and shape), `--shape NAME=DIMS` parsing, output summaries, and
// output files whose names cannot escape the output folder.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace ferry::tools {

enum class RandomDist { kUniform, kNormal };

struct InputOptions {
  // --input NAME=FILE.npy, by input name.
  std::map<std::string, std::string> files;
  // --inputs: a folder of <sanitized name>.npy files, or an .npz archive. When set, every input must be
  // found there or in `files` (a run that was told where its inputs are never silently invents one).
  std::string inputs_path;
  // --shape NAME=DIMS, by input name: the full concrete shape for inputs with dynamic dims.
  std::map<std::string, std::vector<int64_t>> shapes;
  uint64_t seed = 0;
  RandomDist dist = RandomDist::kUniform;
};

// One prepared input and where it came from ("random", or a file path), for the run report.
struct PreparedInput {
  std::string name;
  Tensor tensor;
  std::string source;
};

// "NAME=1,3,224,224" -> (NAME, dims). Splits at the last '=' (dims never contain one), so input names
// with '=' still work. "NAME=" is a scalar. Errors name the argument.
// "x=1,3,<height>,<width>": the --shape argument for an input, each dynamic dim given by `known` (>= 0)
// or named for the user to fill in (<symbol>, or <dN> when unnamed). Hints and inspect print it.
std::string shape_argument(const ir::Value& v, const std::vector<int64_t>& known = {});

// Adds the shape of every --input .npy file to opts.shapes (an input with a --shape keeps it; a file that
// disagrees is reported by prepare_inputs). Errors name the file.
Status add_file_shapes(InputOptions& opts);

Result<std::pair<std::string, std::vector<int64_t>>> parse_shape_arg(const std::string& arg,
                                                                    const std::string& flag = "--shape");
// "NAME=FILE" -> (NAME, FILE). Splits at the first '=' (paths are likelier to hold one than names).
Result<std::pair<std::string, std::string>> parse_input_arg(const std::string& arg);

// A file-name-safe version of a tensor name: every character outside A-Za-z0-9_.- becomes '_', and
// names that would be special path components ("", ".", "..") become underscores, so
// `<dir>/<sanitize_name(n)>.npy` always names a file directly inside <dir>.
std::string sanitize_name(const std::string& name);

// Builds the feeds for every graph input that is not an initializer: from files when given, else
// random (floats in [-1,1) or N(0,1), integers in [0,10), bools fair coins), each input from its own
// stream derived from the seed and its name, so feeding one input from a file leaves the others the
// same. Symbolic dims shared between inputs ("batch") take the size another input gave them.
// Errors: unknown names in `files`/`shapes`/the .npz, dynamic dims without --shape (the message says
// what to pass), shapes that contradict the model, absurd sizes, unreadable files.
Result<std::vector<PreparedInput>> prepare_inputs(const ir::Graph& graph, const InputOptions& opts);

// One random tensor (exposed for tests and later tools such as bench).
Result<Tensor> random_tensor(DType dtype, const std::vector<int64_t>& dims, uint64_t seed, RandomDist dist);

// "float32[1,1000] min -3.1 max 4.2 mean 0.0013 [0.12, -0.5, ...]" (NaN/Inf counted, not averaged).
std::string summarize_tensor(const Tensor& t, int max_values = 6);

// Writes each output as <dir>/<sanitized name>.npy (sequences as .npz with members 0, 1, ...; empty
// optionals are skipped), creating `dir`. Two names that sanitize alike get _2, _3... suffixes rather
// than overwrite each other; an existing symlink at a target path is refused, so nothing is written
// outside `dir`. Returns the paths written, in output order; `notes` gets remarks for the user
// (bfloat16 stored as float32, renamed collisions, skipped optionals).
Result<std::vector<std::string>> write_outputs(const std::string& dir,
                                               const std::vector<std::pair<std::string, RtValue>>& outputs,
                                               std::vector<std::string>* notes);

}  // namespace ferry::tools
