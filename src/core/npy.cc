// .npy / .npz reading and writing. Every number a file claims (header length, shape, member sizes and
// offsets) is checked against the bytes actually there before it is used, because these files come
// from users and the CLI must answer a hostile one with an error, not a crash.
#include "core/npy.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "core/read_only_file.h"
#include "core/shape.h"
#include "core/zip_reader.h"

namespace ferry {

static_assert(std::endian::native == std::endian::little, "npy.cc assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// NumPy itself refuses headers over 10000 bytes by default; a generous cap still stops a file that
// claims a 4 GiB header from making us read (or allocate) that much.
constexpr size_t kMaxHeaderLen = size_t{1} << 20;
constexpr int kMaxRank = 64;

// ---- files ----------------------------------------------------------------------------------------

Status write_file(const std::string& path, const std::string& head, const void* body, size_t body_len) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Status::io("cannot write '" + path + "': " + std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  if (ok && body_len) ok = std::fwrite(body, 1, body_len, f) == body_len;
  int err = errno;
  if (std::fclose(f) != 0) ok = false;
  if (!ok) return Status::io("cannot write '" + path + "': " + std::strerror(err ? err : EIO));
  return Status();
}

// ---- the header: a Python dict literal ------------------------------------------------------------

struct PyValue {
  enum class Kind { kString, kBool, kTuple } kind = Kind::kString;
  std::string s;
  bool b = false;
  std::vector<int64_t> ints;
};

// Parses exactly what NumPy writes: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// (any key order, either quote style, Python 2 'L' integer suffixes). Anything else is an error.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& label) : t_(text), label_(label) {}

  Result<std::map<std::string, PyValue>> parse() {
    std::map<std::string, PyValue> out;
    skip_ws();
    if (!eat('{')) return fail("expected '{'");
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      FERRY_ASSIGN_OR_RETURN(std::string key, parse_string());
      skip_ws();
      if (!eat(':')) return fail("expected ':' after key '" + key + "'");
      skip_ws();
      FERRY_ASSIGN_OR_RETURN(PyValue v, parse_value());
      if (!out.emplace(key, std::move(v)).second) return fail("key '" + key + "' appears twice");
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat('}')) break;
      return fail("expected ',' or '}'");
    }
    skip_ws();
    if (pos_ != t_.size()) return fail("unexpected text after the closing '}'");
    return out;
  }

 private:
  Status fail(const std::string& what) const {
    return Status::invalid(label_ + ": malformed .npy header (" + what + " at character " + std::to_string(pos_) +
                           ")");
  }
  void skip_ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    if (pos_ < t_.size() && t_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Result<std::string> parse_string() {
    if (pos_ >= t_.size() || (t_[pos_] != '\'' && t_[pos_] != '"')) return fail("expected a quoted string");
    char q = t_[pos_++];
    size_t end = t_.find(q, pos_);
    if (end == std::string_view::npos) return fail("unterminated string");
    std::string s(t_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  Result<int64_t> parse_int() {
    size_t start = pos_;
    while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') ++pos_;
    if (pos_ == start) {
      if (pos_ < t_.size() && t_[pos_] == '-') return fail("negative dimension");
      return fail("expected an integer");
    }
    int64_t v = 0;
    auto r = std::from_chars(t_.data() + start, t_.data() + pos_, v);
    if (r.ec != std::errc()) return fail("dimension " + std::string(t_.substr(start, pos_ - start)) + " is too large");
    if (pos_ < t_.size() && (t_[pos_] == 'L' || t_[pos_] == 'l')) ++pos_;
    return v;
  }
  Result<PyValue> parse_value() {
    PyValue v;
    if (pos_ < t_.size() && (t_[pos_] == '\'' || t_[pos_] == '"')) {
      FERRY_ASSIGN_OR_RETURN(v.s, parse_string());
      return v;
    }
    if (t_.substr(pos_, 4) == "True") {
      pos_ += 4;
      v.kind = PyValue::Kind::kBool;
      v.b = true;
      return v;
    }
    if (t_.substr(pos_, 5) == "False") {
      pos_ += 5;
      v.kind = PyValue::Kind::kBool;
      return v;
    }
    if (eat('(')) {
      v.kind = PyValue::Kind::kTuple;
      for (;;) {
        skip_ws();
        if (eat(')')) break;
        if (static_cast<int>(v.ints.size()) >= kMaxRank) return fail("more than " + std::to_string(kMaxRank) + " dimensions");
        FERRY_ASSIGN_OR_RETURN(int64_t d, parse_int());
        v.ints.push_back(d);
        skip_ws();
        if (eat(',')) continue;
        skip_ws();
        if (eat(')')) break;
        return fail("expected ',' or ')' in the shape");
      }
      return v;
    }
    if (pos_ < t_.size() && t_[pos_] == '[') return fail("structured dtypes (a list as 'descr') are not supported");
    return fail("unexpected value");
  }

  std::string_view t_;
  const std::string& label_;
  size_t pos_ = 0;
};

struct NpyHeader {
  DType dtype = DType::kUndefined;
  size_t itemsize = 0;
  bool swap = false;  // big-endian data
  bool fortran = false;
  std::vector<int64_t> dims;
  int64_t numel = 0;
  uint64_t data_offset = 0;
  uint64_t data_bytes = 0;
};

Result<DType> parse_descr(const std::string& descr, bool* swap, const std::string& label) {
  std::string_view d = descr;
  char order = '=';
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    order = d[0];
    d.remove_prefix(1);
  }
  static const std::map<std::string_view, DType> kTypes = {
      {"f2", DType::kFloat16}, {"f4", DType::kFloat32}, {"f8", DType::kFloat64}, {"i1", DType::kInt8},
      {"i2", DType::kInt16},   {"i4", DType::kInt32},   {"i8", DType::kInt64},   {"u1", DType::kUInt8},
      {"u2", DType::kUInt16},  {"u4", DType::kUInt32},  {"u8", DType::kUInt64},  {"b1", DType::kBool},
      {"?", DType::kBool}};
  auto it = kTypes.find(d);
  if (it == kTypes.end()) {
    std::string why;
    char k = d.empty() ? ' ' : d[0];
    if (k == 'c') why = " (complex numbers)";
    else if (k == 'U' || k == 'S' || k == 'a') why = " (strings)";
    else if (k == 'O') why = " (Python objects)";
    else if (k == 'V') why = " (raw void data; ml_dtypes' bfloat16 saves as this: convert it to float32)";
    else if (k == 'M' || k == 'm') why = " (dates/times)";
    else if (k == 'f') why = " (this float width)";
    return Status::unsupported(label + ": dtype '" + descr + "'" + why + " is not supported by ferry");
  }
  *swap = order == '>' && dtype_size(it->second) > 1;
  return it->second;
}

// Bytes 0..total of the file: magic, version, header length; returns where the data starts.
Result<uint64_t> header_total(const unsigned char* p, size_t n, const std::string& label, int* major) {
  if (n < kMagicLen + 2 || std::memcmp(p, kMagic, kMagicLen) != 0)
    return Status::invalid(label + ": not a .npy file (the magic string \\x93NUMPY is missing)");
  *major = p[6];
  if (*major < 1 || *major > 3)
    return Status::unsupported(label + ": .npy format version " + std::to_string(p[6]) + "." + std::to_string(p[7]) +
                               " is not supported (1.0, 2.0 and 3.0 are)");
  size_t fixed = *major == 1 ? 10 : 12;
  if (n < fixed) return Status::invalid(label + ": truncated .npy header");
  uint64_t hlen = *major == 1 ? load_le16(p + 8) : load_le32(p + 8);
  if (hlen > kMaxHeaderLen)
    return Status::invalid(label + ": .npy header claims " + std::to_string(hlen) + " bytes (more than the " +
                           std::to_string(kMaxHeaderLen) + " allowed)");
  return fixed + hlen;
}

// Parses the header in p[0..total) (total from header_total) and checks its claims against `avail`,
// the number of bytes the whole file or member has.
Result<NpyHeader> parse_header(const unsigned char* p, uint64_t total, uint64_t avail, int major,
                               const std::string& label) {
  size_t fixed = major == 1 ? 10 : 12;
  std::string_view text(reinterpret_cast<const char*>(p) + fixed, total - fixed);
  if (major < 3) {
    for (char c : text)
      if (static_cast<unsigned char>(c) >= 0x80)
        return Status::invalid(label + ": .npy header of version " + std::to_string(major) + ".0 is not ASCII");
  }
  FERRY_ASSIGN_OR_RETURN(auto dict, DictParser(text, label).parse());
  auto get = [&](const char* key, PyValue::Kind kind) -> Result<const PyValue*> {
    auto it = dict.find(key);
    if (it == dict.end()) return Status::invalid(label + ": .npy header has no '" + std::string(key) + "'");
    if (it->second.kind != kind) return Status::invalid(label + ": .npy header has a malformed '" + std::string(key) + "'");
    return &it->second;
  };
  NpyHeader h;
  FERRY_ASSIGN_OR_RETURN(const PyValue* descr, get("descr", PyValue::Kind::kString));
  FERRY_ASSIGN_OR_RETURN(const PyValue* fortran, get("fortran_order", PyValue::Kind::kBool));
  FERRY_ASSIGN_OR_RETURN(const PyValue* shape, get("shape", PyValue::Kind::kTuple));
  FERRY_ASSIGN_OR_RETURN(h.dtype, parse_descr(descr->s, &h.swap, label));
  h.itemsize = dtype_size(h.dtype);
  h.fortran = fortran->b;
  h.dims = shape->ints;
  auto n = checked_numel(h.dims);
  if (!n.ok()) return n.status().with_context(label);
  h.numel = *n;
  h.data_offset = total;
  h.data_bytes = static_cast<uint64_t>(h.numel) * h.itemsize;  // < 2^40 * 8: no overflow
  uint64_t have = avail >= total ? avail - total : 0;
  if (have != h.data_bytes)
    return Status::invalid(label + ": the header says " + std::string(dtype_name(h.dtype)) + dims_to_string(h.dims) +
                           " (" + std::to_string(h.data_bytes) + " bytes of data) but the file has " +
                           std::to_string(have) + " bytes of data" + (have < h.data_bytes ? " (truncated?)" : ""));
  return h;
}

// Byte-swaps, reorders Fortran data and normalises bools of a tensor whose raw bytes were just read.
Result<Tensor> finish(Tensor t, const NpyHeader& h) {
  unsigned char* p = static_cast<unsigned char*>(t.raw());
  const size_t w = h.itemsize;
  if (h.swap)
    for (int64_t i = 0; i < h.numel; ++i) std::reverse(p + i * w, p + (i + 1) * w);
  if (h.dtype == DType::kBool)  // any non-zero byte is True in NumPy; a C++ bool must hold 0 or 1
    for (int64_t i = 0; i < h.numel; ++i) p[i] = p[i] != 0;
  if (h.fortran && t.rank() > 1 && h.numel > 0) {
    Tensor c(h.dtype, h.dims);
    unsigned char* dst = static_cast<unsigned char*>(c.raw());
    const int r = t.rank();
    std::vector<int64_t> fstride(r), idx(r, 0);
    fstride[0] = 1;
    for (int k = 1; k < r; ++k) fstride[k] = fstride[k - 1] * h.dims[k - 1];
    int64_t src = 0;
    for (int64_t i = 0; i < h.numel; ++i) {
      std::memcpy(dst + i * w, p + src * w, w);
      for (int k = r - 1; k >= 0; --k) {  // next C-order index, keeping the Fortran offset in step
        if (++idx[k] < h.dims[k]) {
          src += fstride[k];
          break;
        }
        src -= fstride[k] * (h.dims[k] - 1);
        idx[k] = 0;
      }
    }
    return c;
  }
  return t;
}

std::string descr_for(DType t) {
  switch (t) {
    case DType::kFloat16: return "<f2";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kInt8: return "|i1";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kUInt8: return "|u1";
    case DType::kUInt16: return "<u2";
    case DType::kUInt32: return "<u4";
    case DType::kUInt64: return "<u8";
    case DType::kBool: return "|b1";
    default: return "";
  }
}

// The magic, version, length and padded dict for a C-order little-endian array.
std::string encode_header(DType t, const std::vector<int64_t>& dims) {
  std::string dict = "{'descr': '" + descr_for(t) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < dims.size(); ++i) dict += (i ? ", " : "") + std::to_string(dims[i]);
  dict += dims.size() == 1 ? ",), }" : "), }";  // Python's one-element tuple is "(3,)"
  // Version 1.0 unless the header does not fit its 16-bit length; the total is padded to 64 bytes.
  bool v2 = dict.size() + 1 + 10 > 65535;
  size_t fixed = v2 ? 12 : 10;
  size_t total = (fixed + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - fixed - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(dict.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + dict;
}

Result<Tensor> storable(const Tensor& t) {
  if (!t.defined()) return Status::invalid("cannot write an undefined tensor to .npy");
  if (t.dtype() == DType::kBFloat16) return t.cast(DType::kFloat32);
  if (descr_for(t.dtype()).empty())
    return Status::unsupported("dtype " + std::string(dtype_name(t.dtype())) + " cannot be written to .npy");
  return t;
}

}  // namespace

DType npy_storage_dtype(DType t) { return t == DType::kBFloat16 ? DType::kFloat32 : t; }

Result<Tensor> decode_npy(const void* data, size_t size, const std::string& label) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  int major = 0;
  FERRY_ASSIGN_OR_RETURN(uint64_t total, header_total(p, size, label, &major));
  if (total > size) return Status::invalid(label + ": truncated .npy header (" + std::to_string(total) +
                                           " bytes claimed, " + std::to_string(size) + " present)");
  FERRY_ASSIGN_OR_RETURN(NpyHeader h, parse_header(p, total, size, major, label));
  auto t = Tensor::create(h.dtype, h.dims);
  if (!t.ok()) return t.status().with_context(label);
  if (h.data_bytes) std::memcpy(t->raw(), p + h.data_offset, h.data_bytes);
  return finish(std::move(t).value(), h);
}

