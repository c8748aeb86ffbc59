// CausalConvWithState (opset 27): a stateful causal depthwise 1-D convolution with optional fused
// SiLU. The input is left-padded with past_state (zeros when absent), convolved per channel with
// valid padding, and the last k-1 padded positions become present_state for the next call.
#include <cmath>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops {
namespace {

Result<bool> read_activation(const ir::Node& node) {
  const std::string act = node.attr_string("activation", "none");
  if (act == "none") return false;
  if (act == "silu" || act == "swish") return true;
  return Status::invalid("activation must be 'none', 'silu' or 'swish'; got '" + act + "'");
}

template <class T>
void run_causal_conv(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor* past, bool silu,
                     Tensor& out, Tensor& present) {
  using C = compute_t<T>;
  const int64_t batch = x.dim(0), channels = x.dim(1), length = x.dim(2), k = w.dim(2);
  const int64_t padded_len = length + k - 1;
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  T* po = out.data<T>();
  T* ps = present.data<T>();
  std::vector<T> padded(static_cast<size_t>(padded_len));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t row = b * channels + c;
      for (int64_t j = 0; j < k - 1; ++j) padded[j] = past ? past->data<T>()[row * (k - 1) + j] : T(0.0f);
      for (int64_t j = 0; j < length; ++j) padded[k - 1 + j] = px[row * length + j];
      const T* wc = pw + c * k;
      for (int64_t t = 0; t < length; ++t) {
        double acc = 0;
        for (int64_t j = 0; j < k; ++j) acc += static_cast<double>(C(wc[j])) * static_cast<double>(C(padded[t + j]));
        // The convolution result is stored in T before bias and activation, as the reference does.
        T y = T(static_cast<C>(acc));
        if (bias) y = T(static_cast<C>(C(y) + C(bias->data<T>()[c])));
        if (silu) {
          const double v = static_cast<double>(C(y));
          y = T(static_cast<C>(v / (1.0 + std::exp(-v))));
        }
        po[row * length + t] = y;
      }
      for (int64_t j = 0; j < k - 1; ++j) ps[row * (k - 1) + j] = padded[padded_len - (k - 1) + j];
    }
  }
}

Status causal_conv_kernel(KernelContext& ctx) {
  for (int i = 0; i < 4; ++i)
    if (ctx.has_input(i) && !ctx.input_value(i)->is_tensor())
      return Status::invalid("input " + std::to_string(i) + " must be a tensor");
  if (!ctx.has_input(0) || !ctx.has_input(1)) return Status::invalid("input and weight are required");
  FERRY_ASSIGN_OR_RETURN(bool silu, read_activation(ctx.node()));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* past = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (x.rank() != 3) return Status::invalid("input must be rank 3 (batch, channels, length); got " + x.describe());
  const int64_t batch = x.dim(0), channels = x.dim(1);
  if (w.rank() != 3 || w.dim(0) != channels || w.dim(1) != 1 || w.dim(2) < 1)
    return Status::invalid("weight must be (channels=" + std::to_string(channels) + ", 1, k>=1); got " + w.describe());
  const int64_t k = w.dim(2);
  if (w.dtype() != x.dtype()) return Status::invalid("weight dtype must match input: " + w.describe());
  if (bias && (bias->dtype() != x.dtype() || bias->rank() != 1 || bias->dim(0) != channels))
    return Status::invalid("bias must be " + std::string(dtype_name(x.dtype())) + "[" + std::to_string(channels) +
                           "]; got " + bias->describe());
  if (past && (past->dtype() != x.dtype() || past->dims() != std::vector<int64_t>{batch, channels, k - 1}))
    return Status::invalid("past_state must be " + std::string(dtype_name(x.dtype())) +
                           dims_to_string({batch, channels, k - 1}) + "; got " + past->describe());
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(x.dtype(), x.dims()));
  FERRY_ASSIGN_OR_RETURN(Tensor present, Tensor::create(x.dtype(), {batch, channels, k - 1}));
  bool known = dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    run_causal_conv<T>(x, w, bias, past, silu, out, present);
  });
  if (!known) return Status::unsupported("CausalConvWithState does not take " + std::string(dtype_name(x.dtype())));
  ctx.set_output(0, std::move(out));
  if (ctx.wants_output(1)) ctx.set_output(1, std::move(present));
  return Status();
}

Status causal_conv_infer(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  std::optional<Shape> out_shape, state_shape;
  const std::optional<Shape>* xs = ctx.input_shape(0);
  const std::optional<Shape>* ws = ctx.input_shape(1);
  if (xs && *xs && (*xs)->size() == 3) {
    out_shape = **xs;
    Dim state_len;
    if (ws && *ws && (*ws)->size() == 3 && (**ws)[2].is_static()) state_len = Dim((**ws)[2].value - 1);
    state_shape = Shape{(**xs)[0], (**xs)[1], state_len};
  }
  ctx.set_output(0, dt, out_shape);
  ctx.set_output(1, dt, state_shape);
  return Status();
}

}  // namespace

void register_causal_conv_with_state(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "CausalConvWithState",
      .since_version = 27,
      .min_inputs = 2,
      .max_inputs = 4,
      .infer = causal_conv_infer,
      .kernel = causal_conv_kernel,
  });
}

}  // namespace ferry::ops
