// Dynamic shapes for compiled models, as ATC offers them: dims gears (`--dynamic-dims
// "1,224,224;1,320,320"`: one prepared session per gear, the values filling every dynamic input dim
// in input order) and ranges (`--input-shape NAME:1~8,3,224,224`, `-1` for any size: one session,
// inputs checked against the range). Both are stored in the .ferry file's metadata
// (ferry.dynamic_dims, ferry.input_ranges) and enforced at run time with errors that name what the
// model accepts.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"

namespace ferry::runtime {

// Per dim: [lo, hi]; lo == hi a fixed size; hi == -1 no upper bound (lo 1).
using DimRange = std::pair<int64_t, int64_t>;
using InputRanges = std::map<std::string, std::vector<DimRange>>;

// Whether an --input-shape argument is a range form (holds '~' or a -1 dim).
bool is_range_shape(const std::string& arg);
// "NAME:1~8,3,224,224" or "NAME:-1,3,224,224" -> (NAME, ranges).
Result<std::pair<std::string, std::vector<DimRange>>> parse_input_range(const std::string& arg);
// "1,224,224;1,320,320" -> gears (each positive, all the same length, no duplicates).
Result<std::vector<std::vector<int64_t>>> parse_dynamic_dims(const std::string& arg);

// The dynamic dims of g's inputs in input order: (input name, dim index).
std::vector<std::pair<std::string, int>> dynamic_positions(const ir::Graph& g);

// Makes the ranged dims of g's inputs symbolic and the fixed ones static.
Status apply_ranges(ir::Graph& g, const InputRanges& ranges);

// Text forms stored in metadata, and back.
std::string ranges_to_string(const InputRanges& r);  // "x:1~8,3,224,224;y:-1,4"
Result<InputRanges> ranges_from_string(const std::string& s);
std::string dims_gears_to_string(const std::vector<std::vector<int64_t>>& gears);  // "1,224,224; 1,320,320"

// Checks feeds against ranges; the error names the input, the dim and what the model accepts.
Status check_ranges(const InputRanges& r, const std::map<std::string, RtValue>& feeds);
// The gear these feeds match (positions from dynamic_positions), or an error listing the gears.
Result<size_t> match_dims_gear(const std::vector<std::pair<std::string, int>>& positions,
                               const std::vector<std::vector<int64_t>>& gears,
                               const std::map<std::string, RtValue>& feeds);

inline constexpr const char* kDynamicDimsKey = "ferry.dynamic_dims";
inline constexpr const char* kInputRangesKey = "ferry.input_ranges";

}  // namespace ferry::runtime