Result<std::string> encode_npy(const Tensor& t) {
  FERRY_ASSIGN_OR_RETURN(Tensor s, storable(t));
  std::string out = encode_header(s.dtype(), s.dims());
  out.append(static_cast<const char*>(s.raw()), s.nbytes());
  return out;
}

namespace {
// Reads and validates the header of an open .npy file (the data is not read).
Result<NpyHeader> read_header(ReadOnlyFile& f, const std::string& path) {
  unsigned char fixed[12] = {};
  size_t n = static_cast<size_t>(std::min<uint64_t>(f.size(), sizeof fixed));
  FERRY_RETURN_IF_ERROR(f.read_at(0, fixed, n, "the .npy header"));
  int major = 0;
  FERRY_ASSIGN_OR_RETURN(uint64_t total, header_total(fixed, n, path, &major));
  if (total > f.size())
    return Status::invalid(path + ": truncated .npy header (" + std::to_string(total) + " bytes claimed, the file has " +
                           std::to_string(f.size()) + ")");
  std::string head(total, '\0');
  FERRY_RETURN_IF_ERROR(f.read_at(0, head.data(), total, "the .npy header"));
  return parse_header(reinterpret_cast<const unsigned char*>(head.data()), total, f.size(), major, path);
}
}  // namespace

