#include "runtime/dynamic_shapes.h"

#include <algorithm>

namespace ferry::runtime {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t at = s.find(sep, pos);
    out.push_back(s.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) break;
    pos = at + 1;
  }
  return out;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Result<int64_t> number(const std::string& text, const std::string& what) {
  std::string t = trim(text);
  if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos)
    return Status::invalid(what + ": '" + text + "' is not a dimension size");
  int64_t v = std::stoll(t);
  if (v < 1) return Status::invalid(what + ": size " + t + " must be at least 1");
  return v;
}

std::string range_text(const DimRange& r) {
  if (r.second < 0) return "-1";
  if (r.first == r.second) return std::to_string(r.first);
  return std::to_string(r.first) + "~" + std::to_string(r.second);
}

std::string dims_text(const std::vector<DimRange>& dims) {
  std::string s;
  for (const auto& d : dims) s += (s.empty() ? "" : ",") + range_text(d);
  return s;
}

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank(); ++i) s += (i ? "," : "") + std::to_string(t.dim(i));
  return s + "]";
}

}  // namespace

bool is_range_shape(const std::string& arg) {
  size_t colon = arg.rfind(':');
  std::string dims = colon == std::string::npos ? arg : arg.substr(colon + 1);
  return dims.find('~') != std::string::npos || dims.find("-1") != std::string::npos;
}

Result<std::pair<std::string, std::vector<DimRange>>> parse_input_range(const std::string& arg) {
  size_t colon = arg.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Status::invalid("--input-shape '" + arg + "': expected NAME:DIMS, e.g. input:1~8,3,224,224");
  std::string name = arg.substr(0, colon);
  const std::string what = "--input-shape " + name;
  std::vector<DimRange> dims;
  for (const std::string& part : split(arg.substr(colon + 1), ',')) {
    std::string p = trim(part);
    if (p == "-1") {
      dims.push_back({1, -1});
      continue;
    }
    size_t tilde = p.find('~');
    if (tilde == std::string::npos) {
      FERRY_ASSIGN_OR_RETURN(int64_t v, number(p, what));
      dims.push_back({v, v});
      continue;
    }
    FERRY_ASSIGN_OR_RETURN(int64_t lo, number(p.substr(0, tilde), what));
    FERRY_ASSIGN_OR_RETURN(int64_t hi, number(p.substr(tilde + 1), what));
    if (hi < lo) return Status::invalid(what + ": range " + p + " is empty (its upper bound is below its lower)");
    dims.push_back({lo, hi});
  }
  return std::make_pair(name, dims);
}

Result<std::vector<std::vector<int64_t>>> parse_dynamic_dims(const std::string& arg) {
  std::vector<std::vector<int64_t>> gears;
  for (const std::string& g : split(arg, ';')) {
    if (trim(g).empty()) return Status::invalid("--dynamic-dims '" + arg + "': an empty gear (expected e.g. \"1,224,224;1,320,320\")");
    std::vector<int64_t> vals;
    for (const std::string& v : split(g, ',')) {
      FERRY_ASSIGN_OR_RETURN(int64_t n, number(v, "--dynamic-dims"));
      vals.push_back(n);
    }
    if (!gears.empty() && vals.size() != gears[0].size())
      return Status::invalid("--dynamic-dims '" + arg + "': every gear needs the same number of dims (" +
                             std::to_string(gears[0].size()) + ")");
    if (std::find(gears.begin(), gears.end(), vals) != gears.end())
      return Status::invalid("--dynamic-dims '" + arg + "': a gear is listed twice");
    gears.push_back(vals);
  }
  if (gears.size() > 100) return Status::invalid("--dynamic-dims: at most 100 gears (ATC's limit too)");
  return gears;
}

std::vector<std::pair<std::string, int>> dynamic_positions(const ir::Graph& g) {
  std::vector<std::pair<std::string, int>> out;
  for (const ir::Value* v : g.inputs) {
    if (v->is_constant() || !v->shape) continue;
    for (size_t i = 0; i < v->shape->size(); ++i)
      if (!(*v->shape)[i].is_static()) out.push_back({v->name, static_cast<int>(i)});
  }
  return out;
}

