// MelWeightMatrix (opset 17): [dft_length/2+1, num_mel_bins] triangular filters evenly spaced on the
// mel scale between lower_edge_hertz and upper_edge_hertz. The bin edges are floored to integers, so
// the edge arithmetic follows the reference's precision (float32 for the edge-frequency inputs' mel
// conversion, float64 afterwards) to land on the same bins.
#include <cmath>

#include "ops/op.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

// 2595 * log10(1 + hz/700), rounded like NumPy does for an input of dtype `dt`.
double hz_to_mel(double hz, DType dt) {
  if (dt == DType::kFloat32 || dt == DType::kFloat16 || dt == DType::kBFloat16) {
    const float ratio = static_cast<float>(hz) / 700.0f;
    const float l = static_cast<float>(std::log1p(static_cast<double>(ratio)));
    return static_cast<double>(2595.0f * l) / std::log(10.0);
  }
  return 2595 * std::log1p(hz / 700) / std::log(10.0);
}

Status mel_kernel(KernelContext& ctx) {
  for (int i = 0; i < 5; ++i)
    if (!ctx.has_input(i)) return Status::invalid("MelWeightMatrix needs five inputs");
  FERRY_ASSIGN_OR_RETURN(int64_t mel_bins, scalar_int(ctx.input(0), "num_mel_bins"));
  FERRY_ASSIGN_OR_RETURN(int64_t dft_length, scalar_int(ctx.input(1), "dft_length"));
  FERRY_ASSIGN_OR_RETURN(int64_t sample_rate, scalar_int(ctx.input(2), "sample_rate"));
  if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
    return Status::invalid("MelWeightMatrix num_mel_bins, dft_length and sample_rate must be positive");
  if (ctx.input(3).numel() != 1 || ctx.input(4).numel() != 1)
    return Status::invalid("MelWeightMatrix edge frequencies must be scalars");
  const double lower = ctx.input(3).as_double(0), upper = ctx.input(4).as_double(0);
  FERRY_ASSIGN_OR_RETURN(DType dt, dtype_from_onnx(ctx.node().attr_int("output_datatype", 1)));
  const int64_t spec_bins = dft_length / 2 + 1;
  const double low_mel = hz_to_mel(lower, ctx.input(3).dtype());
  const double high_mel = hz_to_mel(upper, ctx.input(4).dtype());
  const double step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edges(mel_bins + 2);
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double mel = static_cast<double>(i) * step + low_mel;
    const double hz = 700 * std::expm1(mel / 2595 * std::log(10.0));
    edges[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  FERRY_ASSIGN_OR_RETURN(Tensor w, Tensor::create(DType::kFloat64, {spec_bins, mel_bins}));
  double* out = w.data<double>();
  auto put = [&](int64_t j, int64_t i, double v) -> Status {
    if (j < 0 || j >= spec_bins)
      return Status::invalid("MelWeightMatrix: filter edge bin " + std::to_string(j) + " is outside the " +
                             std::to_string(spec_bins) + " spectrogram bins (check the edge frequencies)");
    out[j * mel_bins + i] = v;
    return Status();
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t lo = edges[i], center = edges[i + 1], hi = edges[i + 2];
    if (center == lo) {
      FERRY_RETURN_IF_ERROR(put(center, i, 1));
    } else {
      for (int64_t j = lo; j <= center; ++j)
        FERRY_RETURN_IF_ERROR(put(j, i, static_cast<double>(j - lo) / static_cast<double>(center - lo)));
    }
    if (hi > center)
      for (int64_t j = center; j < hi; ++j)
        FERRY_RETURN_IF_ERROR(put(j, i, static_cast<double>(hi - j) / static_cast<double>(hi - center)));
  }
  ctx.set_output(0, w.cast(dt));
  return Status();
}

Status mel_infer(InferContext& ctx) {
  auto dt = dtype_from_onnx(ctx.node().attr_int("output_datatype", 1));
  const Tensor* bins = ctx.input_constant(0);
  const Tensor* len = ctx.input_constant(1);
  Dim rows = len && len->numel() == 1 ? Dim(len->as_int64(0) / 2 + 1) : Dim();
  Dim cols = bins && bins->numel() == 1 ? Dim(bins->as_int64(0)) : Dim();
  ctx.set_output(0, dt.ok() ? *dt : DType::kUndefined, Shape{rows, cols});
  return Status();
}

}  // namespace

void register_mel_weight_matrix(OpRegistry& r) {
  r.add(OpSchema{.op_type = "MelWeightMatrix", .since_version = 17, .min_inputs = 5, .max_inputs = 5,
                 .infer = mel_infer, .kernel = mel_kernel});
}

}  // namespace ferry::ops
