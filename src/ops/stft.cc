// STFT (opset 17): frames of frame_length samples every frame_step samples, each multiplied by the
// window (ones when absent) and transformed; output [batch, frames, bins, 2] with bins = n/2+1 when
// onesided (the default).
#include "ops/op.h"
#include "ops/util/control_numeric.h"
#include "ops/util/control_signal.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Status stft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DType T = x.dtype();
  if (!is_floating(T)) return Status::invalid("STFT needs a floating signal");
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    return Status::invalid("STFT signal must be [batch, length, 1 or 2], got " + x.describe());
  FERRY_ASSIGN_OR_RETURN(int64_t step, scalar_int(ctx.input(1), "STFT frame_step"));
  if (step <= 0) return Status::invalid("STFT frame_step must be positive");
  const bool has_window = ctx.has_input(2);
  int64_t frame_len = has_window ? ctx.input(2).numel() : x.dim(1);
  if (ctx.has_input(3)) {
    FERRY_ASSIGN_OR_RETURN(frame_len, scalar_int(ctx.input(3), "STFT frame_length"));
  }
  if (frame_len <= 0) return Status::invalid("STFT frame_length must be positive");
  std::vector<double> window(frame_len, 1.0);
  if (has_window) {
    const Tensor& w = ctx.input(2);
    if (w.rank() != 1 || w.numel() != frame_len)
      return Status::invalid("STFT window must be 1-D of frame_length " + std::to_string(frame_len));
    window = w.to_double_vector();
  }
  const int64_t batch = x.dim(0), length = x.dim(1);
  if (length < frame_len) return Status::invalid("STFT signal is shorter than one frame");
  const int64_t frames = 1 + (length - frame_len) / step;
  const bool complex_in = x.dim(2) == 2;
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  if (onesided && complex_in) return Status::invalid("STFT onesided output needs a real signal");
  const std::vector<double> v = x.to_double_vector();
  signal::Lanes in;
  in.outer = batch * frames;
  in.length = frame_len;
  in.data.resize(in.outer * frame_len);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t k = 0; k < frame_len; ++k) {
        const int64_t s = (b * length + f * step + k) * (complex_in ? 2 : 1);
        const signal::cd val = complex_in ? signal::cd(v[s], v[s + 1]) : signal::cd(v[s], 0);
        in.data[(b * frames + f) * frame_len + k] = val * window[k];
      }
  const int64_t bins = onesided ? frame_len / 2 + 1 : frame_len;
  signal::Lanes out = signal::dft(in, frame_len, bins);
  std::vector<double> flat;
  flat.reserve(out.data.size() * 2);
  for (const signal::cd& c : out.data) {
    flat.push_back(c.real());
    flat.push_back(c.imag());
  }
  FERRY_ASSIGN_OR_RETURN(Tensor y, from_doubles(T, {batch, frames, bins, 2}, flat));
  ctx.set_output(0, std::move(y));
  return Status();
}

Status stft_infer(InferContext& ctx) {
  const DType T = ctx.input_dtype(0);
  ctx.set_output_dtype(0, T);
  if (ctx.input_rank(0) != 3) return Status();
  const Shape& xs = **ctx.input_shape(0);
  const Tensor* step = ctx.input_constant(1);
  Dim frame_len = xs[1];
  if (ctx.has_input(2) && ctx.input_rank(2) == 1) frame_len = (**ctx.input_shape(2))[0];
  if (ctx.has_input(3)) {
    const Tensor* c = ctx.input_constant(3);
    frame_len = c && c->numel() == 1 ? Dim(c->as_int64(0)) : Dim();
  }
  Dim frames;
  if (step && step->numel() == 1 && step->as_int64(0) > 0 && xs[1].is_static() && frame_len.is_static() &&
      xs[1].value >= frame_len.value)
    frames = Dim(1 + (xs[1].value - frame_len.value) / step->as_int64(0));
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  Dim bins = frame_len.is_static() ? Dim(onesided ? frame_len.value / 2 + 1 : frame_len.value) : Dim();
  ctx.set_output(0, T, Shape{xs[0], frames, bins, Dim(2)});
  return Status();
}

}  // namespace

void register_stft(OpRegistry& r) {
  r.add(OpSchema{.op_type = "STFT", .since_version = 17, .min_inputs = 2, .max_inputs = 4,
                 .infer = stft_infer, .kernel = stft_kernel});
}

}  // namespace ferry::ops
