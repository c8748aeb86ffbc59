// Mapping between ONNX's TensorProto element types and ferry dtypes.
#pragma once
#include "core/dtype.h"
#include "core/status.h"

namespace ferry::frontend {

Result<DType> dtype_from_onnx(int32_t elem_type);
int32_t dtype_to_onnx(DType t);
const char* onnx_type_name(int32_t elem_type);

}  // namespace ferry::frontend
