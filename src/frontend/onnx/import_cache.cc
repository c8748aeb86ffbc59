// ImportCache (import.h): the imports load_onnx made while a cache is alive, by file identity.
#include "frontend/onnx/import_cache.h"

#include <atomic>
#include <map>
#include <mutex>

namespace ferry::frontend {

namespace {

struct CacheState {
  std::mutex mu;
  int scopes = 0;  // live ImportCache objects
  struct Entry {
    std::shared_ptr<const ir::Model> model;
    ImportOptions opts;  // what the import checked
  };
  std::map<std::string, Entry> models;
};

CacheState& state() {
  static CacheState s;
  return s;
}

std::atomic<int64_t> g_imported{0};

}  // namespace

ImportCache::ImportCache() {
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().scopes;
}

ImportCache::~ImportCache() {
  std::lock_guard<std::mutex> lock(state().mu);
  if (--state().scopes == 0) state().models.clear();
}

int64_t onnx_files_imported() { return g_imported.load(); }

std::string import_cache_key(const std::string& path, const struct stat& st) {
  return path + '\n' + std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' + std::to_string(st.st_size) +
         ':' + std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec);
}

std::unique_ptr<ir::Model> cached_import(const std::string& key, const ImportOptions& opts) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().scopes == 0) return nullptr;
  auto it = state().models.find(key);
  if (it == state().models.end()) return nullptr;
  // The cached import passed checks at least as strict as these (inspect's and check's looser imports
  // can use what run's import made, not the other way round).
  const ImportOptions& had = it->second.opts;
  const bool as_strict = (had.check_ops || !opts.check_ops) && (!had.allow_newer_opset || opts.allow_newer_opset) &&
                         had.min_opset >= opts.min_opset;
  return as_strict ? it->second.model->clone() : nullptr;
}

void remember_import(const std::string& key, const ImportOptions& opts, const ir::Model& model) {
  ++g_imported;
  std::lock_guard<std::mutex> lock(state().mu);
  if (state().scopes == 0) return;
  auto it = state().models.find(key);
  // Keep the strictest import: it serves every later request.
  if (it == state().models.end() || (opts.check_ops && !it->second.opts.check_ops))
    state().models[key] = {std::shared_ptr<const ir::Model>(model.clone()), opts};
}

}  // namespace ferry::frontend
