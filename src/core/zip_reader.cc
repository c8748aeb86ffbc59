#include "core/zip_reader.h"

#include <zlib.h>

#include <algorithm>

namespace ferry {

namespace {

// Applies a central-directory zip64 extra field (id 1) to the sizes and offset saturated at 0xFFFFFFFF.
Status apply_zip64(const unsigned char* extra, size_t len, ZipMember& e, bool need_u, bool need_c, bool need_o,
                   const std::string& label) {
  size_t pos = 0;
  while (pos + 4 <= len) {
    uint16_t id = load_le16(extra + pos), sz = load_le16(extra + pos + 2);
    if (pos + 4 + sz > len) break;
    if (id == 1) {
      const unsigned char* q = extra + pos + 4;
      size_t left = sz;
      auto take = [&](uint64_t& dst) -> bool {
        if (left < 8) return false;
        dst = load_le64(q);
        q += 8;
        left -= 8;
        return true;
      };
      if ((need_u && !take(e.usize)) || (need_c && !take(e.csize)) || (need_o && !take(e.local_offset)))
        return Status::invalid(label + ": malformed zip64 field for member '" + e.name + "'");
      return Status();
    }
    pos += 4 + sz;
  }
  if (need_u || need_c || need_o) return Status::invalid(label + ": member '" + e.name + "' lacks its zip64 sizes");
  return Status();
}

// Where the central directory is and how many entries it claims (from the end record, or zip64's).
struct DirectoryExtent {
  uint64_t count = 0, size = 0, offset = 0;
};

Result<DirectoryExtent> find_directory(const ReadOnlyFile& f, const std::string& kind) {
  const std::string& label = f.path();
  const std::string not_zip = label + ": not " + kind + " file (no zip end-of-central-directory record)";
  if (f.size() < 22) return Status::invalid(not_zip);
  uint64_t tail_len = std::min<uint64_t>(f.size(), 22 + 65535);
  std::string tail(tail_len, '\0');
  FERRY_RETURN_IF_ERROR(f.read_at(f.size() - tail_len, tail.data(), tail_len, "the zip directory"));
  const auto* t = reinterpret_cast<const unsigned char*>(tail.data());
  int64_t at = -1;
  for (int64_t i = static_cast<int64_t>(tail_len) - 22; i >= 0; --i)
    if (load_le32(t + i) == 0x06054b50) {
      at = i;
      break;
    }
  if (at < 0) return Status::invalid(not_zip);
  const unsigned char* eocd = t + at;
  DirectoryExtent d{load_le16(eocd + 10), load_le32(eocd + 12), load_le32(eocd + 16)};
  if (d.count == 0xFFFF || d.size == 0xFFFFFFFF || d.offset == 0xFFFFFFFF) {
    uint64_t eocd_pos = f.size() - tail_len + static_cast<uint64_t>(at);
    unsigned char loc[20], rec[56];
    if (eocd_pos < 20) return Status::invalid(label + ": zip64 locator missing");
    FERRY_RETURN_IF_ERROR(f.read_at(eocd_pos - 20, loc, 20, "the zip64 locator"));
    if (load_le32(loc) != 0x07064b50) return Status::invalid(label + ": zip64 locator missing");
    FERRY_RETURN_IF_ERROR(f.read_at(load_le64(loc + 8), rec, 56, "the zip64 directory record"));
    if (load_le32(rec) != 0x06064b50) return Status::invalid(label + ": malformed zip64 directory record");
    d = {load_le64(rec + 32), load_le64(rec + 40), load_le64(rec + 48)};
  }
  if (d.offset > f.size() || d.size > f.size() - d.offset || d.count > d.size / 46 + 1)
    return Status::invalid(label + ": the zip directory points outside the file (corrupt or truncated)");
  return d;
}

Result<std::vector<ZipMember>> read_central_directory(const ReadOnlyFile& f, const std::string& kind) {
  const std::string& label = f.path();
  FERRY_ASSIGN_OR_RETURN(DirectoryExtent d, find_directory(f, kind));
  std::string cd(d.size, '\0');
  FERRY_RETURN_IF_ERROR(f.read_at(d.offset, cd.data(), d.size, "the zip directory"));
  const auto* p = reinterpret_cast<const unsigned char*>(cd.data());
  std::vector<ZipMember> out;
  size_t pos = 0;
  for (uint64_t i = 0; i < d.count; ++i) {
    if (pos + 46 > d.size || load_le32(p + pos) != 0x02014b50)
      return Status::invalid(label + ": corrupt zip directory (entry " + std::to_string(i) + ")");
    const unsigned char* h = p + pos;
    size_t nlen = load_le16(h + 28), elen = load_le16(h + 30), clen = load_le16(h + 32);
    if (pos + 46 + nlen + elen + clen > d.size)
      return Status::invalid(label + ": corrupt zip directory (entry " + std::to_string(i) + " overruns it)");
    ZipMember e;
    e.flags = load_le16(h + 8);
    e.method = load_le16(h + 10);
    e.crc = load_le32(h + 16);
    e.csize = load_le32(h + 20);
    e.usize = load_le32(h + 24);
    e.local_offset = load_le32(h + 42);
    e.name.assign(reinterpret_cast<const char*>(h + 46), nlen);
    FERRY_RETURN_IF_ERROR(apply_zip64(h + 46 + nlen, elen, e, e.usize == 0xFFFFFFFF, e.csize == 0xFFFFFFFF,
                                      e.local_offset == 0xFFFFFFFF, label));
    out.push_back(std::move(e));
    pos += 46 + nlen + elen + clen;
  }
  return out;
}

Status inflate_member(std::string& packed, std::string& out, const std::string& where) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return Status::internal("zlib inflateInit2 failed");
  uint64_t in_left = packed.size(), out_left = out.size();
  zs.next_in = reinterpret_cast<Bytef*>(packed.data());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  int rc = Z_OK;
  while (rc == Z_OK) {  // zlib counts in uInt: feed members over 4 GiB in chunks
    if (zs.avail_in == 0) {
      zs.avail_in = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
      in_left -= zs.avail_in;
    }
    if (zs.avail_out == 0) {
      zs.avail_out = static_cast<uInt>(std::min<uint64_t>(out_left, 1u << 30));
      out_left -= zs.avail_out;
    }
    rc = inflate(&zs, Z_NO_FLUSH);  // Z_BUF_ERROR here: input ran out or output is full (corrupt)
  }
  uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != out.size())
    return Status::invalid(where + ": corrupt deflate data (" +
                           (rc == Z_STREAM_END ? "size differs from the zip directory" : "stream does not end") + ")");
  return Status();
}

}  // namespace

