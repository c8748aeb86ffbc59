// com.ferry FusedAttention on oneDNN: Y = softmax(scale * Q Kᵀ + Mask, -1) V.
//
// Three primitives over the whole batch, prepared once per shape: a batched matmul for the scores
// (K read transposed through strides, `scale` as the output scale, the mask as a binary add post-op
// when oneDNN takes its broadcast), oneDNN's softmax on the last axis in place, and a batched matmul
// with V. The score block lives in a buffer of the calling thread's that every attention node shares
// (thread_scratch.h), so it is still warm in cache from the attention before. A mask broadcast oneDNN's
// matmul rejects is added by a loop before the softmax. Unsupported shapes run the reference kernel.
//
// fp32 attention with up to 8 query rows per item (a decoder's step; kDirectRows) runs row by row without
// primitives (vec_attention.h), the mask added to each row's scores.
//
// Unmasked fp32 attention whose scores pass 1 MB per item runs in row tiles, one per thread
// (attention_tiles.h). Other long sequences without a mask go through in blocks of query rows (the same three primitives on a
// block, a tail block's own): whisper's encoder has 6 x 1500 x 1500 scores, 54 MB written, read by the
// softmax, written and read again, where a 112-row block's 4 MB stays closer (its 4 attentions: 80 ->
// 48 ms at batch 1 on 2 threads; 1 MB blocks of 16 rows were too small for the matmuls: 77 ms).
// The batch dims (flattened) are blocked too: a block is 112 rows of a group of batch items (heads)
// whose scores take about 4 MB, so batch 8 runs batch 1's blocks eight times over instead of blocks of
// 16 rows across all 48 heads.
//
// A node the precision pass marked bf16 runs in bf16 where the CPU has it natively (wants_native_bf16):
// Q, K and V are converted to bf16 copies once per run (exact: the pass rounded them to bf16 values),
// the score matmul accumulates in fp32 and writes fp32 scores, the softmax writes its probabilities in
// bf16 (the rounding the unfused graph's Softmax output gets) and the second matmul reads them with V
// in bf16 and writes Y in fp32 (the RoundFloat after the node rounds it). On AMX that is vit_b_16's
// attention at batch 8 in about a fifth of the fp32 time.
//
// nan_to_zero (torch 2's SDPA export guards fully masked rows with Where(IsNaN(P), 0, P)): the
// probabilities' NaNs become 0 between the softmax and the second matmul, a pass over a block that is
// still in cache.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backends/cpu/attention_tiles.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/thread_scratch.h"
#include "backends/cpu/vec_attention.h"
#include "backends/cpu/vec_softmax.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;

constexpr int kMaxRank = 12;

// Whether `t` (float32) holds its values as dense row-major bf16 (bf16 storage, layout.h).
bool dense_bf16(const Tensor& t) { return stores_bf16(t) && desc_of(t) == plain_desc(DType::kBFloat16, t.dims()); }

// NaN -> 0 in place over a dense block of `bytes` of fp32 or bf16 values, by their bits (exact whatever
// the compiler assumes of floats).
void zero_nans(void* data, size_t bytes, bool bf16) {
  const auto n = static_cast<int64_t>(bytes / (bf16 ? sizeof(uint16_t) : sizeof(uint32_t)));
  if (bf16) {
    auto* x = static_cast<uint16_t*>(data);
#pragma omp parallel for if (n > (int64_t{1} << 16))
    for (int64_t i = 0; i < n; ++i) x[i] = (x[i] & 0x7fffu) > 0x7f80u ? uint16_t{0} : x[i];
  } else {
    auto* x = static_cast<uint32_t*>(data);
#pragma omp parallel for if (n > (int64_t{1} << 16))
    for (int64_t i = 0; i < n; ++i) x[i] = (x[i] & 0x7fffffffu) > 0x7f800000u ? 0u : x[i];
  }
}

