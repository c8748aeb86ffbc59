// RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim features of each head by the
// angles in cos_cache/sin_cache (gathered by position_ids when given). Input is [B, H, S, D] or
// [B, S, H*D] (num_heads required); `interleaved` pairs features (0,1),(2,3)... instead of halves.
#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/control_numeric.h"
#include "ops/util/control_util.h"

namespace ferry::ops {
namespace {

Status rotary_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& cos_t = ctx.input(1);
  const Tensor& sin_t = ctx.input(2);
  const DType T = x.dtype();
  if (!is_floating(T)) return Status::invalid("RotaryEmbedding needs a floating input");
  if (x.rank() != 3 && x.rank() != 4) return Status::invalid("RotaryEmbedding input must be 3-D or 4-D");
  const bool packed = x.rank() == 3;
  const int64_t B = x.dim(0);
  int64_t H, S, D;
  if (packed) {
    H = node.attr_int("num_heads", 0);
    S = x.dim(1);
    if (H <= 0 || x.dim(2) % H) return Status::invalid("RotaryEmbedding 3-D input needs num_heads dividing the hidden size");
    D = x.dim(2) / H;
  } else {
    H = x.dim(1);
    S = x.dim(2);
    D = x.dim(3);
  }
  int64_t rd = node.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) rd = D;
  if (rd < 0 || rd > D || rd % 2) return Status::invalid("RotaryEmbedding rotary_embedding_dim must be even and <= head size");
  const int64_t half = rd / 2;
  const bool interleaved = node.attr_int("interleaved", 0) != 0;
  if (cos_t.dims() != sin_t.dims()) return Status::invalid("RotaryEmbedding cos_cache and sin_cache shapes differ");
  if (cos_t.rank() < 2 || cos_t.dim(-1) != half)
    return Status::invalid("RotaryEmbedding cache last dimension must be rotary_embedding_dim/2 = " + std::to_string(half));
  std::vector<double> cs = cos_t.to_double_vector(), sn = sin_t.to_double_vector();
  // Row of the caches for (b, s).
  std::vector<int64_t> rows(B * S);
  if (ctx.has_input(3)) {
    const Tensor& pos = ctx.input(3);
    if (pos.rank() != 2 || pos.dim(0) != B || pos.dim(1) != S)
      return Status::invalid("RotaryEmbedding position_ids must be [batch, sequence]");
    if (cos_t.rank() != 2) return Status::invalid("RotaryEmbedding caches must be 2-D with position_ids");
    std::vector<int64_t> p = pos.to_int64_vector();
    for (int64_t i = 0; i < B * S; ++i) {
      if (p[i] < 0 || p[i] >= cos_t.dim(0))
        return Status::invalid("RotaryEmbedding position id " + std::to_string(p[i]) + " is outside the cache");
      rows[i] = p[i];
    }
  } else {
    if (cos_t.rank() != 3 || cos_t.dim(0) != B || cos_t.dim(1) != S)
      return Status::invalid("RotaryEmbedding caches must be [batch, sequence, dim/2] without position_ids");
    for (int64_t i = 0; i < B * S; ++i) rows[i] = i;
  }
  std::vector<double> in = x.to_double_vector();
  std::vector<double> out = in;
  auto index = [&](int64_t b, int64_t h, int64_t s, int64_t d) {
    return packed ? ((b * S + s) * H + h) * D + d : ((b * H + h) * S + s) * D + d;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t row = rows[b * S + s];
        for (int64_t i = 0; i < half; ++i) {
          const double c = cs[row * half + i], sv = sn[row * half + i];
          const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          const double x1 = in[index(b, h, s, i1)], x2 = in[index(b, h, s, i2)];
          out[index(b, h, s, i1)] = round_to(T, round_to(T, c * x1) - round_to(T, sv * x2));
          out[index(b, h, s, i2)] = round_to(T, round_to(T, sv * x1) + round_to(T, c * x2));
        }
      }
  FERRY_ASSIGN_OR_RETURN(Tensor y, from_doubles(T, x.dims(), out));
  ctx.set_output(0, std::move(y));
  return Status();
}

}  // namespace

void register_rotary_embedding(OpRegistry& r) {
  r.add(OpSchema{.op_type = "RotaryEmbedding", .since_version = 23, .min_inputs = 3, .max_inputs = 4,
                 .infer = [](InferContext& ctx) { return infer_same_as_input(ctx); }, .kernel = rotary_kernel});
}

}  // namespace ferry::ops
