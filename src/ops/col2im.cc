// Col2Im (opset 18): the inverse of im2col. input [N, C * prod(block_shape), L] holds, for each of the L
// sliding-block positions, the C * prod(block) values; they are summed back into an image [N, C, *image_shape].
#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

struct Col2ImGeometry {
  std::vector<int64_t> image, block, dilations, pads, strides, n_blocks;
};

Result<Col2ImGeometry> geometry(const ir::Node& node, std::vector<int64_t> image, std::vector<int64_t> block) {
  Col2ImGeometry g;
  const size_t n = image.size();
  if (n == 0 || block.size() != n)
    return Status::invalid("image_shape " + dims_to_string(image) + " and block_shape " + dims_to_string(block) +
                           " must be non-empty and of the same length");
  g.image = std::move(image);
  g.block = std::move(block);
  g.dilations = node.attr_ints("dilations", std::vector<int64_t>(n, 1));
  g.pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  g.strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  if (g.dilations.size() != n || g.strides.size() != n || g.pads.size() != 2 * n)
    return Status::invalid("dilations, strides and pads must have " + std::to_string(n) + ", " + std::to_string(n) +
                           " and " + std::to_string(2 * n) + " entries");
  for (size_t i = 0; i < n; ++i) {
    if (g.image[i] <= 0 || g.block[i] <= 0 || g.dilations[i] <= 0 || g.strides[i] <= 0 || g.pads[i] < 0 ||
        g.pads[n + i] < 0)
      return Status::invalid("Col2Im image/block shapes, dilations and strides must be positive and pads >= 0");
    constexpr int64_t kMax = int64_t{1} << 31;  // keeps the geometry arithmetic far from overflow
    if (g.image[i] > kMax || g.block[i] > kMax || g.dilations[i] > kMax || g.strides[i] > kMax || g.pads[i] > kMax ||
        g.pads[n + i] > kMax)
      return Status::invalid("Col2Im geometry values must be below 2^31");
    const int64_t span = g.dilations[i] * (g.block[i] - 1) + 1;
    const int64_t nb = (g.image[i] + g.pads[i] + g.pads[n + i] - span) / g.strides[i] + 1;
    if (g.image[i] + g.pads[i] + g.pads[n + i] < span || nb < 1)
      return Status::invalid("block " + dims_to_string(g.block) + " does not fit image " + dims_to_string(g.image));
    g.n_blocks.push_back(nb);
  }
  return g;
}

Status col2im_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* is, tensor_input(ctx, 1, "image_shape"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* bs, tensor_input(ctx, 2, "block_shape"));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> image, int_values(*is, "image_shape"));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> block, int_values(*bs, "block_shape"));
  FERRY_ASSIGN_OR_RETURN(Col2ImGeometry g, geometry(ctx.node(), image, block));
  if (x->rank() != 3) return Status::invalid("input must be 3-D [N, C*prod(block), L], got " + x->describe());
  const size_t nd = g.image.size();
  FERRY_ASSIGN_OR_RETURN(int64_t block_size, checked_numel(g.block));
  FERRY_ASSIGN_OR_RETURN(int64_t n_blocks, checked_numel(g.n_blocks));
  if (x->dim(1) % block_size != 0)
    return Status::invalid("input dim 1 (" + std::to_string(x->dim(1)) + ") is not divisible by the block size " +
                           std::to_string(block_size));
  if (x->dim(2) != n_blocks)
    return Status::invalid("input dim 2 (" + std::to_string(x->dim(2)) + ") must equal the number of blocks " +
                           std::to_string(n_blocks) + " " + dims_to_string(g.n_blocks));
  const int64_t N = x->dim(0), C = x->dim(1) / block_size;
  std::vector<int64_t> dims = {N, C};
  dims.insert(dims.end(), g.image.begin(), g.image.end());
  FERRY_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0, x->dtype(), dims));
  FERRY_ASSIGN_OR_RETURN(int64_t image_size, checked_numel(g.image));
  const std::vector<int64_t> img_strides = strides_of(g.image);
  Status st;
  bool ok = dispatch_numeric(x->dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
    using Acc = std::conditional_t<is_float_like_v<T>, double, T>;
    const T* src = x->data<T>();
    T* dst = out->data<T>();
    std::vector<Acc> acc(image_size);
    std::vector<int64_t> kpos(nd), bpos(nd);
    for (int64_t nc = 0; nc < N * C; ++nc) {
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t k = 0; k < block_size; ++k) {
        for (int64_t rem = k, i = nd - 1; i >= 0; --i) {
          kpos[i] = rem % g.block[i];
          rem /= g.block[i];
        }
        for (int64_t b = 0; b < n_blocks; ++b) {
          int64_t off = 0;
          bool inside = true;
          for (int64_t rem = b, i = nd - 1; i >= 0; --i) {
            bpos[i] = rem % g.n_blocks[i];
            rem /= g.n_blocks[i];
            const int64_t p = bpos[i] * g.strides[i] - g.pads[i] + kpos[i] * g.dilations[i];
            if (p < 0 || p >= g.image[i]) inside = false;
            off += p * img_strides[i];
          }
          if (inside) acc[off] += static_cast<Acc>(src[(nc * block_size + k) * n_blocks + b]);
        }
      }
      for (int64_t i = 0; i < image_size; ++i) dst[nc * image_size + i] = T(static_cast<compute_t<T>>(acc[i]));
    }
    }
  });
  if (!ok) return unsupported_dtype("Col2Im", x->dtype());
  return st;
}

Status col2im_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  auto image = known_ints(ctx, 1);
  auto in = ctx.input_shape(0);
  if (!image) {
    const std::optional<Shape>* is = ctx.input_shape(1);
    std::optional<Shape> out;
    if (is && *is && (*is)->size() == 1 && (**is)[0].is_static()) out = unknown_dims(2 + (**is)[0].value);
    ctx.set_output(0, dt, out);
    return Status();
  }
  Shape out = {Dim(), Dim()};
  if (in && *in && (*in)->size() == 3) {
    out[0] = (**in)[0];
    auto block = known_ints(ctx, 2);
    if (block && (**in)[1].is_static()) {
      auto bsz = checked_numel(*block);
      if (bsz.ok() && *bsz > 0) out[1] = Dim((**in)[1].value / *bsz);
    }
  }
  for (int64_t d : *image) out.emplace_back(d);
  ctx.set_output(0, dt, out);
  return Status();
}
}  // namespace

void register_col2im(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Col2Im", .since_version = 18, .min_inputs = 3, .max_inputs = 3,
                 .infer = col2im_infer, .kernel = col2im_kernel});
}

}  // namespace ferry::ops