// Tensor buffers are 64-byte aligned; the probabilities start at the next 64 bytes after the scores.
size_t aligned_size(size_t bytes) { return (bytes + 63) / 64 * 64; }

md dense(const std::vector<int64_t>& dims, dt type = dt::f32) {
  return md(to_dims(dims), type, to_dims(dense_strides(dims)));
}

bool attention_supports(const ir::Node& n, const CpuOptions& o) {
  if (!n.has_input(0) || !n.has_input(1) || !n.has_input(2) || !n.has_output(0)) return false;
  for (int i = 0; i < n.num_inputs(); ++i)
    if (n.has_input(i) && n.inputs[i]->dtype != DType::kFloat32) return false;
  if (n.outputs[0]->dtype != DType::kFloat32) return false;
  for (int i = 0; i < 3; ++i)
    if (n.inputs[i]->shape && (n.inputs[i]->shape->size() < 2 || n.inputs[i]->shape->size() > kMaxRank)) return false;
  return true;
}

// The three primitives for `rows` query rows (all of them, or a block of them).
struct AttnStage {
  int64_t rows = 0;
  md q_md, s_md, p_md, y_md;  // p_md: the probabilities, s_md's bytes (fp32) or a bf16 block of its own
  // bf16: the block of Q (q_src_md, over Q's bytes) is converted into a dense block (q_md), and a block
  // of fewer rows than Q has is written dense (y_md) and then copied into Y (y_out_md): oneDNN 2.6 runs
  // strided bf16 operands on its non-AMX gemm, and that one at a tenth of the speed with a scale.
  md q_src_md, y_out_md;
  bool y_copy = false;
  dnnl::matmul qk, pv;
  dnnl::primitive softmax;
};

struct AttnPlan {
  std::vector<int64_t> q, k, v, mask;
  bool reference = false;
  std::vector<int64_t> score_dims, out_dims;
  md kt_md, v_md, mask_md;
  bool mask_in_matmul = false;
  std::vector<int64_t> mask_strides;  // mask's strides over score_dims (0 on broadcast dims)
  AttnStage block, tail;  // block: every row, or kBlockRows-row blocks; tail: the rows left (if any)
  int64_t D = 0, Dv = 0;
  int64_t items = 1;      // batch items: the product of the batch dims
  int64_t group = 1;      // batch items per block: a divisor of `items`; all of them with a mask
  bool flat = false;      // no mask: Q, K, V, Y and the scores seen as 3-D [batch items, rows, cols]
  dt in_type = dt::f32;   // what the matmuls read: Q, K, V and the probabilities (bf16: copies of them)
  // One block's scores (fp32) and, bf16, its probabilities: their bytes in thread_scratch.
  size_t scores_bytes = 0, probs_bytes = 0;
  Tensor q16, y32;        // bf16: one block's Q, converted, and (rows blocked) its Y before the copy
  Tensor k16, v16;        // bf16: the whole K and V converted, each run
  std::unique_ptr<AttentionTiles> tiles;  // long unmasked fp32 attention: a tile of rows per thread
  bool direct = false;  // fp32, up to kDirectRows query rows: each row through vec_attention.h
  float scale = 1.f;
};

// Up to this many query rows per item (a decoder's step has one; a prompt or speculative decoding a
// few) fp32 attention runs row by row on vec_attention.h: whisper_tiny_decoder_step batch 8, 14.6 ->
// 11.0 ms on an AMD Zen 4 (bench/README.md, "Few-rows attention"). A row reads its item's K and V again
// (from L2: an item's rows run one after another on one thread), which the batched matmuls read once;
// [8, 6, S, 64] against 1500 keys, batched / row by row, ms: S 2 2.43/0.90, 4 2.29/1.38, 8 2.98/2.49,
// 16 6.06/4.78 and 3.38/5.67, 32 5.18/8.26.
constexpr int64_t kDirectRows = 8;

