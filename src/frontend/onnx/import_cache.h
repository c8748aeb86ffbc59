// The inside of ImportCache (import.h), for load_onnx.
#pragma once
#include <sys/stat.h>

#include <memory>
#include <string>

#include "frontend/onnx/import.h"

namespace ferry::frontend {

// The file's identity: path, device, inode, size, modification time.
std::string import_cache_key(const std::string& path, const struct stat& st);
// A copy of the import of `key` made while a cache is alive with checks at least as strict as `opts`;
// null otherwise.
std::unique_ptr<ir::Model> cached_import(const std::string& key, const ImportOptions& opts);
// Counts the import, and keeps a copy (made with `opts`) while a cache is alive.
void remember_import(const std::string& key, const ImportOptions& opts, const ir::Model& model);

}  // namespace ferry::frontend
