// Writing a whole text file (reports, JSON, CSV): the one place that turns a failed write into an error
// naming the file.
#pragma once
#include <string>

#include "core/status.h"

namespace ferry {

// Writes `text` to `path` (created or truncated, bytes as given); an io error naming the path when the
// file cannot be opened or the write does not complete (a full disk shows at close).
Status write_text_file(const std::string& path, const std::string& text);

}  // namespace ferry
