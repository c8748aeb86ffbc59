#include "tools/run_inputs.h"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/shape.h"

namespace ferry::tools {

namespace fs = std::filesystem;

namespace {

// splitmix64: a tiny, fully specified generator. std::uniform_*_distribution differ between standard
// libraries, and `--seed N` should give the same inputs everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal() {  // Box-Muller; 1 - u keeps log() away from 0
    double u = 1.0 - uniform01(), v = uniform01();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
};

uint64_t stream_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the name, mixed with the seed
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  Rng r{seed ^ h};
  return r.next();
}

std::string input_names(const ir::Graph& g) {
  std::string out;
  for (const ir::Value* v : g.inputs)
    if (!v->is_constant()) out += (out.empty() ? "'" : ", '") + v->name + "'";
  return out.empty() ? "(none)" : out;
}

// "--shape x=<batch>,3" for an input, its dynamic dims named for the user to fill in.
std::string shape_hint(const ir::Value& v) { return "--shape " + shape_argument(v); }

}  // namespace

std::string shape_argument(const ir::Value& v, const std::vector<int64_t>& known) {
  if (!v.shape) return v.name + "=<dims>";
  std::string dims;
  for (size_t i = 0; i < v.shape->size(); ++i) {
    const Dim& d = (*v.shape)[i];
    std::string text;
    if (d.is_static()) text = std::to_string(d.value);
    else if (i < known.size() && known[i] >= 0) text = std::to_string(known[i]);
    else text = "<" + (d.symbol.empty() ? "d" + std::to_string(i) : d.symbol) + ">";
    dims += (i ? "," : "") + text;
  }
  return v.name + "=" + dims;
}

namespace {

// Checks a --shape against the declared shape (rank and static dims), naming both.
Status check_against_declared(const ir::Value& v, const std::vector<int64_t>& dims) {
  if (!v.shape) return Status();
  const Shape& s = *v.shape;
  std::string declared = std::string(dtype_name(v.dtype)) + shape_to_string(s);
  if (s.size() != dims.size())
    return Status::invalid("--shape " + v.name + "=" + dims_to_string(dims) + " has rank " +
                           std::to_string(dims.size()) + " but the model declares '" + v.name + "' as " + declared);
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i].is_static() && s[i].value != dims[i])
      return Status::invalid("--shape " + v.name + "=" + dims_to_string(dims) + " sets dimension " + std::to_string(i) +
                             " to " + std::to_string(dims[i]) + " but the model declares '" + v.name + "' as " +
                             declared);
  return Status();
}

void bind_symbols(const ir::Value& v, const std::vector<int64_t>& dims, std::map<std::string, int64_t>& symbols) {
  if (!v.shape || v.shape->size() != dims.size()) return;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!(*v.shape)[i].symbol.empty()) symbols.emplace((*v.shape)[i].symbol, dims[i]);
}

bool is_regular_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

Status add_file_shapes(InputOptions& opts) {
  for (const auto& [name, file] : opts.files) {
    if (opts.shapes.count(name)) continue;
    FERRY_ASSIGN_OR_RETURN(opts.shapes[name], read_npy_dims(file));  // the header only: prepare_inputs reads the data
  }
  return Status();
}

Result<std::pair<std::string, std::vector<int64_t>>> parse_shape_arg(const std::string& arg, const std::string& flag) {
  // NAME=DIMS, or NAME:DIMS (ATC's and trtexec's form); dims hold neither, names may.
  size_t eq = arg.rfind('=');
  if (eq == std::string::npos) eq = arg.rfind(':');
  if (eq == std::string::npos || eq == 0)
    return Status::invalid(flag + " '" + arg + "' must look like NAME=1,3,224,224 (or NAME:1,3,224,224)");
  std::string name = arg.substr(0, eq), rest = arg.substr(eq + 1);
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string::npos) comma = rest.size();
    std::string_view tok(rest.data() + pos, comma - pos);
    while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
    while (!tok.empty() && tok.back() == ' ') tok.remove_suffix(1);
    int64_t d = -1;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), d);
    // Past 2^40 no dimension is real: a typo, not a shape to allocate.
    if (tok.empty() || r.ec != std::errc() || r.ptr != tok.data() + tok.size() || d < 0 || d > (int64_t{1} << 40))
      return Status::invalid(flag + " '" + arg + "': '" + std::string(tok) +
                             "' is not a dimension (expected non-negative integers separated by commas)");
    dims.push_back(d);
    pos = comma + 1;
    if (comma + 1 == rest.size()) return Status::invalid(flag + " '" + arg + "' ends with a comma");
  }
  return std::make_pair(name, dims);
}

Result<std::pair<std::string, std::string>> parse_input_arg(const std::string& arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    return Status::invalid("--input '" + arg + "' must look like NAME=FILE.npy");
  return std::make_pair(arg.substr(0, eq), arg.substr(eq + 1));
}

