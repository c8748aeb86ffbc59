// Reading zip archives whose every claim is checked: .npz (NumPy) and .pth (torch.save's zip format)
// come from users, so sizes, offsets and member counts are checked against the file before anything
// is allocated, deflated members are bounded by the caller's limit before they are inflated (no zip
// bombs), and CRCs are verified. Stored and deflated members, zip64 records; no encryption.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/read_only_file.h"
#include "core/status.h"

namespace ferry {

struct ZipMember {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, local_offset = 0;
};

class ZipArchive {
 public:
  // `kind` ("an .npz") names the expected file type in errors: "<path>: not an .npz file (...)".
  static Result<ZipArchive> open(const std::string& path, const std::string& kind);
  const std::string& path() const { return file_->path(); }
  const std::vector<ZipMember>& members() const { return members_; }
  // The member of this name, or null.
  const ZipMember* find(std::string_view name) const;
  // The member's bytes; an error when it would be over `max_bytes`, is corrupt or is encrypted.
  Result<std::string> read(const ZipMember& m, uint64_t max_bytes) const;

 private:
  std::unique_ptr<ReadOnlyFile> file_;
  std::vector<ZipMember> members_;
};

}  // namespace ferry