// Scores beyond kRowBlocksOverBytes go through in blocks of rows that keep about kBlockScoreBytes.
constexpr int64_t kRowBlocksOverBytes = int64_t{8} << 20;
constexpr int64_t kBlockScoreBytes = int64_t{4} << 20;
constexpr int64_t kBlockRows = 112;

class AttentionKernel : public Kernel {
 public:
  AttentionKernel(const ir::Node& node, const CpuOptions& o)
      : node_(node), bf16_(wants_native_bf16(node, o)), nan_to_zero_(node.attr_int("nan_to_zero", 0) != 0) {}

  Status init() {
    FERRY_ASSIGN_OR_RETURN(reference_, reference_kernel_of(node_));
    std::vector<std::vector<int64_t>> dims;
    for (int i = 0; i < 4; ++i) {
      if (!node_.has_input(i)) {
        dims.emplace_back();
        continue;
      }
      const ir::Value* v = node_.inputs[i];
      if (!v->shape || !is_static(*v->shape)) return Status();  // prepared at the first run
      dims.push_back(static_dims(*v->shape));
    }
    auto p = plan_for(dims[0], dims[1], dims[2], node_.has_input(3) ? &dims[3] : nullptr);
    return p.ok() ? Status() : p.status();
  }

  // ":bf16" once a plan runs its matmuls in bf16.
  std::string name() const override {
    if (direct_planned_) return "cpu:vec:attention_rows";
    return bf16_planned_ ? "cpu:onednn:attention:bf16" : tiles_planned_ ? "cpu:onednn:attention:tiles" : "cpu:onednn:attention";
  }
  // Q, K and V in bf16 storage (the head-split Transposes' bf16 results, layout.h) are read as they are
  // by a bf16 plan; any other layout is made plain.
  bool accepts_layouts() const override { return true; }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* q, ops::nn::tensor_in(ctx, 0, "Q"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* k, ops::nn::tensor_in(ctx, 1, "K"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* v, ops::nn::tensor_in(ctx, 2, "V"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* mask, ops::nn::optional_tensor_in(ctx, 3, "Mask"));
    for (const Tensor* t : {q, k, v, mask})
      if (t && t->dtype() != DType::kFloat32) return run_reference_on_plain(*reference_, node_, ctx);
    // bf16 storage stays for a bf16 plan (below); anything else not plain is made plain here.
    Tensor plain[4];
    const Tensor** inputs[4] = {&q, &k, &v, &mask};
    for (int i = 0; i < 4; ++i) {
      const Tensor* t = *inputs[i];
      if (!t || t->is_plain() || (bf16_ && i < 3 && dense_bf16(*t))) continue;
      FERRY_ASSIGN_OR_RETURN(plain[i], t->plain());
      *inputs[i] = &plain[i];
    }
    auto planned = plan_for(q->dims(), k->dims(), v->dims(), mask ? &mask->dims() : nullptr);
    if (!planned.ok()) {
      if (planned.status().code() == ErrorCode::kInvalidArgument) return reference_->kernel(ctx);
      return planned.status();
    }
    AttnPlan* p = *planned;
    // Q, K and V may arrive unrounded (layout.h's readers_convert_to_bf16): where this node runs in fp32
    // although bf16 was asked for, they are rounded here.
    if (p->reference) return run_reference_on_plain(*reference_, node_, ctx, bf16_ ? std::vector<int>{0, 1, 2} : std::vector<int>{});
    Tensor rounded[3];
    if (bf16_ && p->in_type == dt::f32) {
      for (int i = 0; i < 3; ++i) {
        if (!(*inputs[i])->is_plain()) { FERRY_ASSIGN_OR_RETURN(plain[i], (*inputs[i])->plain()); *inputs[i] = &plain[i]; }
        rounded[i] = rounded_to_bf16(**inputs[i]);
        *inputs[i] = &rounded[i];
      }
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, p->out_dims));
    if (p->direct) return run_direct(*p, *q, *k, *v, mask, *y);
    if (p->tiles) {
      return p->tiles->run(q->data<float>(), k->data<float>(), v->data<float>(), y->data<float>());
    }
    const bool bf16 = p->in_type == dt::bf16;
    const bool q_bf16 = bf16 && dense_bf16(*q);
    if (bf16 && !dense_bf16(*k)) reorder(as_memory(*k, dense(p->k)), as_memory(p->k16, dense(p->k, dt::bf16)));
    if (bf16 && !dense_bf16(*v)) reorder(as_memory(*v, dense(p->v)), as_memory(p->v16, dense(p->v, dt::bf16)));
    // K and V as the matmuls read them: the inputs (fp32, or already bf16), or their bf16 copies.
    auto* k_in = static_cast<char*>(bf16 && !dense_bf16(*k) ? p->k16.raw() : const_cast<void*>(k->raw()));
    auto* v_in = static_cast<char*>(bf16 && !dense_bf16(*v) ? p->v16.raw() : const_cast<void*>(v->raw()));
    const int64_t in_size = bf16 ? 2 : 4;
    const int64_t S = p->q[p->q.size() - 2], T = p->k[p->k.size() - 2];
    FERRY_ASSIGN_OR_RETURN(char* scratch, thread_scratch(aligned_size(p->scores_bytes) + p->probs_bytes));
    auto* scores = reinterpret_cast<float*>(scratch);
    char* probs = scratch + aligned_size(p->scores_bytes);
    for (int64_t b0 = 0; b0 < p->items; b0 += p->group)
      for (int64_t row = 0; row < S; row += p->block.rows) {
        const AttnStage& st = S - row >= p->block.rows ? p->block : p->tail;
        // A block is the descriptors over the bytes from its first item and row on.
        char* qb = static_cast<char*>(const_cast<void*>(q->raw())) + (b0 * S + row) * p->D * (q_bf16 ? 2 : 4);
        char* kb = k_in + b0 * T * p->D * in_size;
        char* vb = v_in + b0 * T * p->Dv * in_size;
        float* yb = y->data<float>() + (b0 * S + row) * p->Dv;
        dnnl::memory q_mem(st.q_md, engine(), qb);
        if (bf16 && !(q_bf16 && !st.y_copy)) {
          // Converted (or, bf16 already, gathered from a row block) into the dense block the matmul reads.
          q_mem = as_memory(p->q16, st.q_md);
          reorder(dnnl::memory(q_bf16 ? with_data_type(st.q_src_md, dt::bf16) : st.q_src_md, engine(), qb), q_mem);
        }
        dnnl::memory y_mem = st.y_copy ? as_memory(p->y32, st.y_md) : dnnl::memory(st.y_md, engine(), yb);
        dnnl::memory s_mem(st.s_md, engine(), scores);
        dnnl::memory p_mem = bf16 ? dnnl::memory(st.p_md, engine(), probs) : s_mem;
        std::unordered_map<int, dnnl::memory> qk_args{
            {DNNL_ARG_SRC, q_mem}, {DNNL_ARG_WEIGHTS, dnnl::memory(p->kt_md, engine(), kb)}, {DNNL_ARG_DST, s_mem}};
        if (mask && p->mask_in_matmul)
          qk_args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, as_memory(*mask, p->mask_md));
        st.qk.execute(stream(), qk_args);
        stream().wait();
        if (mask && !p->mask_in_matmul) add_mask(*p, *mask, scores);
        st.softmax.execute(stream(), {{DNNL_ARG_SRC, s_mem}, {DNNL_ARG_DST, p_mem}});
        if (nan_to_zero_) {
          stream().wait();
          zero_nans(p_mem.get_data_handle(), st.p_md.get_size(), bf16);
        }
        st.pv.execute(stream(), {{DNNL_ARG_SRC, p_mem}, {DNNL_ARG_WEIGHTS, dnnl::memory(p->v_md, engine(), vb)},
                                 {DNNL_ARG_DST, y_mem}});
        stream().wait();
        if (st.y_copy) reorder(y_mem, dnnl::memory(st.y_out_md, engine(), yb));
      }
    return Status();
  }

 private:
  // Where score row `row` (over the scores' dims but the last) starts in the mask (numpy broadcast).
  static int64_t mask_row_offset(const AttnPlan& p, int64_t row) {
    const std::vector<int64_t>& sd = p.score_dims;
    int64_t rem = row, off = 0;
    for (int i = static_cast<int>(sd.size()) - 2; i >= 0; --i) {
      off += (rem % sd[i]) * p.mask_strides[i];
      rem /= sd[i];
    }
    return off;
  }

  // scores[j] += the mask's row for score row `row`, j < T.
  static void add_mask_row(const AttnPlan& p, const float* mask, int64_t row, float* scores) {
    const int64_t T = p.score_dims.back();
    const float* mr = mask + mask_row_offset(p, row);
    if (p.mask_strides.back() == 0) {
      for (int64_t j = 0; j < T; ++j) scores[j] += mr[0];
    } else {
      for (int64_t j = 0; j < T; ++j) scores[j] += mr[j];
    }
  }

  // scores += mask (numpy broadcast), one score row at a time.
  static void add_mask(const AttnPlan& p, const Tensor& mask, float* scores) {
    const std::vector<int64_t>& sd = p.score_dims;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < sd.size(); ++i) rows *= sd[i];
    const int64_t T = sd.back();