std::string sanitize_name(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = std::string(std::max<size_t>(out.size(), 1), '_');
  return out;
}

Result<Tensor> random_tensor(DType dtype, const std::vector<int64_t>& dims, uint64_t seed, RandomDist dist) {
  FERRY_ASSIGN_OR_RETURN(Tensor t, Tensor::create(dtype, dims));
  Rng rng{seed};
  const int64_t n = t.numel();
  bool handled = dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (rng.next() >> 63) != 0;
      } else if constexpr (is_float_like_v<T>) {
        double x = dist == RandomDist::kNormal ? rng.normal() : rng.uniform01() * 2.0 - 1.0;
        p[i] = T(static_cast<float>(x));
        if constexpr (std::is_same_v<T, double>) p[i] = x;
      } else {
        p[i] = static_cast<T>(rng.next() % 10);
      }
    }
  });
  if (!handled) return Status::unsupported("cannot make random data of dtype " + std::string(dtype_name(dtype)));
  return t;
}

Result<std::vector<PreparedInput>> prepare_inputs(const ir::Graph& graph, const InputOptions& opts) {
  std::vector<const ir::Value*> inputs;
  std::map<std::string, const ir::Value*> by_name;
  for (const ir::Value* v : graph.inputs)
    if (!v->is_constant()) {
      inputs.push_back(v);
      by_name[v->name] = v;
    }
  for (const auto& [name, file] : opts.files)
    if (!by_name.count(name))
      return Status::invalid("--input " + name + "=" + file + ": the model has no input '" + name +
                             "'; its inputs are: " + input_names(graph));
  for (const auto& [name, dims] : opts.shapes) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      return Status::invalid("--shape " + name + "=...: the model has no input '" + name + "'; its inputs are: " +
                             input_names(graph));
    FERRY_RETURN_IF_ERROR(check_against_declared(*it->second, dims));
  }

  // Tensors given by file, and where each came from.
  std::map<std::string, std::pair<Tensor, std::string>> given;
  if (!opts.inputs_path.empty()) {
    const std::string& p = opts.inputs_path;
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::string missing;
      for (const ir::Value* v : inputs) {
        if (opts.files.count(v->name)) continue;
        std::string file = (fs::path(p) / (sanitize_name(v->name) + ".npy")).string();
        if (!is_regular_file(file)) {
          missing += (missing.empty() ? "" : ", ") + file;
          continue;
        }
        auto t = read_npy(file);
        if (!t.ok()) return t.status().with_context("input '" + v->name + "'");
        given[v->name] = {std::move(t).value(), file};
      }
      if (!missing.empty())
        return Status::invalid("missing input(s) in --inputs " + p + ": expected " + missing);
    } else if (is_regular_file(p)) {
      FERRY_ASSIGN_OR_RETURN(auto arrays, read_npz(p));
      // Keys may be the exact input names or their sanitized forms (what ferry writes).
      std::map<std::string, std::string> sanitized;
      for (const ir::Value* v : inputs) sanitized.emplace(sanitize_name(v->name), v->name);
      for (auto& [key, t] : arrays) {
        std::string name = by_name.count(key) ? key : (sanitized.count(key) ? sanitized[key] : "");
        if (name.empty())
          return Status::invalid(p + ": array '" + key + "' matches no model input; the model's inputs are: " +
                                 input_names(graph));
        if (opts.files.count(name)) continue;
        given[name] = {std::move(t), p + ":" + key};
      }
      std::string missing;
      for (const ir::Value* v : inputs)
        if (!given.count(v->name) && !opts.files.count(v->name)) missing += (missing.empty() ? "'" : ", '") + v->name + "'";
      if (!missing.empty()) return Status::invalid("missing input(s) " + missing + " in " + p);
    } else {
      return Status::io("--inputs " + p + ": no such folder or .npz file");
    }
  }
  for (const auto& [name, file] : opts.files) {
    auto t = read_npy(file);
    if (!t.ok()) return t.status().with_context("--input " + name);
    given[name] = {std::move(t).value(), file};
  }

  // Sizes of symbolic dims, from --shape first, then from given tensors.
  std::map<std::string, int64_t> symbols;
  for (const ir::Value* v : inputs) {
    auto s = opts.shapes.find(v->name);
    auto g = given.find(v->name);
    if (s != opts.shapes.end() && g != given.end() && s->second != g->second.first.dims())
      return Status::invalid("--shape " + v->name + "=" + dims_to_string(s->second) + " disagrees with " +
                             g->second.second + ", which holds " + g->second.first.describe());
    if (s != opts.shapes.end()) bind_symbols(*v, s->second, symbols);
    if (g != given.end()) bind_symbols(*v, g->second.first.dims(), symbols);
  }

  std::vector<PreparedInput> out;
  for (const ir::Value* v : inputs) {
    if (auto g = given.find(v->name); g != given.end()) {
      out.push_back({v->name, g->second.first, g->second.second});
      continue;
    }
    if (v->kind != ir::ValueKind::kTensor)
      return Status::unsupported("input '" + v->name + "' is a " +
                                 (v->kind == ir::ValueKind::kSequence ? "sequence" : "optional") +
                                 "; ferry cannot make random data for it");
    if (v->dtype == DType::kUndefined)
      return Status::invalid("input '" + v->name + "' has no declared dtype; pass it with --input " + v->name +
                             "=FILE.npy");
    std::vector<int64_t> dims;
    if (auto s = opts.shapes.find(v->name); s != opts.shapes.end()) {
      dims = s->second;
    } else if (!v->shape) {
      return Status::invalid("input '" + v->name + "' has an unknown shape; pass " + shape_hint(*v));
    } else {
      std::string unresolved;
      for (const Dim& d : *v->shape) {
        if (d.is_static()) {
          dims.push_back(d.value);
        } else if (auto it = symbols.find(d.symbol); !d.symbol.empty() && it != symbols.end()) {
          dims.push_back(it->second);
        } else {
          unresolved += (unresolved.empty() ? "'" : ", '") + d.to_string() + "'";
          dims.push_back(-1);
        }
      }
      if (!unresolved.empty())
        return Status::invalid("input '" + v->name + "' has dynamic dimensions (" + std::string(dtype_name(v->dtype)) +
                               shape_to_string(*v->shape) + ", " + unresolved +
                               " unknown); pass their sizes with " + shape_hint(*v));
    }
    auto t = random_tensor(v->dtype, dims, stream_seed(opts.seed, v->name), opts.dist);
    if (!t.ok()) return t.status().with_context("input '" + v->name + "'");
    out.push_back({v->name, std::move(t).value(), "random"});
  }
  return out;
}