Result<ZipArchive> ZipArchive::open(const std::string& path, const std::string& kind) {
  ZipArchive z;
  z.file_ = std::make_unique<ReadOnlyFile>();
  FERRY_RETURN_IF_ERROR(z.file_->open(path));
  FERRY_ASSIGN_OR_RETURN(z.members_, read_central_directory(*z.file_, kind));
  return z;
}

const ZipMember* ZipArchive::find(std::string_view name) const {
  for (const ZipMember& m : members_)
    if (m.name == name) return &m;
  return nullptr;
}

Result<std::string> ZipArchive::read(const ZipMember& e, uint64_t max_bytes) const {
  const ReadOnlyFile& f = *file_;
  const std::string where = f.path() + ":" + e.name;
  if (e.flags & 1) return Status::unsupported(where + ": encrypted zip members are not supported");
  if (e.method != 0 && e.method != 8)
    return Status::unsupported(where + ": zip compression method " + std::to_string(e.method) +
                               " is not supported (only stored and deflated)");
  // The declared size bounds the allocation; a member larger than the caller accepts is refused
  // before we inflate (and cannot turn into a zip bomb).
  if (e.usize > max_bytes)
    return Status::error(ErrorCode::kOutOfRange, where + ": member claims " + std::to_string(e.usize) +
                                                     " bytes, more than the limit of " + std::to_string(max_bytes));
  // Deflate expands at most ~1032:1, so a larger claim is a lie; checking it keeps a corrupt directory
  // from making us allocate (and zero) gigabytes before inflate notices.
  if (e.method == 8 && e.usize / 1032 > e.csize + 1)
    return Status::invalid(where + ": member claims " + std::to_string(e.usize) + " bytes from " +
                           std::to_string(e.csize) + " deflated bytes (corrupt)");
  if (e.method == 0 && e.csize != e.usize) return Status::invalid(where + ": stored member sizes disagree");
  unsigned char lh[30];
  FERRY_RETURN_IF_ERROR(f.read_at(e.local_offset, lh, 30, "a zip member header"));
  if (load_le32(lh) != 0x04034b50) return Status::invalid(where + ": corrupt zip member header");
  uint64_t data_at = e.local_offset + 30 + load_le16(lh + 26) + load_le16(lh + 28);
  if (data_at > f.size() || e.csize > f.size() - data_at)
    return Status::invalid(where + ": member data runs past the end of the file (truncated)");
  std::string packed(e.csize, '\0');
  FERRY_RETURN_IF_ERROR(f.read_at(data_at, packed.data(), e.csize, "zip member data"));
  std::string out;
  if (e.method == 0) {
    out = std::move(packed);
  } else {
    out.assign(e.usize, '\0');
    FERRY_RETURN_IF_ERROR(inflate_member(packed, out, where));
  }
  uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(out.data()), out.size());
  if (crc != e.crc) return Status::invalid(where + ": CRC mismatch (the member is corrupt)");
  return out;
}

}  // namespace ferry
