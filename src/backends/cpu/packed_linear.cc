#include "backends/cpu/packed_linear.h"

#include <dnnl.hpp>

#include "backends/cpu/layout.h"

namespace ferry::backends::cpu {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

Status PackedLinear::prepare(int64_t M, int64_t N, int64_t K) {
  m_ = M, n_ = N, k_ = K;
  usable_ = false;
  packed_from_ = nullptr;
  try {
    src_md_ = md({M, K}, dt::f32, tag::ab);
    wei_plain_md_ = md({K, N}, dt::f32, tag::ba);  // W [N, K] read as its transpose
    dst_md_ = md({M, N}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md_, md({K, N}, dt::f32, tag::any), dst_md_), engine());
    if (is_reference_impl(pd)) return Status();  // the caller's sgemm is faster than oneDNN's reference
    matmul_ = dnnl::matmul(pd);
    wei_md_ = pd.weights_desc();
  } catch (const dnnl::error&) {
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(packed_, make_tensor(DType::kFloat32, {K, N}, wei_md_));
  usable_ = true;
  return Status();
}

Status PackedLinear::run(const float* x, int64_t M, const float* w, int64_t N, int64_t K, bool w_constant, float* y) {
  if (M != m_ || N != n_ || K != k_) FERRY_RETURN_IF_ERROR(prepare(M, N, K));
  if (!usable_) {
    dnnl_sgemm('N', 'T', M, N, K, 1.0f, x, K, w, K, 0.0f, y, N);
    return Status();
  }
  try {
    if (!w_constant || w != packed_from_) {
      dnnl::memory plain(wei_plain_md_, engine(), const_cast<float*>(w)), packed = as_memory(packed_);
      dnnl::reorder(plain, packed).execute(stream(), plain, packed);
      packed_from_ = w_constant ? w : nullptr;
    }
    matmul_.execute(stream(), {{DNNL_ARG_SRC, dnnl::memory(src_md_, engine(), const_cast<float*>(x))},
                               {DNNL_ARG_WEIGHTS, as_memory(packed_)},
                               {DNNL_ARG_DST, dnnl::memory(dst_md_, engine(), y)}});
    stream().wait();
  } catch (const dnnl::error& e) {
    return Status::internal(std::string("packed linear: oneDNN: ") + e.what());
  }
  return Status();
}

}  // namespace ferry::backends::cpu
