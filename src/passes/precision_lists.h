// The op lists of the mixed-precision modes (ATC's white / black / grey lists) and the ops whose
// fp16/bf16 output needs no rounding because it only moves or selects values that already are fp16.
#pragma once
#include <set>
#include <string>

#include "core/status.h"

namespace ferry::passes {

struct MixLists {
  std::set<std::string> allow;   // compute in the low type (ATC white list)
  std::set<std::string> deny;    // stay fp32 (ATC black list)
  std::set<std::string> follow;  // take the producers' precision (ATC grey list); also every op in no list
};

// ferry's defaults (precision_lists.cc says why each op is where it is).
MixLists default_mix_lists();

// Applies an ATC --modify_mixlist style JSON file: {"allow": {"to-add": [...], "to-remove": [...]},
// "deny": {...}, "follow": {...}}, with ATC's names "white-list", "black-list", "gray-list" /
// "grey-list" accepted as well. Adding an op to one list removes it from the others. Errors name the
// file, and the line or key.
Status apply_mixlist_file(const std::string& path, MixLists& lists);

// Ops that only move, select or compare values (Reshape, Transpose, Concat, MaxPool, Relu, ...): fed
// fp16 values they produce fp16 values, so their outputs need no rounding.
bool value_preserving(const std::string& op_type);

}  // namespace ferry::passes
