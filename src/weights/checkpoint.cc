#include "weights/checkpoint.h"

#include <cstring>

#include "core/npy.h"
#include "core/read_only_file.h"
#include "core/zip_reader.h"

namespace ferry::weights {

namespace {

const char kFormats[] = "ferry reads torch .pth/.pt (torch.save's zip format), .safetensors, .npz and MindSpore .ckpt";

Result<Checkpoint> read_npz_checkpoint(const std::string& path) {
  FERRY_ASSIGN_OR_RETURN(auto arrays, read_npz(path));
  Checkpoint ck;
  ck.path = path;
  ck.format = "npz";
  for (auto& [key, t] : arrays) ck.tensors.push_back({key, std::move(t)});
  return ck;
}

Result<Checkpoint> read_zip_checkpoint(const std::string& path) {
  FERRY_ASSIGN_OR_RETURN(ZipArchive zip, ZipArchive::open(path, "a checkpoint (zip)"));
  for (const ZipMember& m : zip.members())
    if (m.name == "data.pkl" || m.name.ends_with("/data.pkl")) return read_torch_zip(path);
  for (const ZipMember& m : zip.members())
    if (m.name.ends_with(".npy")) return read_npz_checkpoint(path);
  return Status::invalid(path + ": a zip archive with neither data.pkl (torch.save) nor .npy members (np.savez); " +
                         kFormats);
}

// torch.save's format before torch 1.6: pickle protocol 2 (0x80 0x02), then the magic number
// 0x1950a86a20f9469cfc6c as a 10-byte LONG1 (0x8a 0x0a).
bool is_legacy_torch(const unsigned char* head, size_t n) {
  static const unsigned char kLegacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8};
  return n >= sizeof kLegacy && std::memcmp(head, kLegacy, sizeof kLegacy) == 0;
}

}  // namespace

const CheckpointTensor* Checkpoint::find(const std::string& key) const {
  for (const CheckpointTensor& t : tensors)
    if (t.key == key) return &t;
  return nullptr;
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  ReadOnlyFile f;
  FERRY_RETURN_IF_ERROR(f.open(path));
  unsigned char head[16] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(f.size(), sizeof head));
  FERRY_RETURN_IF_ERROR(f.read_at(0, head, n, "the file's first bytes"));
  if (n >= 4 && load_le32(head) == 0x04034b50) return read_zip_checkpoint(path);
  if (is_legacy_torch(head, n))
    return Status::unsupported(path + ": torch.save's legacy format (torch < 1.6) is not read; load it in torch and "
                                      "save it again with torch.save(state_dict, path) (the zip format)");
  if (n >= 9 && head[8] == '{' && load_le64(head) < f.size()) return read_safetensors(path);
  if (path.ends_with(".ckpt")) return read_mindspore_ckpt(path);
  return Status::invalid(path + ": not a checkpoint ferry recognises; " + kFormats);
}

std::optional<DType> dtype_named(std::span<const DtypeName> table, std::string_view name) {
  for (const DtypeName& d : table)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

std::string_view name_of_dtype(std::span<const DtypeName> table, DType dtype) {
  for (const DtypeName& d : table)
    if (d.dtype == dtype) return d.name;
  return {};
}

}  // namespace ferry::weights
