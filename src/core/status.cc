#include "core/status.h"

namespace ferry {

std::string Status::to_string() const {
  if (ok()) return "ok";
  std::string out;
  for (auto it = context_.rbegin(); it != context_.rend(); ++it) {
    out += *it;
    out += ": ";
  }
  out += message_;
  return out;
}

}  // namespace ferry
