// Pad: pads (or, with negative pads, crops) each axis. Modes: constant, reflect, edge, wrap. `pads` is an
// attribute before opset 11 and an input from 11; opset 18 adds the `axes` input.
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

Result<PadMode> pad_mode(const ir::Node& n) {
  std::string m = n.attr_string("mode", "constant");
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  return Status::invalid("unknown pad mode '" + m + "' (expected constant, reflect, edge or wrap)");
}

// Full per-axis (begin, end) pads for a tensor of `rank` from the pads list and optional axes.
Result<std::vector<std::pair<int64_t, int64_t>>> full_pads(const std::vector<int64_t>& pads,
                                                           const std::optional<std::vector<int64_t>>& axes,
                                                           int64_t rank) {
  std::vector<int64_t> ax;
  if (axes) {
    FERRY_ASSIGN_OR_RETURN(ax, normalize_axes(*axes, rank));
  } else {
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  if (pads.size() != 2 * ax.size())
    return Status::invalid("pads " + dims_to_string(pads) + " must have 2 entries per padded axis (" +
                           std::to_string(ax.size()) + " axes)");
  std::vector<std::pair<int64_t, int64_t>> out(rank, {0, 0});
  for (size_t i = 0; i < ax.size(); ++i) out[ax[i]] = {pads[i], pads[ax.size() + i]};
  return out;
}

// Source index along an axis of size n for output position o (already shifted by the begin pad), or -1
// for the constant value.
int64_t source_index(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kWrap: return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

Status pad_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(PadMode mode, pad_mode(ctx.node()));
  std::vector<int64_t> pads;
  std::optional<std::vector<int64_t>> axes;
  Tensor value = Tensor::scalar<float>(0.f).cast(x->dtype());
  if (ctx.opset() < 11) {
    pads = ctx.node().attr_ints(ctx.node().has_attr("pads") ? "pads" : "paddings");
    value = Tensor::scalar<float>(ctx.node().attr_float("value", 0.f)).cast(x->dtype());
  } else {
    FERRY_ASSIGN_OR_RETURN(const Tensor* pt, tensor_input(ctx, 1, "pads"));
    FERRY_ASSIGN_OR_RETURN(pads, int_values(*pt, "pads"));
    if (has_tensor_input(ctx, 2)) {
      const Tensor& cv = ctx.input(2);
      if (cv.numel() != 1) return Status::invalid("constant_value must hold one value, got " + cv.describe());
      if (cv.dtype() != x->dtype())
        return Status::invalid("constant_value is " + dtype_str(cv.dtype()) + " but data is " + dtype_str(x->dtype()));
      value = cv;
    }
    if (has_tensor_input(ctx, 3)) {
      FERRY_ASSIGN_OR_RETURN(axes, int_values(ctx.input(3), "axes"));
    }
  }
  const int r = x->rank();
  FERRY_ASSIGN_OR_RETURN(auto pw, full_pads(pads, axes, r));
  std::vector<int64_t> dims(r);
  for (int d = 0; d < r; ++d) {
    if (__builtin_add_overflow(x->dims()[d], pw[d].first, &dims[d]) ||
        __builtin_add_overflow(dims[d], pw[d].second, &dims[d]))
      return Status::invalid("pads " + dims_to_string(pads) + " overflow");
    if (dims[d] < 0) return Status::invalid("pads " + dims_to_string(pads) + " crop axis " + std::to_string(d) +
                                            " of " + x->describe() + " below zero");
    if (mode != PadMode::kConstant && x->dims()[d] == 0 && dims[d] > 0)
      return Status::invalid("cannot pad the empty axis " + std::to_string(d) + " in a non-constant mode");
  }
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  if (out->numel() == 0) return Status();
  const size_t es = dtype_size(x->dtype());
  const auto* src = static_cast<const uint8_t*>(x->raw());
  const auto* fill = static_cast<const uint8_t*>(value.raw());
  auto* dst = static_cast<uint8_t*>(out->raw());
  if (r == 0) {
    std::memcpy(dst, src, es);
    return Status();
  }
  // Per-axis maps from output position to source position (-1: the constant).
  std::vector<std::vector<int64_t>> map(r);
  for (int d = 0; d < r; ++d) {
    map[d].resize(dims[d]);
    for (int64_t o = 0; o < dims[d]; ++o) map[d][o] = source_index(o - pw[d].first, x->dims()[d], mode);
  }
  const std::vector<int64_t> xst = strides_of(x->dims());
  const int64_t last = dims[r - 1];
  const int64_t rows = out->numel() / last;
  std::vector<int64_t> pos(r - 1, 0);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t off = 0;
    bool constant_row = false;
    for (int d = 0; d < r - 1; ++d) {
      int64_t s = map[d][pos[d]];
      if (s < 0) constant_row = true;
      else off += s * xst[d];
    }
    for (int64_t o = 0; o < last; ++o, dst += es) {
      int64_t s = constant_row ? -1 : map[r - 1][o];
      std::memcpy(dst, s < 0 ? fill : src + (off + s) * es, es);
    }
    for (int d = r - 2; d >= 0; --d) {
      if (++pos[d] < dims[d]) break;
      pos[d] = 0;
    }
  }
  return Status();
}

Status pad_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  const Shape& s = **in;
  std::optional<std::vector<int64_t>> pads, axes;
  bool known = true;
  if (ctx.opset() < 11) {
    pads = ctx.node().attr_ints(ctx.node().has_attr("pads") ? "pads" : "paddings");
  } else {
    pads = known_ints(ctx, 1);
    if (ctx.has_input(3)) {
      axes = known_ints(ctx, 3);
      if (!axes) known = false;
    }
  }
  if (!pads || !known) {
    ctx.set_output(0, dt, unknown_dims(s.size()));
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(auto pw, full_pads(*pads, axes, s.size()));
  Shape out = s;
  for (size_t d = 0; d < s.size(); ++d) {
    if (pw[d].first == 0 && pw[d].second == 0) continue;
    int64_t v = 0;
    const bool ok = s[d].is_static() && !__builtin_add_overflow(s[d].value, pw[d].first, &v) &&
                    !__builtin_add_overflow(v, pw[d].second, &v) && v >= 0;
    out[d] = ok ? Dim(v) : Dim();
  }
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_pad(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Pad", .since_version = 1, .until_version = 10, .min_inputs = 1, .max_inputs = 1,
                 .infer = pad_infer, .kernel = pad_kernel});
  r.add(OpSchema{.op_type = "Pad", .since_version = 11, .min_inputs = 2, .max_inputs = 4,
                 .infer = pad_infer, .kernel = pad_kernel});
}

}  // namespace ferry::ops
