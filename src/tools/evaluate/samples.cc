#include "tools/evaluate/samples.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/npy.h"
#include "core/shape.h"

namespace ferry::tools::evaluate {

namespace fs = std::filesystem;

namespace {

std::optional<SampleKind> kind_of(const std::string& path) {
  if (is_image_path(path)) return SampleKind::kImage;
  auto ends = [&](const char* e) {
    std::string l = path;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return l.size() >= 4 && l.compare(l.size() - 4, 4, e) == 0;
  };
  if (ends(".npy")) return SampleKind::kNpy;
  if (ends(".npz")) return SampleKind::kNpz;
  return std::nullopt;
}

// `rel` must stay under `root` once links are resolved (a dataset is a folder the user gave; nothing in
// it may point ferry elsewhere).
Result<std::string> resolve_inside(const fs::path& root, const std::string& rel, const std::string& where) {
  fs::path p(rel);
  if (p.is_absolute() || rel.empty())
    return Status::invalid(where + ": '" + rel + "' must be a path relative to " + root.string());
  std::error_code ec;
  fs::path real_root = fs::canonical(root, ec);
  if (ec) return Status::io(root.string() + ": " + ec.message());
  fs::path real = fs::weakly_canonical(root / p, ec);
  if (ec) return Status::io(where + ": " + (root / p).string() + ": " + ec.message());
  auto r = real.lexically_relative(real_root);
  if (r.empty() || *r.begin() == "..")
    return Status::invalid(where + ": '" + rel + "' leads outside " + root.string() + " (refused)");
  return real.string();
}

Result<DataSet> scan_folder(const fs::path& root) {
  DataSet ds;
  ds.root = root.string();
  std::error_code ec;
  // Links are not followed while walking (a loop or a link to / cannot make the walk run away); a linked
  // file is taken only when it resolves inside the folder.
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) continue;
    std::string rel = fs::relative(it->path(), root, ec).generic_string();
    auto kind = kind_of(rel);
    if (!kind) continue;
    auto path = resolve_inside(root, rel, root.string());
    if (!path.ok()) return path.status();
    ds.samples.push_back({rel, *path, *kind, std::nullopt});
  }
  if (ec) return Status::io(root.string() + ": " + ec.message());
  std::sort(ds.samples.begin(), ds.samples.end(), [](const SampleRef& a, const SampleRef& b) { return a.id < b.id; });
  return ds;
}

Result<DataSet> read_manifest(const fs::path& file) {
  std::ifstream f(file);
  if (!f) return Status::io("cannot read " + file.string());
  DataSet ds;
  fs::path root = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  ds.root = root.string();
  std::string line;
  std::set<std::string> seen;
  for (int n = 1; std::getline(f, line); ++n) {
    const std::string where = file.string() + ":" + std::to_string(n);
    std::istringstream ls(line);
    std::string rel, label, extra;
    if (!(ls >> rel) || rel[0] == '#') continue;
    ls >> label >> extra;
    if (!extra.empty()) return Status::invalid(where + ": expected 'PATH [LABEL]'");
    auto kind = kind_of(rel);
    if (!kind) return Status::invalid(where + ": '" + rel + "' is not a .jpg/.jpeg/.png/.npy/.npz file");
    auto path = resolve_inside(root, rel, where);
    if (!path.ok()) return path.status();
    if (!seen.insert(rel).second) return Status::invalid(where + ": '" + rel + "' is listed twice");
    SampleRef s{fs::path(rel).lexically_normal().generic_string(), *path, *kind, std::nullopt};
    if (!label.empty()) {
      char* end = nullptr;
      long long v = std::strtoll(label.c_str(), &end, 10);
      if (*end != '\0' || v < 0) return Status::invalid(where + ": label '" + label + "' is not a class index (0, 1, ...)");
      s.label = v;
    }
    ds.samples.push_back(std::move(s));
  }
  return ds;
}

