#include "backends/cpu/matmul_row_blocks.h"

#include <omp.h>

#include <algorithm>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr int64_t kMinRowsPerThread = 64;

size_t element_bytes(dt type) { return type == dt::bf16 ? 2 : 4; }

// A memory of `desc` over `whole`'s bytes from element `offset` on.
dnnl::memory offset_memory(const dnnl::memory& whole, const md& desc, int64_t offset, size_t elem) {
  return dnnl::memory(desc, engine(), static_cast<char*>(whole.get_data_handle()) + offset * static_cast<int64_t>(elem));
}

}  // namespace

std::unique_ptr<MatMulRowBlocks> MatMulRowBlocks::make(
    int64_t rows, int64_t K, int64_t N, const md& wei, dt dst_type, bool has_z,
    const std::function<dnnl::primitive_attr(const md&)>& attr_for) {
  const int threads = omp_get_max_threads();
  if (threads < 2 || K < 2 * N || rows < kMinRowsPerThread * threads) return nullptr;
  std::unique_ptr<MatMulRowBlocks> b(new MatMulRowBlocks());
  b->threads_ = threads;
  b->K_ = K;
  b->N_ = N;
  const int64_t per = (rows + threads - 1) / threads;
  try {
    for (auto [blk, r] : {std::pair{&b->block_, per}, std::pair{&b->last_, rows - per * (threads - 1)}}) {
      blk->rows = r;
      blk->src = md({r, K}, dt::bf16, tag::ab);
      blk->dst = md({r, N}, dst_type, tag::ab);
      blk->z = has_z ? md({r, N}, dt::f32, tag::ab) : md();
      dnnl::primitive_attr attr = attr_for(blk->z);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the threads' own (thread_streams.h)
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(blk->src, wei, blk->dst), attr, engine());
      // Only oneDNN's AMX kernel gains this way, and only on the weights already packed for the whole.
      const std::string impl = pd.impl_info_str();
      if (is_reference_impl(pd) || impl.find("amx") == std::string::npos || pd.weights_desc() != wei) return nullptr;
      b->scratchpad_bytes_ = std::max(b->scratchpad_bytes_, pd.scratchpad_desc().get_size());
      blk->prim = dnnl::matmul(pd);
    }
  } catch (const dnnl::error&) {
    return nullptr;
  }
  b->streams_.reserve(threads, b->scratchpad_bytes_);
  return b;
}

Result<bool> MatMulRowBlocks::run(const std::unordered_map<int, dnnl::memory>& args, int z_po) {
  if (omp_get_max_threads() != threads_) return false;
  const dnnl::memory& src = args.at(DNNL_ARG_SRC);
  const dnnl::memory& dst = args.at(DNNL_ARG_DST);
  const size_t dst_elem = element_bytes(dst.get_desc().data_type());
  const int z_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(z_po) | DNNL_ARG_SRC_1;
  FERRY_RETURN_IF_ERROR(run_on_threads(threads_, "MatMul (row blocks)", [&](int t, int) {
    const Block& blk = t == threads_ - 1 ? last_ : block_;
    const int64_t row0 = block_.rows * t;
    std::unordered_map<int, dnnl::memory> a = args;
    a[DNNL_ARG_SRC] = offset_memory(src, blk.src, row0 * K_, 2);
    a[DNNL_ARG_DST] = offset_memory(dst, blk.dst, row0 * N_, dst_elem);
    if (z_po >= 0) a[z_arg] = offset_memory(args.at(z_arg), blk.z, row0 * N_, 4);
    streams_.add_scratchpad(t, a);
    blk.prim.execute(streams_.stream(t), a);
    streams_.stream(t).wait();
  }));
  return true;
}

}  // namespace ferry::backends::cpu
