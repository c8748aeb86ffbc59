#include "frontend/onnx/onnx_types.h"

#include <string>

namespace ferry::frontend {

const char* onnx_type_name(int32_t e) {
  static const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
                                "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
                                "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  if (e >= 0 && e < static_cast<int32_t>(sizeof(names) / sizeof(names[0]))) return names[e];
  return "UNKNOWN";
}

Result<DType> dtype_from_onnx(int32_t e) {
  switch (e) {
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
    default:
      return Status::unsupported(std::string("element type ") + onnx_type_name(e) + " (" + std::to_string(e) +
                                 ") is not supported by ferry");
  }
}

int32_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::kFloat32: return 1;
    case DType::kUInt8: return 2;
    case DType::kInt8: return 3;
    case DType::kUInt16: return 4;
    case DType::kInt16: return 5;
    case DType::kInt32: return 6;
    case DType::kInt64: return 7;
    case DType::kBool: return 9;
    case DType::kFloat16: return 10;
    case DType::kFloat64: return 11;
    case DType::kUInt32: return 12;
    case DType::kUInt64: return 13;
    case DType::kBFloat16: return 16;
    default: return 0;
  }
}

}  // namespace ferry::frontend