Status apply_ranges(ir::Graph& g, const InputRanges& ranges) {
  for (const auto& [name, dims] : ranges) {
    ir::Value* v = g.find_local_value(name);
    if (!v || !v->is_graph_input || v->is_constant())
      return Status::invalid("--input-shape names '" + name + "', which is not a model input");
    if (v->shape && v->shape->size() != dims.size())
      return Status::invalid("--input-shape " + name + ": " + std::to_string(dims.size()) + " dims given, the input has " +
                             std::to_string(v->shape->size()) + " (" + v->type_string() + ")");
    Shape s;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].first == dims[i].second) s.push_back(Dim(dims[i].first));
      else s.push_back(Dim::symbolic(name + "_d" + std::to_string(i)));
    }
    v->shape = s;
  }
  return Status();
}

std::string ranges_to_string(const InputRanges& r) {
  std::string s;
  for (const auto& [name, dims] : r) s += (s.empty() ? "" : ";") + name + ":" + dims_text(dims);
  return s;
}

Result<InputRanges> ranges_from_string(const std::string& s) {
  InputRanges r;
  if (s.empty()) return r;
  for (const std::string& part : split(s, ';')) {
    auto p = parse_input_range(part);
    if (!p.ok()) return Status(p.status()).with_context("stored input ranges");
    r[p->first] = p->second;
  }
  return r;
}

std::string dims_gears_to_string(const std::vector<std::vector<int64_t>>& gears) {
  std::string s;
  for (const auto& g : gears) {
    std::string one;
    for (int64_t v : g) one += (one.empty() ? "" : ",") + std::to_string(v);
    s += (s.empty() ? "" : ";") + one;
  }
  return s;
}

Status check_ranges(const InputRanges& r, const std::map<std::string, RtValue>& feeds) {
  for (const auto& [name, dims] : r) {
    auto it = feeds.find(name);
    if (it == feeds.end() || !it->second.is_tensor()) continue;  // the session reports it
    const Tensor& t = it->second.tensor;
    const std::string accepts = "; this model accepts " + name + ":" + dims_text(dims);
    if (t.rank() != static_cast<int>(dims.size()))
      return Status::invalid("input '" + name + "' has shape " + shape_text(t) + accepts);
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t d = t.dim(static_cast<int>(i));
      if (d < dims[i].first || (dims[i].second >= 0 && d > dims[i].second))
        return Status::invalid("input '" + name + "' has shape " + shape_text(t) + " (dim " + std::to_string(i) + " is " +
                               std::to_string(d) + ")" + accepts);
    }
  }
  return Status();
}

Result<size_t> match_dims_gear(const std::vector<std::pair<std::string, int>>& positions,
                               const std::vector<std::vector<int64_t>>& gears,
                               const std::map<std::string, RtValue>& feeds) {
  std::vector<int64_t> got;
  std::string where, shapes;
  for (const auto& [name, dim] : positions) {
    where += (where.empty() ? "" : ", ") + name + " dim " + std::to_string(dim);
    auto it = feeds.find(name);
    if (it == feeds.end() || !it->second.is_tensor()) return size_t{0};  // the session reports it
    const Tensor& t = it->second.tensor;
    if (t.rank() <= dim) return Status::invalid("input '" + name + "' has shape " + shape_text(t) +
                                                "; this model was compiled with --dynamic-dims over " + name + " dim " +
                                                std::to_string(dim));
    got.push_back(t.dim(dim));
    if (shapes.find("'" + name + "'") == std::string::npos)
      shapes += (shapes.empty() ? "" : ", ") + std::string("'") + name + "' " + shape_text(t);
  }
  for (size_t i = 0; i < gears.size(); ++i)
    if (gears[i] == got) return i;
  return Status::invalid("input " + shapes + " matches no gear; this model was compiled with --dynamic-dims gears " +
                         dims_gears_to_string(gears) + " for (" + where + ")");
}

}  // namespace ferry::runtime
