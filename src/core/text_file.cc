#include "core/text_file.h"

#include <fstream>

namespace ferry {

Status write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return Status::io("cannot write '" + path + "'");
  return Status();
}

}  // namespace ferry
