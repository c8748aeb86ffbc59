// DepthToSpace and SpaceToDepth (modes DCR and CRD): a 6-D reshape, a transpose, and a reshape back,
// done as one strided copy.
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

struct Rearrangement {
  std::vector<int64_t> tmp, perm, out;
};

Result<int64_t> blocksize_of(const ir::Node& n) {
  if (!n.has_attr("blocksize")) return Status::invalid("missing the 'blocksize' attribute");
  int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 20)) return Status::invalid("blocksize " + std::to_string(b) + " is invalid");
  return b;
}

Result<std::string> mode_of(const ir::Node& n) {
  std::string m = n.attr_string("mode", "DCR");
  if (m != "DCR" && m != "CRD") return Status::invalid("mode '" + m + "' must be DCR or CRD");
  return m;
}

Result<Rearrangement> depth_to_space(const std::vector<int64_t>& d, int64_t b, const std::string& mode) {
  if (d.size() != 4) return Status::invalid("input must be 4-D, got " + dims_to_string(d));
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  if (c % (b * b) != 0)
    return Status::invalid("channels " + std::to_string(c) + " are not divisible by blocksize^2 = " +
                           std::to_string(b * b));
  const int64_t c2 = c / (b * b);
  Rearrangement r;
  if (mode == "DCR") {
    r.tmp = {n, b, b, c2, h, w};
    r.perm = {0, 3, 4, 1, 5, 2};
  } else {
    r.tmp = {n, c2, b, b, h, w};
    r.perm = {0, 1, 4, 2, 5, 3};
  }
  r.out = {n, c2, h * b, w * b};
  return r;
}

Result<Rearrangement> space_to_depth(const std::vector<int64_t>& d, int64_t b, const std::string& mode) {
  if (d.size() != 4) return Status::invalid("input must be 4-D, got " + dims_to_string(d));
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  if (h % b != 0 || w % b != 0)
    return Status::invalid("spatial dims " + dims_to_string({h, w}) + " are not divisible by blocksize " +
                           std::to_string(b));
  Rearrangement r;
  r.tmp = {n, c, h / b, b, w / b, b};
  r.perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
  r.out = {n, c * b * b, h / b, w / b};
  return r;
}

template <bool kToSpace>
Status rearrange_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  FERRY_ASSIGN_OR_RETURN(int64_t b, blocksize_of(ctx.node()));
  FERRY_ASSIGN_OR_RETURN(std::string mode, mode_of(ctx.node()));
  FERRY_ASSIGN_OR_RETURN(Rearrangement r, kToSpace ? depth_to_space(x->dims(), b, mode) : space_to_depth(x->dims(), b, mode));
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), r.out));
  const std::vector<int64_t> st = strides_of(r.tmp);
  std::vector<int64_t> dims6(6), strides6(6);
  for (int i = 0; i < 6; ++i) {
    dims6[i] = r.tmp[r.perm[i]];
    strides6[i] = st[r.perm[i]];
  }
  strided_copy(x->raw(), 0, strides6, out->raw(), dims6, dtype_size(x->dtype()));
  return Status();
}

template <bool kToSpace>
Status rearrange_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  auto in = static_input_dims(ctx, 0);
  auto b = blocksize_of(ctx.node());
  auto mode = mode_of(ctx.node());
  if (!b.ok()) return b.status();
  if (!mode.ok()) return mode.status();
  if (!in) {
    int rank = ctx.input_rank(0);
    ctx.set_output(0, dt, rank == 4 ? std::optional<Shape>(unknown_dims(4)) : std::nullopt);
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(Rearrangement r, kToSpace ? depth_to_space(*in, *b, *mode) : space_to_depth(*in, *b, *mode));
  ctx.set_output(0, dt, to_shape(r.out));
  return Status();
}
}  // namespace

void register_depth_to_space(OpRegistry& r) {
  r.add(OpSchema{.op_type = "DepthToSpace", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = rearrange_infer<true>, .kernel = rearrange_kernel<true>});
  r.add(OpSchema{.op_type = "SpaceToDepth", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = rearrange_infer<false>, .kernel = rearrange_kernel<false>});
}

}  // namespace ferry::ops