Result<std::vector<int64_t>> read_npy_dims(const std::string& path) {
  ReadOnlyFile f;
  FERRY_RETURN_IF_ERROR(f.open(path));
  FERRY_ASSIGN_OR_RETURN(NpyHeader h, read_header(f, path));
  return h.dims;
}

Result<Tensor> read_npy(const std::string& path) {
  ReadOnlyFile f;
  FERRY_RETURN_IF_ERROR(f.open(path));
  FERRY_ASSIGN_OR_RETURN(NpyHeader h, read_header(f, path));
  auto t = Tensor::create(h.dtype, h.dims);
  if (!t.ok()) return t.status().with_context(path);
  FERRY_RETURN_IF_ERROR(f.read_at(h.data_offset, t->raw(), h.data_bytes, "the array data"));
  return finish(std::move(t).value(), h);
}

Status write_npy(const std::string& path, const Tensor& t) {
  auto s = storable(t);
  if (!s.ok()) return s.status().with_context("while writing '" + path + "'");
  return write_file(path, encode_header(s->dtype(), s->dims()), s->raw(), s->nbytes());
}

// ---- .npz ----------------------------------------------------------------------------------------

namespace {

void put16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}

}  // namespace

Result<std::vector<std::pair<std::string, Tensor>>> read_npz(const std::string& path) {
  FERRY_ASSIGN_OR_RETURN(ZipArchive zip, ZipArchive::open(path, "an .npz"));
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<std::string> seen;
  for (const ZipMember& e : zip.members()) {
    if (e.name.size() < 4 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0) continue;
    std::string key = e.name.substr(0, e.name.size() - 4);
    if (!seen.insert(key).second) return Status::invalid(path + ": array '" + key + "' appears twice");
    FERRY_ASSIGN_OR_RETURN(std::string bytes,
                           zip.read(e, static_cast<uint64_t>(max_tensor_bytes()) + kMaxHeaderLen + 12));
    FERRY_ASSIGN_OR_RETURN(Tensor t, decode_npy(bytes.data(), bytes.size(), path + ":" + e.name));
    out.emplace_back(std::move(key), std::move(t));
  }
  return out;
}

