// ONNX TensorProto.DataType codes -> DType. In core because both the ONNX frontend (tensor and value
// types) and ops (Cast's `to`, the `dtype`/`output_datatype` attributes) read these codes.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace ferry {

// The DType for an ONNX element-type code; types ferry lacks (string, complex, float8, int4...) are an
// error that names the type.
Result<DType> dtype_from_onnx(int64_t code);
// The ONNX element-type code of a DType (the inverse of dtype_from_onnx).
Result<int> onnx_code_of(DType t);
// The ONNX name of a code, lowercase ("float8e4m3fn"), or "unknown".
const char* onnx_type_name(int64_t code);

}  // namespace ferry