std::string summarize_tensor(const Tensor& t, int max_values) {
  std::string out = t.describe();
  const int64_t n = t.numel();
  if (n == 0) return out + " (empty)";
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t nan = 0, inf = 0, finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = t.as_double(i);
    if (std::isnan(x)) {
      ++nan;
      continue;
    }
    if (std::isinf(x)) ++inf;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    if (std::isfinite(x)) {
      sum += x;
      ++finite;
    }
  }
  if (nan < n) out += fmt::format(" min {:.6g} max {:.6g}", lo, hi);
  if (finite) out += fmt::format(" mean {:.6g}", sum / static_cast<double>(finite));
  if (nan) out += fmt::format(" nan {}", nan);
  if (inf) out += fmt::format(" inf {}", inf);
  out += " [";
  for (int64_t i = 0; i < n && i < max_values; ++i)
    out += (i ? ", " : "") + (t.dtype() == DType::kBool ? std::string(t.as_int64(i) ? "true" : "false")
                                                        : fmt::format("{:.6g}", t.as_double(i)));
  return out + (n > max_values ? ", ...]" : "]");
}

Result<std::vector<std::string>> write_outputs(const std::string& dir,
                                               const std::vector<std::pair<std::string, RtValue>>& outputs,
                                               std::vector<std::string>* notes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec))
    return Status::io("cannot create output folder '" + dir + "'" + (ec ? ": " + ec.message() : ""));
  std::set<std::string> used;
  std::vector<std::string> written;
  for (const auto& [name, value] : outputs) {
    if (value.is_none()) {
      if (notes) notes->push_back("output '" + name + "' is an empty optional; nothing written");
      continue;
    }
    const char* ext = value.is_sequence() ? ".npz" : ".npy";
    std::string base = sanitize_name(name), stem = base;
    for (int k = 2; used.count(stem + ext); ++k) stem = base + "_" + std::to_string(k);
    used.insert(stem + ext);
    std::string path = (fs::path(dir) / (stem + ext)).string();
    if (stem != base && notes)
      notes->push_back("output '" + name + "' written as " + stem + ext + " (another output has the same file name)");
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return Status::io("refusing to write output '" + name + "' to '" + path + "': it is a symbolic link");
    Status s;
    if (value.is_sequence()) {
      std::vector<std::pair<std::string, Tensor>> arrays;
      for (size_t i = 0; i < value.sequence.size(); ++i) arrays.emplace_back(std::to_string(i), value.sequence[i]);
      s = write_npz(path, arrays);
    } else {
      if (value.tensor.dtype() == DType::kBFloat16 && notes)
        notes->push_back("output '" + name + "' is bfloat16, which .npy cannot hold; written as float32 (exact)");
      s = write_npy(path, value.tensor);
    }
    if (!s.ok()) return s.with_context("output '" + name + "'");
    written.push_back(path);
  }
  return written;
}

}  // namespace ferry::tools
