#pragma once

#include <cctype>

namespace ferry::ir {

// A character a name may hold in the IR text format without quotes (the parser reads such names bare and
// the printer writes them bare).
inline bool plain_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
}

}  // namespace ferry::ir
