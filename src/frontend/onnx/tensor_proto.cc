// TensorProto -> Tensor, including external data. External data is resolved only inside the model's
// folder: absolute paths, "..", symlinks and ranges past the end of the file are refused, so a hostile
// model cannot make ferry read anything else.
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "frontend/onnx/import.h"
#include "core/onnx_dtype.h"
#include "onnx/onnx-data_pb.h"
#include "onnx/onnx_pb.h"

namespace ferry::frontend {

namespace fs = std::filesystem;

namespace {

Status check_external_path(const std::string& base_dir, const std::string& location, fs::path& out) {
  if (base_dir.empty()) return Status::invalid("external data '" + location + "' is not allowed here");
  if (location.empty()) return Status::invalid("external data has an empty location");
  fs::path rel(location);
  if (rel.is_absolute() || location[0] == '/' || location[0] == '\\')
    return Status::invalid("external data location '" + location + "' is an absolute path; only files inside the model's folder are allowed");
  for (const auto& part : rel) {
    if (part == "..")
      return Status::invalid("external data location '" + location + "' contains '..'; only files inside the model's folder are allowed");
  }
  // Walk every component: none may be a symlink (that could point outside the folder).
  fs::path cur(base_dir);
  for (const auto& part : rel) {
    if (part.empty() || part == ".") continue;
    cur /= part;
    struct stat st;
    if (lstat(cur.c_str(), &st) != 0)
      return Status::io("external data file '" + location + "' does not exist in the model's folder");
    if (S_ISLNK(st.st_mode))
      return Status::invalid("external data location '" + location + "' is a symlink; only regular files inside the model's folder are allowed");
  }
  struct stat st;
  if (stat(cur.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::invalid("external data location '" + location + "' is not a regular file");
  // Belt and braces: the canonical path must still be under the canonical base.
  std::error_code ec;
  fs::path canon = fs::canonical(cur, ec), canon_base = fs::canonical(base_dir, ec);
  if (ec) return Status::io("cannot resolve external data location '" + location + "'");
  auto [bi, ci] = std::mismatch(canon_base.begin(), canon_base.end(), canon.begin(), canon.end());
  if (bi != canon_base.end())
    return Status::invalid("external data location '" + location + "' resolves outside the model's folder");
  out = cur;
  return Status();
}

// Where a tensor's external data lies, checked before anything is allocated for it.
struct ExternalData {
  fs::path path;
  std::string location;
  int64_t offset = 0;
};

Result<ExternalData> locate_external(const onnx::TensorProto& p, const std::string& base_dir, size_t expected) {
  ExternalData e;
  int64_t length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location") e.location = kv.value();
      else if (kv.key() == "offset") e.offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (...) {
      return Status::invalid("external data key '" + kv.key() + "' has a non-numeric value '" + kv.value() + "'");
    }
  }
  FERRY_RETURN_IF_ERROR(check_external_path(base_dir, e.location, e.path));
  if (e.offset < 0) return Status::invalid("external data offset " + std::to_string(e.offset) + " is negative");
  if (length >= 0 && static_cast<size_t>(length) != expected)
    return Status::invalid("external data length " + std::to_string(length) + " does not match the tensor's " +
                           std::to_string(expected) + " bytes");
  std::error_code ec;
  auto size = fs::file_size(e.path, ec);
  if (ec) return Status::io("cannot read the size of external data file '" + e.location + "'");
  if (static_cast<uint64_t>(e.offset) > size || size - e.offset < expected)
    return Status::invalid("external data in '" + e.location + "' at offset " + std::to_string(e.offset) + " with " +
                           std::to_string(expected) + " bytes runs past the end of the file (" +
                           std::to_string(size) + " bytes)");
  return e;
}

Status read_external(const ExternalData& e, size_t expected, void* dst) {
  std::ifstream f(e.path, std::ios::binary);
  if (!f) return Status::io("cannot open external data file '" + e.location + "'");
  f.seekg(e.offset);
  f.read(static_cast<char*>(dst), static_cast<std::streamsize>(expected));
  if (!f) return Status::io("short read from external data file '" + e.location + "'");
  return Status();
}

// The repeated field that holds a dtype's values when there is no raw_data (ONNX's TensorProto rules):
// its name and how many values it has; nullopt for a dtype without one.
struct TypedField {
  const char* name;
  int64_t size;
};

std::optional<TypedField> typed_field(const onnx::TensorProto& p, DType dt) {
  switch (dt) {
    case DType::kFloat32: return TypedField{"float_data", p.float_data_size()};
    case DType::kFloat64: return TypedField{"double_data", p.double_data_size()};
    case DType::kInt64: return TypedField{"int64_data", p.int64_data_size()};
    case DType::kUInt32:
    case DType::kUInt64: return TypedField{"uint64_data", p.uint64_data_size()};
    case DType::kInt32:
    case DType::kInt16:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kUInt8:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kBFloat16: return TypedField{"int32_data", p.int32_data_size()};
    default: return std::nullopt;
  }
}

// The data the proto holds for `numel` elements of `expected` bytes is all there (raw_data, external data
// or the typed field): checked before the tensor is allocated, so a small file that declares a huge
// tensor is refused without allocating it.
Status check_data_present(const onnx::TensorProto& p, DType dt, const std::vector<int64_t>& dims, int64_t numel,
                          size_t expected) {
  if (p.has_raw_data()) {
    if (p.raw_data().size() != expected)
      return Status::invalid("raw_data has " + std::to_string(p.raw_data().size()) + " bytes but " +
                             std::string(dtype_name(dt)) + dims_to_string(dims) +
                             " needs " + std::to_string(expected));
    return Status();
  }
  if (numel == 0) return Status();
  const auto field = typed_field(p, dt);
  if (!field) return Status::unsupported("unsupported tensor dtype");
  if (field->size != numel)
    return Status::invalid(std::string(field->name) + " holds " + std::to_string(field->size) +
                           " values but the shape needs " + std::to_string(numel));
  return Status();
}

// Copies a typed field whose size check_data_present has checked.
template <class T, class Field>
void copy_field(const Field& field, Tensor& t) {
  T* dst = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<T>(field[static_cast<int>(i)]);
}

}  // namespace

Result<Tensor> tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  std::string label = p.name().empty() ? "tensor" : "tensor '" + p.name() + "'";
  if (p.data_type() == onnx::TensorProto::STRING)
    return Status::unsupported(label + " holds strings; string tensors are not supported by ferry");
  auto dt = dtype_from_onnx(p.data_type());
  if (!dt.ok()) return dt.status().with_context(label);
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    if (d < 0) return Status::invalid(label + " has a negative dimension " + dims_to_string(dims));
  auto numel = checked_numel(dims);
  if (!numel.ok()) return numel.status().with_context(label);
  const size_t expected = static_cast<size_t>(*numel) * dtype_size(*dt);
  std::optional<ExternalData> external;
  Status st;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    auto located = locate_external(p, base_dir, expected);
    if (!located.ok()) return located.status().with_context(label);
    external = std::move(located).value();
  } else {
    st = check_data_present(p, *dt, dims, *numel, expected);
    if (!st.ok()) return st.with_context(label);
  }
  auto created = Tensor::create(*dt, dims);
  if (!created.ok()) return created.status().with_context(label);
  Tensor t = std::move(created).value();
  if (external) {
    st = read_external(*external, expected, t.raw());
  } else if (p.has_raw_data()) {
    if (expected) std::memcpy(t.raw(), p.raw_data().data(), expected);
  } else if (t.numel() != 0) {
    switch (*dt) {
      case DType::kFloat32: copy_field<float>(p.float_data(), t); break;
      case DType::kFloat64: copy_field<double>(p.double_data(), t); break;
      case DType::kInt64: copy_field<int64_t>(p.int64_data(), t); break;
      case DType::kUInt32: copy_field<uint32_t>(p.uint64_data(), t); break;
      case DType::kUInt64: copy_field<uint64_t>(p.uint64_data(), t); break;
      case DType::kInt32: copy_field<int32_t>(p.int32_data(), t); break;
      case DType::kInt16: copy_field<int16_t>(p.int32_data(), t); break;
      case DType::kInt8: copy_field<int8_t>(p.int32_data(), t); break;
      case DType::kUInt16: copy_field<uint16_t>(p.int32_data(), t); break;
      case DType::kUInt8: copy_field<uint8_t>(p.int32_data(), t); break;
      case DType::kBool: copy_field<bool>(p.int32_data(), t); break;
      case DType::kFloat16:
      case DType::kBFloat16: copy_field<uint16_t>(p.int32_data(), t); break;
      default: break;  // check_data_present refused it
    }
  }
  if (!st.ok()) return st.with_context(label);
  return t;
}