Status label_by_folders(DataSet& ds) {
  std::set<std::string> folders;
  for (auto& s : ds.samples) {
    auto slash = s.id.find('/');
    if (slash == std::string::npos)
      return Status::invalid("--labels folders: " + s.id + " is not inside a class folder of " + ds.root);
    folders.insert(s.id.substr(0, slash));
  }
  ds.classes.assign(folders.begin(), folders.end());
  for (auto& s : ds.samples)
    s.label = std::lower_bound(ds.classes.begin(), ds.classes.end(), s.id.substr(0, s.id.find('/'))) - ds.classes.begin();
  return Status();
}

Status label_from_file(DataSet& ds, const std::string& file) {
  std::ifstream f(file);
  if (!f) return Status::io("--labels: cannot read " + file);
  std::map<std::string, int64_t> labels;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    std::istringstream ls(line);
    std::string id, label;
    if (!(ls >> id) || id[0] == '#') continue;
    char* end = nullptr;
    long long v = (ls >> label) ? std::strtoll(label.c_str(), &end, 10) : -1;
    if (label.empty() || *end != '\0' || v < 0)
      return Status::invalid(file + ":" + std::to_string(n) + ": expected 'SAMPLE_ID CLASS_INDEX'");
    labels[fs::path(id).lexically_normal().generic_string()] = v;
  }
  int64_t found = 0;
  for (auto& s : ds.samples) {
    auto it = labels.find(s.id);
    if (it != labels.end()) {
      s.label = it->second;
      ++found;
    }
  }
  if (found == 0)
    return Status::invalid("--labels " + file + ": no line names a sample of the data set (ids are paths relative to " +
                           ds.root + ", e.g. " + ds.samples.front().id + ")");
  return Status();
}

}  // namespace

Result<DataSet> list_samples(const std::string& src, const std::string& labels) {
  std::error_code ec;
  if (!fs::exists(src, ec)) return Status::io("--data " + src + ": no such file or folder");
  auto ds = fs::is_directory(src, ec) ? scan_folder(src) : read_manifest(src);
  if (!ds.ok()) return ds.status();
  if (ds->samples.empty())
    return Status::invalid("--data " + src + ": no samples (.jpg, .jpeg, .png, .npy or .npz files) found");
  if (labels == "folders") {
    FERRY_RETURN_IF_ERROR(label_by_folders(*ds));
  } else if (!labels.empty()) {
    FERRY_RETURN_IF_ERROR(label_from_file(*ds, labels));
  }
  return ds;
}

Result<SampleRef> sample_ref(const std::string& id, const std::string& path, std::optional<int64_t> label) {
  auto kind = kind_of(path);
  if (!kind) return Status::invalid(path + ": not a .jpg/.jpeg/.png/.npy/.npz file");
  return SampleRef{id, path, *kind, label};
}

Result<std::pair<int, int>> parse_shard(const std::string& text) {
  int i = 0, n = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n)
    return Status::invalid("--shard " + text + ": want i/N with 0 <= i < N (e.g. 0/4)");
  return std::make_pair(i, n);
}

std::vector<SampleRef> shard_of(const std::vector<SampleRef>& all, int index, int count) {
  std::vector<SampleRef> out;
  for (size_t i = static_cast<size_t>(index); i < all.size(); i += static_cast<size_t>(count)) out.push_back(all[i]);
  return out;
}

std::vector<ModelInput> model_inputs(const std::vector<runtime::InputInfo>& inputs) {
  std::vector<ModelInput> out;
  for (const runtime::InputInfo& v : inputs) {
    ModelInput in{v.name, v.dtype, {}};
    if (v.shape)
      for (const Dim& d : *v.shape) in.dims.push_back(d.is_static() ? d.value : -1);
    out.push_back(std::move(in));
  }
  return out;
}