#pragma omp parallel for
    for (int64_t row = 0; row < rows; ++row) add_mask_row(p, mask.data<float>(), row, scores + row * T);
  }

  // A direct plan: each query row of each item on one thread, its T scores in that thread's share of
  // the scratch, then exp(s - max) and the weighted sum of V's rows divided by the row's sum. A row whose
  // sum is NaN (a NaN or +inf score, or every key masked) is NaN, or zero with nan_to_zero, as the
  // unfused graph's probabilities make it.
  Status run_direct(const AttnPlan& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                    Tensor& y) const {
    const int64_t S = p.q[p.q.size() - 2], T = p.k[p.k.size() - 2], D = p.D, Dv = p.Dv, rows = p.items * S;
    const int threads = std::max(1, omp_get_max_threads());
    FERRY_ASSIGN_OR_RETURN(char* scratch, thread_scratch(static_cast<size_t>(threads * T) * sizeof(float)));
    const float *qd = q.data<float>(), *kd = k.data<float>(), *vd = v.data<float>();
    const float* md_data = mask ? mask->data<float>() : nullptr;
    float* yd = y.data<float>();
    const bool parallel = threads > 1 && rows > 1 && rows * T * (D + Dv) >= (int64_t{1} << 15);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t item = row / S;
      float* scores = reinterpret_cast<float*>(scratch) + omp_get_thread_num() * T;
      vec_attention_scores(qd + row * D, kd + item * T * D, T, D, p.scale, scores);
      if (md_data) add_mask_row(p, md_data, row, scores);
      const float sum = vec_exp_minus_max(scores, static_cast<size_t>(T));
      float* yr = yd + row * Dv;
      if (std::isnan(sum) && nan_to_zero_) {
        std::fill_n(yr, Dv, 0.0f);
        continue;
      }
      vec_attention_weighted_sum(scores, vd + item * T * Dv, T, Dv, 1.0f / sum, yr);
    }
    return Status();
  }

  Result<AttnPlan*> plan_for(const std::vector<int64_t>& qd, const std::vector<int64_t>& kd,
                             const std::vector<int64_t>& vd, const std::vector<int64_t>* maskd) {
    const std::vector<int64_t> md_dims = maskd ? *maskd : std::vector<int64_t>{};
    for (auto& p : plans_)
      if (p->q == qd && p->k == kd && p->v == vd && p->mask == md_dims) return p.get();
    const std::string& op = node_.op_type;
    const size_t r = qd.size();
    if (r < 2 || kd.size() != r || vd.size() != r)
      return Status::invalid(op + ": Q, K and V must have the same rank >= 2");
    if (r > kMaxRank) return Status::unsupported(op + ": rank above 12");
    std::vector<int64_t> batch(qd.begin(), qd.end() - 2);
    if (std::vector<int64_t>(kd.begin(), kd.end() - 2) != batch || std::vector<int64_t>(vd.begin(), vd.end() - 2) != batch)
      return Status::invalid(op + ": batch dims of Q, K and V differ");
    const int64_t S = qd[r - 2], D = qd[r - 1], T = kd[r - 2], Dv = vd[r - 1];
    if (kd[r - 1] != D || vd[r - 2] != T) return Status::invalid(op + ": K must be [..., T, D] and V [..., T, Dv]");
    auto plan = std::make_unique<AttnPlan>();
    plan->q = qd;
    plan->k = kd;
    plan->v = vd;
    plan->mask = md_dims;
    plan->score_dims = batch;
    plan->score_dims.push_back(S);
    plan->score_dims.push_back(T);
    plan->out_dims = batch;
    plan->out_dims.push_back(S);
    plan->out_dims.push_back(Dv);
    if (maskd) {
      auto bc = broadcast_dims(md_dims, plan->score_dims);
      if (!bc.ok() || *bc != plan->score_dims || md_dims.size() > r)
        return Status::invalid(op + ": Mask " + dims_to_string(md_dims) + " does not broadcast to the scores " +
                               dims_to_string(plan->score_dims));
    }
    int64_t total = S * T * D * Dv;
    for (int64_t d : batch) total *= d;
    if (total == 0) {
      plan->reference = true;
      plans_.push_back(std::move(plan));
      return plans_.back().get();
    }
    const float scale = node_.has_attr("scale") ? node_.attr_float("scale", 1.f) : 1.f / std::sqrt(float(D));
    plan->D = D;
    plan->Dv = Dv;
    int64_t batch_n = 1;
    for (int64_t d : batch) batch_n *= d;
    // Without a mask: 3-D views [batch items, rows, cols] (the batch dims are dense in every tensor), so
    // a block can cover a group of items. Rows per block: all of them with a mask (its rows would need
    // offsets too) or while the scores are small; else kBlockRows of as many items as keep a block's
    // scores near kBlockScoreBytes (a divisor of the items, so every block is the same).
    plan->flat = !maskd;
    int64_t rows = S, group = batch_n;
    const int64_t item_bytes = S * T * static_cast<int64_t>(sizeof(float));
    if (plan->flat && bf16_ && batch_n * item_bytes > kRowBlocksOverBytes && item_bytes <= kBlockScoreBytes) {
      // bf16: whole items (all their rows), so that Q's and Y's blocks are dense (see AttnStage).
      group = 1;
      for (int64_t gsz = 1; gsz <= batch_n; ++gsz)
        if (batch_n % gsz == 0 && gsz * item_bytes <= kBlockScoreBytes) group = gsz;
    } else if (plan->flat && batch_n * item_bytes > kRowBlocksOverBytes) {
      const int64_t item_row_bytes = T * static_cast<int64_t>(sizeof(float));
      rows = std::min(S, std::max<int64_t>(16, std::min(kBlockRows, kBlockScoreBytes / item_row_bytes / 16 * 16)));
      group = 1;
      for (int64_t gsz = 1; gsz <= batch_n; ++gsz)
        if (batch_n % gsz == 0 && gsz * rows * item_row_bytes <= kBlockScoreBytes) group = gsz;
    }
    plan->items = batch_n;
    plan->group = group;
    if (maskd) {
      std::vector<int64_t> mx(r - md_dims.size(), 1);
      mx.insert(mx.end(), md_dims.begin(), md_dims.end());
      plan->mask_md = dense(mx);
      plan->mask_strides = dense_strides(mx);
      for (size_t i = 0; i < r; ++i)
        if (mx[i] == 1) plan->mask_strides[i] = 0;
    }
    plan->scale = scale;
    if (!bf16_ && S <= kDirectRows) {
      plan->direct = true;
      direct_planned_ = true;
      plans_.push_back(std::move(plan));
      return plans_.back().get();
    }
    if (plan->flat && !bf16_ && AttentionTiles::worth_it(S, T)) {
      plan->tiles = AttentionTiles::make(batch_n, S, T, D, Dv, scale, nan_to_zero_);
      if (plan->tiles) {
        tiles_planned_ = true;
        plans_.push_back(std::move(plan));
        return plans_.back().get();
      }
    }
    // bf16 first where the node asks for it; fp32 when oneDNN has no bf16 kernel for these shapes.
    bool made = false;
    for (dt type : {dt::bf16, dt::f32}) {
      if (type == dt::bf16 && !bf16_) continue;
      try {
        make_stages(*plan, type, rows, scale, maskd != nullptr);
        made = true;
        break;
      } catch (const dnnl::error&) {
      }
    }
    if (!made) {
      plan->reference = true;
      plans_.push_back(std::move(plan));
      return plans_.back().get();
    }
    plan->scores_bytes = plan->block.s_md.get_size();
    if (plan->in_type == dt::bf16) {
      bf16_planned_ = true;
      plan->probs_bytes = plan->block.p_md.get_size();
      const md& qm = plan->block.q_md;
      FERRY_ASSIGN_OR_RETURN(plan->q16, make_tensor(DType::kFloat32, dims_of(qm), qm));
      if (plan->block.y_copy) {
        FERRY_ASSIGN_OR_RETURN(plan->y32, make_tensor(DType::kFloat32, dims_of(plan->block.y_md), plan->block.y_md));
      }
      FERRY_ASSIGN_OR_RETURN(plan->k16, make_tensor(DType::kFloat32, kd, dense(kd, dt::bf16)));
      FERRY_ASSIGN_OR_RETURN(plan->v16, make_tensor(DType::kFloat32, vd, dense(vd, dt::bf16)));
    }
    plans_.push_back(std::move(plan));
    return plans_.back().get();
  }

  // K's and V's descriptors and the stages (a block of `rows` rows, and the tail's) with the matmuls
  // reading `type`; throws dnnl::error when oneDNN has no such primitive.
  static void make_stages(AttnPlan& plan, dt type, int64_t rows, float scale, bool mask) {
    const std::vector<int64_t>& qd = plan.q;
    const int64_t S = qd[qd.size() - 2], T = plan.k[plan.k.size() - 2];
    const std::vector<int64_t> k_view = plan.flat ? std::vector<int64_t>{plan.group, T, plan.D} : plan.k;
    const std::vector<int64_t> v_view = plan.flat ? std::vector<int64_t>{plan.group, T, plan.Dv} : plan.v;
    // Kᵀ: [..., D, T] over K's [..., T, D] bytes.
    const size_t kr = k_view.size();
    std::vector<int64_t> ktd = k_view, kts = dense_strides(k_view);
    std::swap(ktd[kr - 2], ktd[kr - 1]);
    std::swap(kts[kr - 2], kts[kr - 1]);
    plan.kt_md = md(to_dims(ktd), type, to_dims(kts));
    plan.v_md = dense(v_view, type);
    plan.in_type = type;
    const std::vector<int64_t> q_view = plan.flat ? std::vector<int64_t>{plan.items, S, plan.D} : qd;
    plan.block = make_stage(plan, q_view, rows, scale, mask);
    if (S % rows != 0) plan.tail = make_stage(plan, q_view, S % rows, scale, false);
  }

  // The primitives for `rows` query rows (of plan.group items when flat): Q and Y keep their full
  // tensors' strides (a block is their bytes from its first item and row on), the scores are a dense
  // [batch..., rows, T] block. `qd` is Q's dims, or its flat view.
  static AttnStage make_stage(AttnPlan& plan, const std::vector<int64_t>& qd, int64_t rows, float scale,
                              bool mask) {
    const size_t r = qd.size();
    AttnStage st;
    st.rows = rows;
    std::vector<int64_t> y_full = plan.out_dims, s_full = plan.score_dims;
    if (plan.flat) {
      y_full = {qd[0], qd[1], plan.Dv};
      s_full = {qd[0], qd[1], plan.k[plan.k.size() - 2]};
    }
    std::vector<int64_t> qb = qd, sb = s_full, yb = y_full;
    qb[r - 2] = sb[r - 2] = yb[r - 2] = rows;
    if (plan.flat) qb[0] = sb[0] = yb[0] = plan.group;
    st.q_src_md = md(to_dims(qb), dt::f32, to_dims(dense_strides(qd)));
    st.q_md = plan.in_type == dt::bf16 ? dense(qb, dt::bf16) : st.q_src_md;
    st.s_md = dense(sb);
    st.p_md = dense(sb, plan.in_type);
    st.y_out_md = md(to_dims(yb), dt::f32, to_dims(dense_strides(y_full)));
    st.y_copy = plan.in_type == dt::bf16 && rows != y_full[r - 2];  // whole items are dense in Y
    st.y_md = st.y_copy ? dense(yb) : st.y_out_md;
    auto make_qk = [&](bool with_mask) {
      dnnl::primitive_attr attr;
      if (scale != 1.f) attr.set_output_scales(0, {scale});
      if (with_mask) {
        dnnl::post_ops po;
        po.append_binary(dnnl::algorithm::binary_add, plan.mask_md);
        attr.set_post_ops(po);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(st.q_md, plan.kt_md, st.s_md), attr, engine());
      // oneDNN 2.6 serves some mask broadcasts as a post-op only with its reference matmul (a few hundred
      // MFLOP/s): never taken, the loop adds the mask then.
      if (with_mask && is_reference_impl(pd))
        throw dnnl::error(dnnl_unimplemented, "reference matmul for this mask");
      st.qk = dnnl::matmul(pd);
    };
    bool made = false;
    if (mask) {
      try {
        make_qk(true);
        made = plan.mask_in_matmul = true;
      } catch (const dnnl::error&) {
        // This broadcast has no matmul post-op kernel: the mask is added by a loop.
      }
    }
    if (!made) make_qk(false);
    dnnl::softmax_v2_forward::desc sd(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, st.s_md,
                                      st.p_md, static_cast<int>(r) - 1);
    st.softmax = dnnl::softmax_v2_forward(dnnl::softmax_v2_forward::primitive_desc(sd, engine()));
    st.pv = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(st.p_md, plan.v_md, st.y_md), engine()));
    return st;
  }


  const ir::Node& node_;
  bool bf16_;  // the precision pass asked for native bf16 and the CPU has it
  bool nan_to_zero_;  // the probabilities' NaNs become 0 (the attribute nan_to_zero)
  bool bf16_planned_ = false;
  bool tiles_planned_ = false;
  bool direct_planned_ = false;
  const ops::OpSchema* reference_ = nullptr;
  std::vector<std::unique_ptr<AttnPlan>> plans_;
};

Result<std::unique_ptr<Kernel>> create_attention(const ir::Node& node, const CpuOptions& o) {
  auto k = std::make_unique<AttentionKernel>(node, o);
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_attention(KernelTable& t) {
  t.push_back({"com.ferry", "FusedAttention", attention_supports, create_attention});
}

}  // namespace ferry::backends::cpu