namespace {
Result<std::string> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::io("cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return bytes;
}

Result<RtValue> value_from_sequence(const onnx::SequenceProto& s, const std::string& base) {
  if (s.elem_type() != onnx::SequenceProto::TENSOR && s.tensor_values_size() == 0)
    return Status::unsupported("only sequences of tensors are supported");
  std::vector<Tensor> items;
  for (const auto& tp : s.tensor_values()) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, base));
    items.push_back(std::move(t));
  }
  return RtValue::make_sequence(std::move(items));
}
}  // namespace

Result<Tensor> read_tensor_pb(const std::string& path) {
  FERRY_ASSIGN_OR_RETURN(std::string bytes, read_file_bytes(path));
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) return Status::invalid("'" + path + "' is not a valid TensorProto");
  return tensor_from_proto(p, fs::path(path).parent_path().string()).with_context(path);
}

Result<RtValue> read_value_pb(const std::string& path, ir::ValueKind kind) {
  FERRY_ASSIGN_OR_RETURN(std::string bytes, read_file_bytes(path));
  std::string base = fs::path(path).parent_path().string();
  if (kind == ir::ValueKind::kSequence) {
    onnx::SequenceProto seq;
    if (!seq.ParseFromString(bytes)) return Status::invalid("'" + path + "' is not a valid SequenceProto");
    return value_from_sequence(seq, base).with_context(path);
  }
  if (kind == ir::ValueKind::kOptional) {
    onnx::OptionalProto opt;
    if (!opt.ParseFromString(bytes)) return Status::invalid("'" + path + "' is not a valid OptionalProto");
    if (opt.has_tensor_value()) {
      FERRY_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(opt.tensor_value(), base).with_context(path));
      return RtValue(std::move(t));
    }
    if (opt.has_sequence_value()) return value_from_sequence(opt.sequence_value(), base).with_context(path);
    return RtValue::none();
  }
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) return Status::invalid("'" + path + "' is not a valid TensorProto");
  FERRY_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(p, base).with_context(path));
  return RtValue(std::move(t));
}

}  // namespace ferry::frontend