namespace {

// Adds the batch dim when the sample lacks it; checks rank and static dims against the declaration.
Result<Tensor> fit_input(Tensor t, const ModelInput& in, const std::string& label) {
  const auto& want = in.dims;
  if (!want.empty() && t.dims().size() + 1 == want.size()) {
    std::vector<int64_t> d = t.dims();
    d.insert(d.begin(), 1);
    auto r = t.reshaped(d);
    if (!r.ok()) return r.status();
    t = std::move(*r);
  }
  auto declared = [&] { return in.name + " is declared " + dims_to_string(want); };
  if (!want.empty() && t.dims().size() != want.size())
    return Status::invalid(label + ": " + dims_to_string(t.dims()) + " for input " + declared());
  if (!t.dims().empty() && t.dims()[0] != 1)
    return Status::invalid(label + ": one sample per file (batch dim 1), not " + dims_to_string(t.dims()));
  for (size_t i = 1; i < want.size(); ++i)
    if (want[i] >= 0 && want[i] != t.dims()[i])
      return Status::invalid(label + ": " + dims_to_string(t.dims()) + " for input " + declared());
  if (t.dtype() != in.dtype)
    return Status::invalid(label + ": " + std::string(dtype_name(t.dtype())) + " for input " + in.name + ", which is " +
                           std::string(dtype_name(in.dtype)));
  return t;
}

Status only_one_input(const std::vector<ModelInput>& inputs, const SampleRef& s) {
  if (inputs.size() == 1) return Status();
  std::string names;
  for (auto& i : inputs) names += (names.empty() ? "" : ", ") + i.name;
  return Status::invalid(s.path + ": the model has " + std::to_string(inputs.size()) + " inputs (" + names +
                         "): give each sample as an .npz with one member per input name");
}

}  // namespace

Result<std::map<std::string, Tensor>> fit_feeds(const std::map<std::string, Tensor>& given,
                                                const std::vector<ModelInput>& inputs, const std::string& label) {
  std::map<std::string, Tensor> feeds;
  for (const ModelInput& in : inputs) {
    auto it = given.find(in.name);
    if (it == given.end()) return Status::invalid(label + ": no input named '" + in.name + "' (a model input)");
    auto t = fit_input(it->second, in, label + "[" + in.name + "]");
    if (!t.ok()) return t.status();
    feeds[in.name] = std::move(*t);
  }
  return feeds;
}

Result<std::map<std::string, Tensor>> load_sample(const SampleRef& s, const std::vector<ModelInput>& inputs,
                                                  const PreprocessSpec* pre) {
  std::map<std::string, Tensor> feeds;
  if (s.kind == SampleKind::kNpz) {
    auto arrays = read_npz(s.path);
    if (!arrays.ok()) return arrays.status();
    return fit_feeds(std::map<std::string, Tensor>(arrays->begin(), arrays->end()), inputs, s.path);
  }
  FERRY_RETURN_IF_ERROR(only_one_input(inputs, s));
  Tensor t;
  if (s.kind == SampleKind::kNpy) {
    auto r = read_npy(s.path);
    if (!r.ok()) return r.status();
    t = std::move(*r);
  } else {
    if (!pre) return Status::invalid(s.path + ": an image needs --preprocess (e.g. imagenet) to become a tensor");
    auto img = decode_image(s.path);
    if (!img.ok()) return img.status();
    auto geo = apply_geometry(*img, *pre, s.path);
    if (!geo.ok()) return geo.status();
    // A model compiled with --preprocess does the per-pixel part itself: it takes the 8-bit image.
    auto r = takes_uint8_image(inputs[0].dtype, inputs[0].dims) ? image_to_uint8_nhwc(*geo) : image_to_tensor(*geo, *pre);
    if (!r.ok()) return r.status();
    t = std::move(*r);
  }
  auto fitted = fit_input(std::move(t), inputs[0], s.path);
  if (!fitted.ok()) return fitted.status();
  feeds[inputs[0].name] = std::move(*fitted);
  return feeds;
}

}  // namespace ferry::tools::evaluate
