// TensorProto -> Tensor, including external data. External data is resolved only inside the model's
// folder: absolute paths, "..", symlinks and ranges past the end of the file are refused, so a hostile
// model cannot make ferry read anything else.
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

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

Status read_external(const onnx::TensorProto& p, const std::string& base_dir, size_t expected, void* dst) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (...) {
      return Status::invalid("external data key '" + kv.key() + "' has a non-numeric value '" + kv.value() + "'");
    }
  }
  fs::path path;
  FERRY_RETURN_IF_ERROR(check_external_path(base_dir, location, path));
  if (offset < 0) return Status::invalid("external data offset " + std::to_string(offset) + " is negative");
  if (length >= 0 && static_cast<size_t>(length) != expected)
    return Status::invalid("external data length " + std::to_string(length) + " does not match the tensor's " +
                           std::to_string(expected) + " bytes");
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) return Status::io("cannot read the size of external data file '" + location + "'");
  if (static_cast<uint64_t>(offset) > size || size - offset < expected)
    return Status::invalid("external data in '" + location + "' at offset " + std::to_string(offset) + " with " +
                           std::to_string(expected) + " bytes runs past the end of the file (" +
                           std::to_string(size) + " bytes)");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::io("cannot open external data file '" + location + "'");
  f.seekg(offset);
  f.read(static_cast<char*>(dst), static_cast<std::streamsize>(expected));
  if (!f) return Status::io("short read from external data file '" + location + "'");
  return Status();
}

template <class T, class Field>
Status copy_field(const Field& field, Tensor& t, const char* field_name) {
  if (static_cast<int64_t>(field.size()) != t.numel())
    return Status::invalid(std::string(field_name) + " holds " + std::to_string(field.size()) +
                           " values but the shape needs " + std::to_string(t.numel()));
  T* dst = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<T>(field[static_cast<int>(i)]);
  return Status();
}

Status copy_halves(const google::protobuf::RepeatedField<int32_t>& field, Tensor& t) {
  if (static_cast<int64_t>(field.size()) != t.numel())
    return Status::invalid("int32_data holds " + std::to_string(field.size()) + " values but the shape needs " +
                           std::to_string(t.numel()));
  uint16_t* dst = t.data<uint16_t>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<uint16_t>(field[static_cast<int>(i)]);
  return Status();
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
  auto created = Tensor::create(*dt, dims);
  if (!created.ok()) return created.status().with_context(label);
  Tensor t = std::move(created).value();
  size_t expected = t.nbytes();
  Status st;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    st = read_external(p, base_dir, expected, t.raw());
  } else if (p.has_raw_data()) {
    if (p.raw_data().size() != expected)
      st = Status::invalid("raw_data has " + std::to_string(p.raw_data().size()) + " bytes but " +
                           t.describe() + " needs " + std::to_string(expected));
    else if (expected)
      std::memcpy(t.raw(), p.raw_data().data(), expected);
  } else if (t.numel() == 0) {
    // nothing to copy
  } else {
    switch (*dt) {
      case DType::kFloat32: st = copy_field<float>(p.float_data(), t, "float_data"); break;
      case DType::kFloat64: st = copy_field<double>(p.double_data(), t, "double_data"); break;
      case DType::kInt64: st = copy_field<int64_t>(p.int64_data(), t, "int64_data"); break;
      case DType::kUInt32: st = copy_field<uint32_t>(p.uint64_data(), t, "uint64_data"); break;
      case DType::kUInt64: st = copy_field<uint64_t>(p.uint64_data(), t, "uint64_data"); break;
      case DType::kInt32: st = copy_field<int32_t>(p.int32_data(), t, "int32_data"); break;
      case DType::kInt16: st = copy_field<int16_t>(p.int32_data(), t, "int32_data"); break;
      case DType::kInt8: st = copy_field<int8_t>(p.int32_data(), t, "int32_data"); break;
      case DType::kUInt16: st = copy_field<uint16_t>(p.int32_data(), t, "int32_data"); break;
      case DType::kUInt8: st = copy_field<uint8_t>(p.int32_data(), t, "int32_data"); break;
      case DType::kBool: st = copy_field<bool>(p.int32_data(), t, "int32_data"); break;
      case DType::kFloat16:
      case DType::kBFloat16: st = copy_halves(p.int32_data(), t); break;
      default: st = Status::unsupported("unsupported tensor dtype");
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
