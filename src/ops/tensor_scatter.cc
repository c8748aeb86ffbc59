// TensorScatter (opset 24, KV-cache update): copy past_cache, then write `update` along `axis` starting at
// write_indices[batch] for every batch entry; mode "circular" wraps positions around the cache length.
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Status tensor_scatter_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* cache, tensor_input(ctx, 0, "past_cache"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* upd, tensor_input(ctx, 1, "update"));
  const std::string mode = ctx.node().attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return Status::invalid("mode '" + mode + "' must be linear or circular");
  const int64_t r = cache->rank();
  if (r < 2) return Status::invalid("past_cache must have rank >= 2, got " + cache->describe());
  if (upd->rank() != r || upd->dtype() != cache->dtype())
    return Status::invalid("update " + upd->describe() + " must match past_cache " + cache->describe() +
                           " in rank and dtype");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", -2), r));
  if (axis == 0) return Status::invalid("axis must not be the batch axis 0");
  for (int64_t d = 0; d < r; ++d) {
    if (d != axis && upd->dims()[d] != cache->dims()[d])
      return Status::invalid("update " + upd->describe() + " and past_cache " + cache->describe() +
                             " differ in dim " + std::to_string(d));
    if (d == axis && upd->dims()[d] > cache->dims()[d])
      return Status::invalid("update " + upd->describe() + " is longer than past_cache " + cache->describe() +
                             " along axis " + std::to_string(d));
  }
  const int64_t batch = cache->dims()[0];
  std::vector<int64_t> wi(batch, 0);
  if (has_tensor_input(ctx, 2)) {
    FERRY_ASSIGN_OR_RETURN(wi, int_values(ctx.input(2), "write_indices"));
    if (static_cast<int64_t>(wi.size()) != batch)
      return Status::invalid("write_indices must have one entry per batch (" + std::to_string(batch) + ")");
  }
  const int64_t max_len = cache->dims()[axis], len = upd->dims()[axis];
  int64_t prefix = 1, inner = 1;
  for (int64_t d = 1; d < axis; ++d) prefix *= cache->dims()[d];  // per batch
  for (int64_t d = axis + 1; d < r; ++d) inner *= cache->dims()[d];
  Tensor out = cache->clone();
  const size_t es = dtype_size(cache->dtype());
  const auto* src = static_cast<const uint8_t*>(upd->raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t b = 0; b < batch; ++b) {
    if (wi[b] < 0 || (mode == "linear" && wi[b] + len > max_len))
      return Status::invalid("write_indices[" + std::to_string(b) + "] = " + std::to_string(wi[b]) +
                             " with an update of length " + std::to_string(len) + " does not fit the cache length " +
                             std::to_string(max_len));
    for (int64_t p = 0; p < prefix; ++p) {
      const int64_t row = b * prefix + p;
      for (int64_t s = 0; s < len; ++s) {
        int64_t pos = wi[b] + s;
        if (mode == "circular") pos %= max_len;
        copy_elems(dst + ((row * max_len + pos) * inner) * es, src + ((row * len + s) * inner) * es, inner, es);
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status();
}
}  // namespace

void register_tensor_scatter(OpRegistry& r) {
  r.add(OpSchema{.op_type = "TensorScatter", .since_version = 24, .min_inputs = 2, .max_inputs = 3,
                 .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); },
                 .kernel = tensor_scatter_kernel});
}

}  // namespace ferry::ops
