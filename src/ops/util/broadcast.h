// Shared helpers for reference kernels: strides, numpy broadcasting loops, common inference rules.
#pragma once
#include <cstdint>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace ferry::ops {

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

// For an output of dims `out` broadcast from an input of dims `in`, the input's strides aligned to the
// output's rank (0 on broadcast axes).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

// Calls f(out_index, a_index, b_index) for every element of the broadcast of a and b, in row-major
// order of the output.
template <class F>
void for_each_broadcast(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& a_dims,
                        const std::vector<int64_t>& b_dims, F&& f) {
  const int r = static_cast<int>(out_dims.size());
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  if (n == 0) return;
  std::vector<int64_t> sa = broadcast_strides(a_dims, out_dims), sb = broadcast_strides(b_dims, out_dims);
  std::vector<int64_t> idx(r, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t o = 0; o < n; ++o) {
    f(o, ia, ib);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < out_dims[d]) {
        ia += sa[d];
        ib += sb[d];
        break;
      }
      ia -= sa[d] * (out_dims[d] - 1);
      ib -= sb[d] * (out_dims[d] - 1);
      idx[d] = 0;
    }
  }
}

// out = f(a, b) elementwise with numpy broadcasting. TA/TB/TO are the storage types.
template <class TA, class TB, class TO, class F>
Result<Tensor> binary_broadcast(const Tensor& a, const Tensor& b, DType out_dtype, F&& f) {
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_dims(a.dims(), b.dims()));
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(out_dtype, dims));
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = out.data<TO>();
  for_each_broadcast(dims, a.dims(), b.dims(), [&](int64_t o, int64_t ia, int64_t ib) { po[o] = f(pa[ia], pb[ib]); });
  return out;
}

// out = f(x) elementwise.
template <class TI, class TO, class F>
Result<Tensor> unary_map(const Tensor& x, DType out_dtype, F&& f) {
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(out_dtype, x.dims()));
  const TI* px = x.data<TI>();
  TO* po = out.data<TO>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) po[i] = f(px[i]);
  return out;
}

// Inference rules many ops share.
Status infer_same_as_input(InferContext& ctx, int input = 0);            // out0 = type/shape of input
Status infer_broadcast(InferContext& ctx, DType out_dtype = DType::kUndefined);  // numpy broadcast of all inputs
                                                                         // (dtype: input 0's unless given)

}  // namespace ferry::ops
