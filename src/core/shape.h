// Shapes with symbolic dims ("batch", "seq") for graph-level types, and helpers for concrete shapes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace ferry {

// One dimension of a graph-level shape: a known size (>= 0), a named symbol, or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // set for named dynamic dims
  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT(google-explicit-constructor)
  static Dim symbolic(std::string name) { Dim d; d.symbol = std::move(name); return d; }
  bool is_static() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  std::string to_string() const;  // "3", "batch" or "?"
};

// A graph-level shape. A value whose rank is unknown has no Shape at all (std::optional).
using Shape = std::vector<Dim>;

bool is_static(const Shape& s);
std::vector<int64_t> static_dims(const Shape& s);  // precondition: is_static
Shape to_shape(const std::vector<int64_t>& dims);
std::string shape_to_string(const Shape& s);                    // "[1,3,batch,?]"
std::string dims_to_string(const std::vector<int64_t>& dims);  // "[1,3,224,224]"

// Product of dims, failing (instead of overflowing) past `limit` elements.
Result<int64_t> checked_numel(const std::vector<int64_t>& dims, int64_t limit = int64_t{1} << 40);

// Numpy-style multidirectional broadcast of two concrete shapes.
Result<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// The same on graph-level shapes; unknown where it cannot tell.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Normalises a possibly negative axis against `rank`; error names the axis when out of range.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank);

}  // namespace ferry
