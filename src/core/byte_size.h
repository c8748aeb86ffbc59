// Byte counts as people write and read them: "8G", "512MiB", "1.5 GB" in, "4 TiB" out. Used by the
// memory budget (--max-memory, SessionOptions::max_memory) and the errors that quote what a model needs.
#pragma once
#include <cstdint>
#include <string>

#include "core/status.h"

namespace ferry {

// "4.00 TiB", "512 MiB", "17 B": binary units, three significant digits.
std::string byte_size_text(double bytes);

// A size: a number (bytes) with an optional unit: K/M/G/T (binary, as KiB/MiB/GiB/TiB) or KB/MB/GB/TB
// (decimal), case-insensitive, "B" allowed. Errors name the text; 0, negatives and sizes past 2^62 are
// refused.
Result<int64_t> parse_byte_size(const std::string& text);

// The machine's physical memory in bytes (0 when it cannot be read).
int64_t physical_memory_bytes();

}  // namespace ferry