Status write_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays, bool compress) {
  std::string body, central;
  const std::string where = "while writing '" + path + "'";
  for (const auto& [key, tensor] : arrays) {
    auto npy = encode_npy(tensor);
    if (!npy.ok()) return npy.status().with_context("array '" + key + "'").with_context(where);
    std::string name = key + ".npy";
    uint32_t crc = static_cast<uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(npy->data()), npy->size()));
    std::string packed;
    if (compress) {
      z_stream zs{};
      if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return Status::internal("zlib deflateInit2 failed");
      packed.resize(deflateBound(&zs, npy->size()));
      zs.next_in = reinterpret_cast<Bytef*>(npy->data());
      zs.avail_in = static_cast<uInt>(npy->size());
      zs.next_out = reinterpret_cast<Bytef*>(packed.data());
      zs.avail_out = static_cast<uInt>(packed.size());
      int rc = deflate(&zs, Z_FINISH);
      packed.resize(zs.total_out);
      deflateEnd(&zs);
      if (rc != Z_STREAM_END) return Status::internal("zlib deflate failed").with_context(where);
    } else {
      packed = std::move(npy).value();
    }
    uint64_t usize = compress ? npy->size() : packed.size();
    if (usize > 0xFFFFFFFEu || packed.size() > 0xFFFFFFFEu || body.size() > 0xFFFFFFFEu - packed.size())
      return Status::unsupported(where + ": .npz archives over 4 GiB are not supported for writing; use .npy files");
    uint32_t offset = static_cast<uint32_t>(body.size());
    uint16_t method = compress ? 8 : 0;
    // Local header: version 2.0, no flags, DOS date 1980-01-01 (reproducible bytes).
    std::string lh;
    put32(lh, 0x04034b50); put16(lh, 20); put16(lh, 0); put16(lh, method); put16(lh, 0); put16(lh, 33);
    put32(lh, crc); put32(lh, static_cast<uint32_t>(packed.size())); put32(lh, static_cast<uint32_t>(usize));
    put16(lh, static_cast<uint32_t>(name.size())); put16(lh, 0);
    body += lh + name;
    body += packed;
    put32(central, 0x02014b50); put16(central, 20); put16(central, 20); put16(central, 0); put16(central, method);
    put16(central, 0); put16(central, 33); put32(central, crc); put32(central, static_cast<uint32_t>(packed.size()));
    put32(central, static_cast<uint32_t>(usize)); put16(central, static_cast<uint32_t>(name.size()));
    put16(central, 0); put16(central, 0); put16(central, 0); put16(central, 0); put32(central, 0);
    put32(central, offset);
    central += name;
  }
  if (arrays.size() > 0xFFFF || body.size() + central.size() > 0xFFFFFFFEu)
    return Status::unsupported(where + ": .npz archives over 4 GiB or 65535 arrays are not supported for writing");
  std::string eocd;
  put32(eocd, 0x06054b50); put16(eocd, 0); put16(eocd, 0);
  put16(eocd, static_cast<uint32_t>(arrays.size())); put16(eocd, static_cast<uint32_t>(arrays.size()));
  put32(eocd, static_cast<uint32_t>(central.size())); put32(eocd, static_cast<uint32_t>(body.size())); put16(eocd, 0);
  body += central;
  body += eocd;
  return write_file(path, body, nullptr, 0);
}

}  // namespace ferry
