// LabelEncoder (ai.onnx.ml 1, 2, 4): maps each element through a keys -> values table, with a default
// for missing keys. ferry has no string tensors, so only numeric keys and values are supported
// (keys_int64s / keys_floats / keys_tensor, values_int64s / values_floats / values_tensor); version 1,
// which only maps strings, and any *_strings attribute are reported as unsupported.
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops/op.h"
#include "ops/util/broadcast.h"

namespace ferry::ops {
namespace {

const char* kStringsUnsupported = "string tensors are not supported by ferry";

struct LabelTable {
  DType key_dtype = DType::kUndefined;
  bool float_keys = false;
  std::unordered_map<int64_t, int64_t> int_keys;  // key -> position in values
  std::map<double, int64_t> float_key_map;        // -0.0 and 0.0 are one key, as in a Python dict
  int64_t nan_key = -1;                           // position for a NaN key (any NaN matches)
  Tensor values;                                   // 1-D, the output dtype
  Tensor fallback;                                 // one element, the output dtype
};

// The values table and the output dtype, without building the key map (also used by inference).
Result<Tensor> read_values(const ir::Node& node, Tensor* fallback) {
  if (node.has_attr("values_strings") || node.has_attr("keys_strings") || node.has_attr("classes_strings"))
    return Status::unsupported(std::string("LabelEncoder with string keys or values: ") + kStringsUnsupported);
  Tensor values;
  if (const Tensor* vt = node.attr_tensor("values_tensor")) {
    values = *vt;
    if (fallback) {
      if (const Tensor* dt = node.attr_tensor("default_tensor")) {
        if (dt->numel() != 1) return Status::invalid("default_tensor must hold one value; got " + dt->describe());
        *fallback = dt->cast(values.dtype());
      } else {
        // The spec's default: -1 for integer values, -0.0 for floating ones.
        *fallback = is_floating(values.dtype()) ? Tensor::scalar<double>(-0.0).cast(values.dtype())
                                                : Tensor::scalar<int64_t>(-1).cast(values.dtype());
      }
    }
  } else if (node.has_attr("values_int64s")) {
    values = Tensor::from_vector(node.attr_ints("values_int64s"));
    if (fallback) *fallback = Tensor::scalar<int64_t>(node.attr_int("default_int64", -1));
  } else if (node.has_attr("values_floats")) {
    values = Tensor::from_vector(node.attr_floats("values_floats"));
    if (fallback) *fallback = Tensor::scalar<float>(node.attr_float("default_float", -0.0f));
  } else {
    return Status::invalid("LabelEncoder needs one of values_int64s, values_floats or values_tensor");
  }
  if (values.dtype() == DType::kBool || values.dtype() == DType::kUndefined)
    return Status::invalid("LabelEncoder values cannot be " + values.describe());
  return values;
}

Result<LabelTable> build_table(const ir::Node& node) {
  LabelTable t;
  FERRY_ASSIGN_OR_RETURN(t.values, read_values(node, &t.fallback));
  std::vector<double> float_keys;
  std::vector<int64_t> int_keys;
  if (const Tensor* kt = node.attr_tensor("keys_tensor")) {
    t.key_dtype = kt->dtype();
    t.float_keys = is_floating(kt->dtype());
    if (t.float_keys) float_keys = kt->to_double_vector();
    else int_keys = kt->to_int64_vector();
  } else if (node.has_attr("keys_int64s")) {
    t.key_dtype = DType::kInt64;
    int_keys = node.attr_ints("keys_int64s");
  } else if (node.has_attr("keys_floats")) {
    t.key_dtype = DType::kFloat32;
    t.float_keys = true;
    for (float f : node.attr_floats("keys_floats")) float_keys.push_back(f);
  } else {
    return Status::invalid("LabelEncoder needs one of keys_int64s, keys_floats or keys_tensor");
  }
  const int64_t n_keys = static_cast<int64_t>(t.float_keys ? float_keys.size() : int_keys.size());
  if (n_keys != t.values.numel())
    return Status::invalid("LabelEncoder has " + std::to_string(n_keys) + " keys but " + std::to_string(t.values.numel()) +
                           " values");
  // A repeated key maps to its last value.
  for (int64_t i = 0; i < n_keys; ++i) {
    if (!t.float_keys) t.int_keys[int_keys[i]] = i;
    else if (std::isnan(float_keys[i])) t.nan_key = i;
    else t.float_key_map[float_keys[i]] = i;
  }
  return t;
}

Status label_encoder_kernel(KernelContext& ctx) {
  if (ctx.opset() < 2)
    return Status::unsupported(std::string("LabelEncoder version 1 maps strings only: ") + kStringsUnsupported);
  if (!ctx.has_input(0) || !ctx.input_value(0)->is_tensor()) return Status::invalid("input X must be a tensor");
  FERRY_ASSIGN_OR_RETURN(LabelTable table, build_table(ctx.node()));
  const Tensor& x = ctx.input(0);
  if (x.dtype() != table.key_dtype)
    return Status::invalid("X is " + x.describe() + " but the keys are " + std::string(dtype_name(table.key_dtype)));
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, table.values.dtype(), x.dims()));
  const size_t es = dtype_size(table.values.dtype());
  const auto* values = static_cast<const unsigned char*>(table.values.raw());
  const auto* fallback = static_cast<const unsigned char*>(table.fallback.raw());
  auto* dst = static_cast<unsigned char*>(out->raw());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t pos = -1;
    if (table.float_keys) {
      const double k = x.as_double(i);
      if (std::isnan(k)) {
        pos = table.nan_key;
      } else if (auto it = table.float_key_map.find(k); it != table.float_key_map.end()) {
        pos = it->second;
      }
    } else if (auto it = table.int_keys.find(x.as_int64(i)); it != table.int_keys.end()) {
      pos = it->second;
    }
    std::memcpy(dst + i * es, pos >= 0 ? values + pos * es : fallback, es);
  }
  return Status();
}

Status label_encoder_infer(InferContext& ctx) {
  const std::optional<Shape>* xs = ctx.input_shape(0);
  Result<Tensor> values = read_values(ctx.node(), nullptr);
  // An unusable table is reported by the kernel; inference only leaves the dtype unknown.
  const DType dt = values.ok() ? values->dtype() : DType::kUndefined;
  ctx.set_output(0, dt, xs ? *xs : std::nullopt);
  return Status();
}

}  // namespace

void register_ml_label_encoder(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "LabelEncoder",
      .domain = "ai.onnx.ml",
      .since_version = 1,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = label_encoder_infer,
      .kernel = label_encoder_kernel,
  });
}

}  // namespace ferry::ops
