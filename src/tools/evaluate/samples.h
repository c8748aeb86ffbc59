// The samples `ferry evaluate` walks: a folder (scanned recursively, in sorted order) of images
// (.jpg/.jpeg/.png) and tensors (.npy: the model's one input; .npz: inputs by member name), or a manifest
// file listing such files one per line (optionally with a label after the path). Paths in a manifest are
// relative to its folder and may not leave it; links that lead outside are refused too. A sample's id is
// its path relative to the data root, the same on every machine, so shards and Ray workers agree on it.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "runtime/session.h"
#include "tools/evaluate/preprocess.h"

namespace ferry::tools::evaluate {

enum class SampleKind { kImage, kNpy, kNpz };

struct SampleRef {
  std::string id;    // path relative to the data root ("cat/001.jpg")
  std::string path;  // the file to open
  SampleKind kind = SampleKind::kNpy;
  std::optional<int64_t> label;
};

struct DataSet {
  std::string root;  // the folder ids are relative to
  std::vector<SampleRef> samples;
  std::vector<std::string> classes;  // --labels folders: class index -> folder name
};

// SRC: a folder or a manifest (.txt/.lst). `labels`: "" (none), "folders" (ImageFolder's rule: the label is
// the index of the sample's first folder among the sorted first-level folders), or a file of "ID LABEL"
// lines ('#' comments; ID as above). Errors name the file and line; an empty data set is an error.
Result<DataSet> list_samples(const std::string& src, const std::string& labels = "");

// A sample of one file, its kind from the file name (errors for other extensions).
Result<SampleRef> sample_ref(const std::string& id, const std::string& path, std::optional<int64_t> label);

// "i/N" -> (i, N) with 0 <= i < N; errors name --shard.
Result<std::pair<int, int>> parse_shard(const std::string& text);

// The slice of a data set shard i of n evaluates: samples i, i + n, i + 2n, ... (interleaved, so every
// shard sees the same mix of classes and sizes).
std::vector<SampleRef> shard_of(const std::vector<SampleRef>& all, int index, int count);

// What the model wants for each input (name, dtype, dims with -1 for dynamic), from the session.
struct ModelInput {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> dims;
};
std::vector<ModelInput> model_inputs(const std::vector<runtime::InputInfo>& inputs);

// One sample's feeds, each with a leading batch dim of 1: .npy files feed the model's only input, .npz
// members feed inputs by name (every input must be there), images go through `pre` (required for images)
// into the model's only input. A tensor given without the batch dim gets it. Errors name the sample and
// the input, and say what the model declares.
// Feeds given by name (an .npz, a Python dict) checked against the model and given the batch dim of 1 where
// they lack it; every input must be there. `label` names the sample in errors.
Result<std::map<std::string, Tensor>> fit_feeds(const std::map<std::string, Tensor>& given,
                                                const std::vector<ModelInput>& inputs, const std::string& label);

Result<std::map<std::string, Tensor>> load_sample(const SampleRef& s, const std::vector<ModelInput>& inputs,
                                                  const PreprocessSpec* pre);

}  // namespace ferry::tools::evaluate
