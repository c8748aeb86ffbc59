#include "core/shape.h"

#include <limits>

namespace ferry {

std::string Dim::to_string() const {
  if (is_static()) return std::to_string(value);
  if (!symbol.empty()) return symbol;
  return "?";
}

bool is_static(const Shape& s) {
  for (const Dim& d : s)
    if (!d.is_static()) return false;
  return true;
}

std::vector<int64_t> static_dims(const Shape& s) {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (const Dim& d : s) out.push_back(d.value);
  return out;
}

Shape to_shape(const std::vector<int64_t>& dims) {
  Shape s;
  s.reserve(dims.size());
  for (int64_t d : dims) s.emplace_back(d);
  return s;
}

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += s[i].to_string();
  }
  return out + "]";
}

std::string dims_to_string(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

Result<int64_t> checked_numel(const std::vector<int64_t>& dims, int64_t limit) {
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) return Status::invalid("negative dimension in shape " + dims_to_string(dims));
    if (d == 0) empty = true;
  }
  // The non-zero dims are bounded even when a 0 makes the tensor empty: strides and any product of
  // them taken in order (dims [2^60, 221, 0]) must not overflow.
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d == 0) continue;
    if (n > limit / d)
      return Status::error(ErrorCode::kOutOfRange,
                           "shape " + dims_to_string(dims) + (empty ? " has non-zero dimensions whose product is past "
                                                                    : " has more than ") +
                               std::to_string(limit) + " elements");
    n *= d;
  }
  return empty ? int64_t{0} : n;
}

Result<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return Status::invalid("shapes " + dims_to_string(a) + " and " + dims_to_string(b) +
                             " cannot be broadcast together");
    }
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    Dim da = i < r - a.size() ? Dim(1) : a[i - (r - a.size())];
    Dim db = i < r - b.size() ? Dim(1) : b[i - (r - b.size())];
    if (da.is_static() && da.value == 1) {
      out[i] = db;
    } else if (db.is_static() && db.value == 1) {
      out[i] = da;
    } else if (da == db) {
      out[i] = da;
    } else if (da.is_static()) {
      out[i] = da;  // the other must be equal or 1; taking the known size is safe
    } else if (db.is_static()) {
      out[i] = db;
    } else {
      out[i] = Dim();
    }
  }
  return out;
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank || (rank == 0 && axis != 0 && axis != -1))
    return Status::invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (rank == 0) return int64_t{0};
  return axis < 0 ? axis + rank : axis;
}

}  // namespace ferry
