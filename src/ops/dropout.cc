// Dropout. In inference (the default, and always before opset 12) output = input and mask = all true.
// With training_mode true and ratio > 0 it drops elements: mask = u >= ratio with u uniform in [0, 1),
// output = x * mask / (1 - ratio). u comes from MT19937 seeded with the `seed` attribute, drawn exactly
// as numpy's legacy RandomState(seed).uniform does, which is what the ONNX reference uses.
#include <cmath>
#include <random>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

// numpy's legacy MT19937 (init_genrand seeding) and its 53-bit random_sample.
class NumpyMt19937 {
 public:
  explicit NumpyMt19937(uint32_t seed) {
    state_[0] = seed;
    for (int i = 1; i < 624; ++i) state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + i;
    pos_ = 624;
  }
  uint32_t next_u32() {
    if (pos_ >= 624) refill();
    uint32_t y = state_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }
  double next_double() {
    const uint32_t a = next_u32() >> 5, b = next_u32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

 private:
  void refill() {
    for (int i = 0; i < 624; ++i) {
      const uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % 624] & 0x7fffffffu);
      state_[i] = state_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    pos_ = 0;
  }
  uint32_t state_[624];
  int pos_ = 624;
};

Status dropout_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  if (!is_floating(x->dtype())) return unsupported_dtype("Dropout", x->dtype());
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 12) {
    ratio = ctx.node().attr_float("ratio", 0.5f);
  } else {
    if (has_tensor_input(ctx, 1)) {
      const Tensor& r = ctx.input(1);
      if (r.numel() != 1 || !is_floating(r.dtype())) return Status::invalid("ratio must be a floating scalar");
      ratio = r.as_double(0);
    }
    if (has_tensor_input(ctx, 2)) {
      const Tensor& t = ctx.input(2);
      if (t.numel() != 1 || t.dtype() != DType::kBool) return Status::invalid("training_mode must be a bool scalar");
      training = t.data<bool>()[0];
    }
  }
  if (!(ratio >= 0 && ratio < 1) && training)
    return Status::invalid("ratio " + std::to_string(ratio) + " must be in [0, 1)");
  // Before opset 10 the mask has the input's dtype; from 10 on it is bool.
  const DType mask_dtype = ctx.opset() >= 10 ? DType::kBool : x->dtype();
  if (!training || ratio == 0) {
    ctx.set_output(0, *x);
    if (ctx.wants_output(1)) {
      FERRY_ASSIGN_OR_RETURN(Tensor ones, Tensor::create(DType::kBool, x->dims()));
      for (int64_t i = 0; i < ones.numel(); ++i) ones.data<bool>()[i] = true;
      ctx.set_output(1, mask_dtype == DType::kBool ? ones : ones.cast(mask_dtype));
    }
    return Status();
  }
  uint32_t seed;
  if (ctx.node().has_attr("seed")) {
    seed = static_cast<uint32_t>(ctx.node().attr_int("seed", 0));
  } else {
    seed = std::random_device{}();
  }
  NumpyMt19937 rng(seed);
  FERRY_ASSIGN_OR_RETURN(Tensor mask, Tensor::create(DType::kBool, x->dims()));
  for (int64_t i = 0; i < mask.numel(); ++i) mask.data<bool>()[i] = rng.next_double() >= ratio;
  FERRY_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0, x->dtype(), x->dims()));
  dispatch_floating(x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C scale = static_cast<C>(T(static_cast<C>(1.0 / (1.0 - ratio))));
    const T* px = x->data<T>();
    T* py = y->data<T>();
    for (int64_t i = 0; i < x->numel(); ++i) py[i] = mask.data<bool>()[i] ? T(static_cast<C>(px[i]) * scale) : T(C(0));
  });
  if (ctx.wants_output(1)) ctx.set_output(1, mask);
  return Status();
}

Status dropout_infer(InferContext& ctx) {
  FERRY_RETURN_IF_ERROR(infer_same_as_input(ctx));
  const std::optional<Shape>* s = ctx.input_shape(0);
  ctx.set_output(1, ctx.opset() >= 10 ? DType::kBool : ctx.input_dtype(0), s ? *s : std::nullopt);
  return Status();
}
}  // namespace

void register_dropout(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Dropout", .since_version = 7, .min_inputs = 1, .max_inputs = 3,
                 .infer = dropout_infer, .kernel = dropout_kernel});
}

}  // namespace ferry::ops
