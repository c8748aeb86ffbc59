#include "core/byte_size.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ferry {

std::string byte_size_text(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 6) {
    bytes /= 1024;
    ++unit;
  }
  char buf[48];
  if (unit == 0)
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else
    std::snprintf(buf, sizeof buf, bytes >= 100 ? "%.0f %s" : bytes >= 10 ? "%.1f %s" : "%.2f %s", bytes, kUnits[unit]);
  return buf;
}

Result<int64_t> parse_byte_size(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Status::invalid("'" + text + "' is not a memory size (" + why + "; e.g. 8G, 512MiB, 2000000000)");
  };
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number)) return bad("no number");
  std::string unit;
  for (const char* p = end; *p; ++p)
    if (!std::isspace(static_cast<unsigned char>(*p))) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();  // "GB", "B"
  double scale = 1;
  if (unit.empty()) {
    scale = 1;
  } else {
    const std::string prefixes = "KMGT";
    const size_t k = prefixes.find(unit[0]);
    if (k == std::string::npos || unit.size() > 2 || (unit.size() == 2 && unit[1] != 'I')) return bad("unknown unit");
    // "G" and "GI" (GiB) are binary; "GB" (whose B was dropped above, leaving "G" from "GB") is decimal.
    const bool decimal = unit.size() == 1 && text.find_last_of("bB") != std::string::npos &&
                         text.find_first_of("iI") == std::string::npos;
    scale = std::pow(decimal ? 1000.0 : 1024.0, static_cast<double>(k + 1));
  }
  const double bytes = number * scale;
  if (!(bytes >= 1)) return bad("must be at least 1 byte");
  if (bytes > std::ldexp(1.0, 62)) return bad("more than 2^62 bytes");
  return static_cast<int64_t>(bytes);
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<int64_t>(pages) * page;
}

}  // namespace ferry
