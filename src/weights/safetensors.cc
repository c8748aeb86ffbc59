// .safetensors (Hugging Face): an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}, then
// the data, offsets relative to its start. The format holds no code by design; the reader still
// checks every offset, size and dtype against the file before reading.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/read_only_file.h"
#include "core/shape.h"
#include "weights/checkpoint.h"

namespace ferry::weights {

namespace {

// safetensors' own cap on the header is 100 MB.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

constexpr DtypeName kDtypes[] = {
    {"F64", DType::kFloat64}, {"F32", DType::kFloat32}, {"F16", DType::kFloat16}, {"BF16", DType::kBFloat16},
    {"I64", DType::kInt64},   {"I32", DType::kInt32},   {"I16", DType::kInt16},   {"I8", DType::kInt8},
    {"U64", DType::kUInt64},  {"U32", DType::kUInt32},  {"U16", DType::kUInt16},  {"U8", DType::kUInt8},
    {"BOOL", DType::kBool},
};

struct Entry {
  std::string key;
  DType dtype;
  std::vector<int64_t> dims;
  uint64_t begin = 0, end = 0;
};

Result<Entry> parse_entry(const std::string& key, const nlohmann::ordered_json& v, const std::string& where) {
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    return Status::invalid(where + ": needs dtype, shape and data_offsets");
  const auto &dt = v["dtype"], &shape = v["shape"], &off = v["data_offsets"];
  if (!dt.is_string() || !shape.is_array() || !off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned())
    return Status::invalid(where + ": dtype must be a string, shape a list, data_offsets two offsets");
  Entry e;
  e.key = key;
  const std::string name = dt.get<std::string>();
  std::optional<DType> dtype = dtype_named(kDtypes, name);
  if (!dtype) return Status::unsupported(where + ": dtype " + name + " is not supported");
  e.dtype = *dtype;
  for (const auto& d : shape) {
    if (!d.is_number_unsigned()) return Status::invalid(where + ": shape holds a value that is not a size");
    if (d.get<uint64_t>() > (uint64_t{1} << 62)) return Status::invalid(where + ": absurd dimension");
    e.dims.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  return e;
}

Result<std::vector<Entry>> parse_header(const std::string& header, const std::string& path, Checkpoint& ck) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::invalid(path + ": the safetensors header is not a JSON object");
  std::vector<Entry> entries;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it.value().is_object())
        for (auto m = it.value().begin(); m != it.value().end(); ++m)
          ck.other.emplace_back("__metadata__." + m.key(), m.value().is_string() ? m.value().get<std::string>() : m.value().dump());
      continue;
    }
    FERRY_ASSIGN_OR_RETURN(Entry e, parse_entry(it.key(), it.value(), path + ": tensor '" + it.key() + "'"));
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  return entries;
}

}  // namespace

Result<Checkpoint> read_safetensors(const std::string& path) {
  ReadOnlyFile f;
  FERRY_RETURN_IF_ERROR(f.open(path));
  unsigned char len_bytes[8];
  FERRY_RETURN_IF_ERROR(f.read_at(0, len_bytes, 8, "the safetensors header length"));
  const uint64_t n = load_le64(len_bytes);
  if (n > kMaxHeaderBytes || n > f.size() - 8)
    return Status::invalid(path + ": safetensors header of " + std::to_string(n) + " bytes in a file of " +
                           std::to_string(f.size()) + " (not a safetensors file, or truncated)");
  std::string header(n, '\0');
  FERRY_RETURN_IF_ERROR(f.read_at(8, header.data(), n, "the safetensors header"));
  Checkpoint ck;
  ck.path = path;
  ck.format = "safetensors";
  FERRY_ASSIGN_OR_RETURN(std::vector<Entry> entries, parse_header(header, path, ck));
  const uint64_t data_at = 8 + n, data_size = f.size() - data_at;
  uint64_t covered = 0;
  for (const Entry& e : entries) {
    const std::string where = path + ": tensor '" + e.key + "'";
    if (e.begin > e.end || e.end > data_size)
      return Status::invalid(where + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                             "] outside the " + std::to_string(data_size) + " data bytes");
    if (e.begin < covered) return Status::invalid(where + ": its data overlaps the previous tensor's");
    covered = e.end;
    // The size is checked against the data range before anything is allocated.
    auto numel_or = checked_numel(e.dims);
    if (!numel_or.ok()) return Status(numel_or.status()).with_context(where);
    const int64_t numel = *numel_or;
    const uint64_t nbytes = static_cast<uint64_t>(numel) * dtype_size(e.dtype);
    if (nbytes != e.end - e.begin)
      return Status::invalid(where + ": " + std::to_string(e.end - e.begin) + " data bytes for a tensor of " +
                             std::to_string(nbytes));
    FERRY_ASSIGN_OR_RETURN(Tensor t, Tensor::create(e.dtype, e.dims));
    FERRY_RETURN_IF_ERROR(f.read_at(data_at + e.begin, t.raw(), t.nbytes(), "tensor data"));
    ck.tensors.push_back({e.key, std::move(t)});
  }
  return ck;
}

}  // namespace ferry::weights
