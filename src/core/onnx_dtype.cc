#include "core/onnx_dtype.h"

#include <string>

namespace ferry {

const char* onnx_type_name(int64_t code) {
  static const char* names[] = {"undefined",    "float",          "uint8",      "int8",           "uint16",
                                "int16",        "int32",          "int64",      "string",         "bool",
                                "float16",      "double",         "uint32",     "uint64",         "complex64",
                                "complex128",   "bfloat16",       "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                "float8e5m2fnuz", "uint4",        "int4",       "float4e2m1",     "float8e8m0",
                                "uint2",        "int2"};
  if (code >= 0 && code < static_cast<int64_t>(sizeof(names) / sizeof(names[0]))) return names[code];
  return "unknown";
}

Result<int> onnx_code_of(DType t) {
  for (int code : {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16}) {
    auto d = dtype_from_onnx(code);
    if (d.ok() && *d == t) return code;
  }
  return Status::invalid("dtype " + std::string(dtype_name(t)) + " has no ONNX element type");
}

Result<DType> dtype_from_onnx(int64_t code) {
  switch (code) {
    case 1: return DType::kFloat32;
    case 2: return DType::kUInt8;
    case 3: return DType::kInt8;
    case 4: return DType::kUInt16;
    case 5: return DType::kInt16;
    case 6: return DType::kInt32;
    case 7: return DType::kInt64;
    case 9: return DType::kBool;
    case 10: return DType::kFloat16;
    case 11: return DType::kFloat64;
    case 12: return DType::kUInt32;
    case 13: return DType::kUInt64;
    case 16: return DType::kBFloat16;
    case 8: return Status::unsupported("string tensors are not supported by ferry");
    default: break;
  }
  std::string name = onnx_type_name(code);
  if (name == "unknown") return Status::invalid("unknown ONNX element type " + std::to_string(code));
  return Status::unsupported("element type " + name + " is not supported by ferry");
}

}  // namespace ferry
