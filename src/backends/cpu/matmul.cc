// MatMul, Gemm and com.ferry FusedMatMul on the oneDNN matmul primitive (fp32).
//
// One plan per input-shape combination (created at load for static shapes, lazily and cached
// otherwise): numpy batch broadcasting by expanding both operands to the output's rank with size-1
// batch dims (oneDNN broadcasts those), 1-D operands promoted as ONNX MatMul does, trans_a / trans_b
// as strided memory descriptors (no copy). Constant weights (B an initializer: the Linear case) are
// reordered once into the layout the primitive picks (format `any`), which is what makes oneDNN's
// blocked GEMM kernels fast. alpha is the primitive's output scale; Bias and the residual Z are binary
// add post-ops at their place in the chain (Bias first, Z where `sum` is), so nothing is copied into
// the destination before the primitive runs. Shapes oneDNN cannot run (empty dims, a post-op chain it
// rejects) run the op's reference kernel instead.
//
// A node the precision pass marked bf16 (wants_native_bf16) runs the bf16 matmul: A and a non-constant
// B are converted to dense bf16 each run (exact: the pass rounded them to bf16 values already), a
// constant B is packed in bf16 once, accumulation, Bias, post-ops and the destination stay fp32.
//
// fp32 Linear layers with a constant B and K, N >= 512 run on MKL's packed sgemm where it is built in
// (mkl_gemm.h): C = A * B on the pack, then Bias and the post-ops (the same oneDNN post-op chain) in
// one in-place oneDNN binary pass over C. The pack replaces oneDNN's packed copy. On CPUs without
// AVX-512 the same path runs on the backend's own packed GEMM (vec_gemm.h) where MKL is not used.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_choices.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/matmul_row_blocks.h"
#include "backends/cpu/mkl_gemm.h"
#include "backends/cpu/post_ops.h"
#include "backends/cpu/vec_binary.h"
#include "backends/cpu/vec_gemm.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr int kMaxRank = 12;  // oneDNN's DNNL_MAX_NDIMS

bool all_float32(const ir::Node& n) {
  for (int i = 0; i < n.num_inputs(); ++i)
    if (n.has_input(i) && n.inputs[i]->dtype != DType::kFloat32) return false;
  return n.has_output(0) && n.outputs[0]->dtype == DType::kFloat32;
}

bool rank_ok(const ir::Value* v, int lo, int hi) {
  if (!v->shape) return true;  // checked at run
  const int r = static_cast<int>(v->shape->size());
  return r >= lo && r <= hi;
}

bool matmul_supports(const ir::Node& n, const CpuOptions& o) {
  if (!n.has_input(0) || !n.has_input(1) || !all_float32(n)) return false;
  if (n.op_type == "Gemm") {
    if (n.opset < 7 && n.attr_int("broadcast", 0) == 0 && n.has_input(2)) return false;  // pre-7: C must match
    return rank_ok(n.inputs[0], 2, 2) && rank_ok(n.inputs[1], 2, 2) && (!n.has_input(2) || rank_ok(n.inputs[2], 0, 2));
  }
  if (!rank_ok(n.inputs[0], 1, kMaxRank) || !rank_ok(n.inputs[1], 1, kMaxRank)) return false;
  if (n.op_type == "FusedMatMul") {
    auto ops = read_post_ops(n);
    if (!ops.ok() || !post_ops_supported(*ops)) return false;
    if ((sum_index(*ops) >= 0) != n.has_input(3)) return false;
    if (n.has_input(2) && !rank_ok(n.inputs[2], 0, kMaxRank)) return false;
  }
  return true;
}

// An operand as oneDNN sees it: logical dims [batch (expanded to `rank`-2 dims)..., rows, cols] over
// the tensor's row-major bytes, the last two dims swapped through strides when transposed.
md operand_desc(std::vector<int64_t> stored, bool trans, int rank) {
  std::vector<int64_t> strides = dense_strides(stored);
  if (trans) {
    std::swap(stored[stored.size() - 2], stored.back());
    std::swap(strides[strides.size() - 2], strides.back());
  }
  while (static_cast<int>(stored.size()) < rank) {
    stored.insert(stored.begin(), 1);
    strides.insert(strides.begin(), strides.front() * stored.front());  // a size-1 dim: any stride works
  }
  return md(to_dims(stored), dt::f32, to_dims(strides));
}

// Everything prepared for one (A, B, Bias) shape combination.
struct MatMulPlan {
  std::vector<int64_t> a_dims, b_dims, bias_dims;
  std::vector<int64_t> out_dims;  // ONNX output dims (1-D operands' unit dims dropped)
  bool reference = false;          // oneDNN cannot run this: the reference kernel does
  md src_md, wei_md, dst_md, bias_md, z_md;  // fp32 views of the operands' bytes
  md src_in, wei_in;  // what the primitive reads: src_md / wei_md, or their dense bf16 copies
  md dst_out;         // what it writes: dst_md, or (bf16_out) dst_md's bf16 twin
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  Tensor packed_b;   // constant B in pd.weights_desc() (undefined when B is not constant)
  Tensor full_bias;  // Bias materialized to the output shape when oneDNN rejects its broadcast
  bool bias_materialized = false;
  // oneDNN offers only its reference matmul with this bias as a post-op (2.6 does for swin's window
  // attention: [64,3,49,49] + [1,3,49,49]): the matmul runs without it and the bias is added after.
  bool bias_after = false;
  BroadcastPlan bias_add;  // out += bias, planned once (the plan's dims are fixed)
  bool packed_b_wanted = false;  // B is constant: weights in format `any`, reordered once
  int bias_po = -1, z_po = -1;  // post-op indices of the binary adds
  std::unique_ptr<MatMulRowBlocks> row_blocks;  // bf16, K >= 2N: a block of rows per thread
  // The MKL path: rows x K times the pack, then `epilogue`, a binary add of the Bias (or of
  // `epilogue_zero`) carrying the post-ops, the residual Z at post-op `epilogue_z_po`.
  std::shared_ptr<MklPackedB> mkl_b;
  std::shared_ptr<VecPackedB> vec_b;  // or the own packed GEMM's pack (one of the two at most)
  int64_t mkl_rows = 0;
  std::optional<dnnl::primitive> epilogue;
  bool epilogue_bias = false;
  int epilogue_z_po = -1;
  std::string epilogue_impl;
  Tensor epilogue_zero;  // the -0.0 row added when there is no Bias
  md wei_packed;  // pd.weights_desc(), queried once
  BoundMemory src_m, wei_m, packed_m, dst_m, bias_m, z_m;  // the oneDNN path's arguments, rebound per run
  std::unordered_map<int, dnnl::memory> args;
};

// Below these K / N the oneDNN matmul measured as fast as MKL's packed sgemm (or faster).
constexpr int64_t kMklMinK = 512, kMklMinN = 512, kMklMinRows = 16;
// The own packed GEMM (AVX2): below these the oneDNN matmul is as fast.
constexpr int64_t kVecMinK = 64, kVecMinN = 64, kVecMinRows = 16;

class MatMulKernel : public Kernel {
 public:
  MatMulKernel(const ir::Node& node, const CpuOptions& o)
      : node_(node),
        gemm_(choose_gemm(o)),
        bf16_(wants_native_bf16(node, o)),
        bf16_out_(bf16_ && rounded_for_bf16_matmuls(*node.outputs[0], o)) {}

  Status init() {
    const std::string& op = node_.op_type;
    if (op == "Gemm") {
      trans_a_ = node_.attr_int("transA", 0) != 0;
      trans_b_ = node_.attr_int("transB", 0) != 0;
      alpha_ = node_.attr_float("alpha", 1.f);
      beta_ = node_.attr_float("beta", 1.f);
      bias_input_ = node_.has_input(2) ? 2 : -1;
    } else if (op == "FusedMatMul") {
      trans_a_ = node_.attr_int("trans_a", 0) != 0;
      trans_b_ = node_.attr_int("trans_b", 0) != 0;
      alpha_ = node_.attr_float("alpha", 1.f);
      bias_input_ = node_.has_input(2) ? 2 : -1;
      FERRY_ASSIGN_OR_RETURN(ops_, read_post_ops(node_));
      if (sum_index(ops_) >= 0) z_input_ = 3;
    }
    FERRY_ASSIGN_OR_RETURN(reference_, reference_kernel_of(node_));
    const ir::Value* b = node_.inputs[1];
    if (b->is_constant() && b->initializer.is_plain()) const_b_ = b->initializer;
    if (bias_input_ >= 0) {
      const ir::Value* c = node_.inputs[bias_input_];
      if (c->is_constant() && c->initializer.is_plain()) {
        const_bias_ = c->initializer;
        if (beta_ != 1.f) {
          // Gemm's beta folded into the constant once.
          Tensor scaled(DType::kFloat32, const_bias_.dims());
          for (int64_t i = 0; i < scaled.numel(); ++i) scaled.data<float>()[i] = beta_ * const_bias_.data<float>()[i];
          const_bias_ = scaled;
        }
      }
    }
    // Static shapes: prepare now, so run() only executes.
    const ir::Value* a = node_.inputs[0];
    auto static_of = [](const ir::Value* v) -> std::optional<std::vector<int64_t>> {
      if (!v->shape || !is_static(*v->shape)) return std::nullopt;
      return static_dims(*v->shape);
    };
    auto ad = static_of(a), bd = static_of(b);
    std::optional<std::vector<int64_t>> cd = std::vector<int64_t>{};
    if (bias_input_ >= 0) cd = static_of(node_.inputs[bias_input_]);
    if (ad && bd && cd) {
      auto p = plan_for(*ad, *bd, bias_input_ >= 0 ? &*cd : nullptr, const_b_.defined() ? &const_b_ : nullptr);
      if (!p.ok()) return p.status();
    }
    return Status();
  }

  std::string name() const override { return impl_.empty() ? "cpu:matmul:reference" : "cpu:" + impl_; }
  // Only for B: this kernel's adopted packed weights (adopt_constant). No producer hands it a blocked
  // activation (MatMul is not declared layout-aware); run() makes any other non-plain input plain.
  bool accepts_layouts() const override { return true; }

  // With static shapes B was packed once at init: the packed copy becomes the initializer.
  Tensor adopt_constant(int input) override {
    if (input != 1 || plans_.size() != 1 || plans_[0]->reference || !const_b_.is_plain()) return Tensor();
    MatMulPlan& p = *plans_[0];
    if (p.mkl_b || p.vec_b) {
      Tensor adopted = p.mkl_b ? adopt_mkl_packed(const_b_, p.mkl_b) : adopt_vec_packed(const_b_, p.vec_b);
      if (adopted.defined()) const_b_ = adopted;
      return adopted;
    }
    if (!p.packed_b.defined()) return Tensor();
    Tensor adopted = adopt_packed(const_b_, p.packed_b, p.pd.weights_desc(), p.wei_md);
    if (adopted.defined()) const_b_ = adopted;
    return adopted;
  }

  Status run(ops::KernelContext& ctx) override {
    const std::string& op = node_.op_type;
    FERRY_ASSIGN_OR_RETURN(const Tensor* a, ops::nn::tensor_in(ctx, 0, "A"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* b, ops::nn::tensor_in(ctx, 1, "B"));
    const Tensor* const ctx_a = a;
    const Tensor* bias = nullptr;
    if (bias_input_ >= 0) { FERRY_ASSIGN_OR_RETURN(bias, ops::nn::optional_tensor_in(ctx, bias_input_, "Bias")); }
    const bool b_adopted = !b->is_plain() && const_b_.defined() && b->raw() == const_b_.raw();
    Tensor plain_a, plain_b, plain_bias;
    // A in bf16 storage (another matmul's bf16 result) stays so until the plan says whether it reads it.
    const bool a_bf16 = bf16_ && stores_bf16(*a) && desc_of(*a) == plain_desc(DType::kBFloat16, a->dims());
    for (auto [t, keep] : {std::pair{&a, &plain_a}, std::pair{&b, &plain_b}, std::pair{&bias, &plain_bias}})
      if (*t && !(*t)->is_plain() && !(*t == b && b_adopted) && !(*t == a && a_bf16)) {
        FERRY_ASSIGN_OR_RETURN(*keep, (*t)->plain());
        *t = keep;
      }
    if (a->dtype() != DType::kFloat32 || b->dtype() != DType::kFloat32 || (bias && bias->dtype() != DType::kFloat32))
      return reference_->kernel(ctx);  // the reference kernel reports the type error
    const bool b_const = const_b_.defined() && b->raw() == const_b_.raw();
    auto planned = plan_for(a->dims(), b->dims(), bias ? &bias->dims() : nullptr, b_const ? &const_b_ : nullptr);
    if (!planned.ok()) {
      // Shape errors: the reference kernel words them as the op does.
      if (planned.status().code() == ErrorCode::kInvalidArgument) return reference_->kernel(ctx);
      return planned.status();
    }
    MatMulPlan* p = *planned;
    // A bf16-stored A is read as it is by a bf16 plan whose A is dense row-major; any other gets float32.
    if (a_bf16 && !(p->src_in != p->src_md && is_plain_desc(p->src_md) && !p->mkl_b && !p->vec_b)) {
      FERRY_ASSIGN_OR_RETURN(plain_a, a->plain());
      a = &plain_a;
    }
    const bool a_as_is = a_bf16 && a == ctx_a;
    if (p->reference) {
      if (b_adopted) return Status::internal(op + ": shapes changed after B was prepacked: " + a->describe());
      // A and B may arrive unrounded (layout.h's readers_convert_to_bf16): rounded here instead.
      return bf16_ ? run_reference_on_plain(*reference_, node_, ctx, {0, 1}) : reference_->kernel(ctx);
    }

    // Bias: the constant (beta already folded in), or this run's value scaled by beta.
    Tensor bias_t;
    if (bias) {
      if (const_bias_.defined() && bias->raw() == node_.inputs[bias_input_]->initializer.raw()) {
        bias_t = p->bias_materialized ? p->full_bias : const_bias_;
      } else {
        bias_t = *bias;
        if (beta_ != 1.f) {
          Tensor s(DType::kFloat32, bias->dims());
          for (int64_t i = 0; i < s.numel(); ++i) s.data<float>()[i] = beta_ * bias->data<float>()[i];
          bias_t = s;
        }
        if (p->bias_materialized) bias_t = broadcast_plain(bias_t, p->out_dims);
      }
    }
    const Tensor* z = nullptr;
    if (z_input_ >= 0) {
      FERRY_ASSIGN_OR_RETURN(z, ops::nn::tensor_in(ctx, z_input_, "Z"));
      if (z->dtype() != DType::kFloat32 || z->dims() != p->out_dims)
        return Status::invalid(op + ": the residual Z must be float32" + dims_to_string(p->out_dims) + ", got " +
                               z->describe());
    }
    if (p->mkl_b || p->vec_b) return run_packed(ctx, *p, *a, bias_t, z);
    // bf16 plans: the operands converted into the dense bf16 copies the primitive reads.
    Tensor a_in = *a, b_in = *b;
    if (p->src_in != p->src_md && !a_as_is) { FERRY_ASSIGN_OR_RETURN(a_in, reorder_view(*a, p->src_md, p->src_in)); }
    if (!b_const && p->wei_in != p->wei_md) { FERRY_ASSIGN_OR_RETURN(b_in, reorder_view(*b, p->wei_md, p->wei_in)); }
    if (bf16_ && p->src_in == p->src_md) {
      // bf16 asked for, no bf16 primitive: fp32 on bf16-rounded values, which A and a non-constant B may
      // not be yet (readers_convert_to_bf16). A constant B was rounded by the precision pass.
      a_in = rounded_to_bf16(*a);
      if (!b_const) b_in = rounded_to_bf16(*b);
    }
    // A bf16 destination is bf16 storage of the float32 output (layout.h), handed on as it is.
    Tensor out;
    if (p->dst_out != p->dst_md) {
      FERRY_ASSIGN_OR_RETURN(out, new_output(ctx, 0, DType::kFloat32, p->out_dims,
                                             plain_desc(DType::kBFloat16, p->out_dims), true));
    } else {
      FERRY_ASSIGN_OR_RETURN(Tensor * planned_y, ctx.allocate_output_uninit(0, DType::kFloat32, p->out_dims));
      out = *planned_y;
    }
    Tensor* y = &out;
    auto& args = p->args;
    args[DNNL_ARG_SRC] = p->src_m.bind(p->src_in, a_in);
    args[DNNL_ARG_WEIGHTS] = b_const ? p->packed_m.bind(p->wei_packed, p->packed_b) : p->wei_m.bind(p->wei_in, b_in);
    args[DNNL_ARG_DST] = p->dst_m.bind(p->dst_out, *y);
    if (p->bias_po >= 0) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(p->bias_po) | DNNL_ARG_SRC_1] = p->bias_m.bind(p->bias_md, bias_t);
    if (p->z_po >= 0) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(p->z_po) | DNNL_ARG_SRC_1] = p->z_m.bind(p->z_md, *z);
    bool ran_in_blocks = false;
    if (p->row_blocks) { FERRY_ASSIGN_OR_RETURN(ran_in_blocks, p->row_blocks->run(args, p->z_po)); }
    if (!ran_in_blocks) {
      p->prim.execute(stream(), args);
      stream().wait();
    }
    if (p->bias_after) vec_binary(VecBinary::kAdd, p->bias_add, y->data<float>(), bias_t.data<float>(), y->data<float>());
    if (p->dst_out != p->dst_md) return set_output(ctx, 0, std::move(out), true);
    return Status();
  }

 private:
  Status run_packed(ops::KernelContext& ctx, MatMulPlan& p, const Tensor& a, const Tensor& bias, const Tensor* z) {
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, p.out_dims));
    if (p.mkl_b) {
      p.mkl_b->multiply(a.data<float>(), p.mkl_rows, y->data<float>());
    } else {
      p.vec_b->multiply(a.data<float>(), p.mkl_rows, y->data<float>());
    }
    if (!p.epilogue) return Status();
    dnnl::memory dst = as_memory(*y, p.dst_md);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DST, dst}};
    args.emplace(DNNL_ARG_SRC_0, dst);
    args.emplace(DNNL_ARG_SRC_1, p.epilogue_bias ? as_memory(bias, p.bias_md) : as_memory(p.epilogue_zero));
    if (p.epilogue_z_po >= 0)
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.epilogue_z_po) | DNNL_ARG_SRC_1, as_memory(*z, p.z_md));
    p.epilogue->execute(stream(), args);
    stream().wait();
    return Status();
  }

  // Appends this node's post-op chain to `po`: the residual ("sum") as a binary add of `z_md`, whose
  // post-op index goes to `z_po` (-1 without one), the rest as post_ops.h makes them. False when oneDNN
  // has no such post-op.
  bool append_chain(dnnl::post_ops& po, const md& z_md, int& z_po) const {
    z_po = -1;
    for (const PostOp& op : ops_) {
      if (op.kind == "sum") {
        z_po = po.len();
        po.append_binary(dnnl::algorithm::binary_add, z_md);
        continue;
      }
      if (!append_post_ops({op}, po).ok()) return false;
    }
    return true;
  }

  // `pack` made once for the constant B (MKL's or the own GEMM's, P): the pack behind an adopted B, or B
  // packed now (oneDNN's adopted pack for another shape is unpacked once for that); false when packing
  // fails or the pack is for other dims.
  template <class P>
  bool ensure_pack(std::shared_ptr<P>& pack, std::shared_ptr<P> (*adopted)(const Tensor&), const Tensor& const_b,
                   int64_t K, int64_t N) const {
    if (!pack) pack = adopted(const_b);
    if (!pack) {
      auto plain_b = const_b.plain();
      if (!plain_b.ok()) return false;
      auto packed = P::pack(*plain_b, trans_b_);
      if (!packed.ok()) return false;
      pack = std::move(packed).value();
    }
    return pack->k() == K && pack->n() == N;
  }

  // The packed-GEMM path (MKL's, else the own AVX2 one) for a plan oneDNN can run: B constant and 2-D,
  // A rows dense, fp32, no alpha, a row Bias; false (the oneDNN path stays) when any of that fails or
  // the epilogue has no oneDNN kernel.
  bool try_packed(MatMulPlan& p, const Tensor& const_b, int64_t rows, int64_t K, int64_t N) {
    if (bf16_ || alpha_ != 1.f || p.bias_materialized || const_b.rank() != 2) return false;
    // The own GEMM first where it is chosen (CPUs without AVX-512), MKL (Intel) on the others. Up to
    // kFewRows rows (decoder steps, batch-1 heads) the own GEMM's few-rows path on every CPU unless
    // --cpu-gemm names another: a B-streaming product that oneDNN's matmul and MKL's packed sgemm ran
    // slower (bench/README.md, "Few-rows Linear layers").
    const bool few = gemm_.few_rows && rows <= VecPackedB::kFewRows;
    const bool vec = K >= kVecMinK && N >= kVecMinN && (few || (gemm_.used == CpuGemm::kOwn && rows >= kVecMinRows));
    const bool mkl = gemm_.used == CpuGemm::kMkl && K >= kMklMinK && N >= kMklMinN && rows >= kMklMinRows;
    if (!mkl && !vec) return false;
    if (vec ? !ensure_pack(vec_b_, vec_pack_of, const_b, K, N) : !ensure_pack(mkl_b_, mkl_pack_of, const_b, K, N))
      return false;
    try {
      dnnl::post_ops po;
      if (!append_chain(po, p.z_md, p.epilogue_z_po)) return false;
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      p.epilogue_bias = bias_input_ >= 0;
      if (!p.epilogue_bias && ops_.empty()) {
        p.epilogue.reset();
      } else {
        // One binary add (oneDNN's eltwise with post-ops is its slow reference kernel): the Bias, or
        // without one a row of -0.0, which adds exactly (x + -0 is x, signed zeros and NaN included).
        md row = p.epilogue_bias ? p.bias_md : md({1, N}, dt::f32, tag::ab);
        if (!p.epilogue_bias) {
          p.epilogue_zero = Tensor(DType::kFloat32, {1, N});
          std::fill_n(p.epilogue_zero.data<float>(), N, -0.f);
        }
        dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, p.dst_md, row, p.dst_md), attr,
                                        engine());
        p.epilogue = dnnl::binary(pd);
        p.epilogue_impl = pd.impl_info_str();
      }
    } catch (const dnnl::error&) {
      p.epilogue.reset();
      return false;
    }
    if (mkl) {
      p.mkl_b = mkl_b_;
    } else {
      p.vec_b = vec_b_;
    }
    p.mkl_rows = rows;
    return true;
  }

  // The primitive for this post-op chain, bf16 first when the node asks for it; false when oneDNN has none.
  // `bf16_dst`: false where something after the primitive reads the destination as float32.
  bool try_create(MatMulPlan& p, const md& bias_src1, bool bf16_dst = true) {
    if (bf16_) {
      p.src_in = plain_desc(DType::kBFloat16, dims_of(p.src_md));
      p.wei_in = plain_desc(DType::kBFloat16, dims_of(p.wei_md));
      // The result in bf16 where only matmuls read it (through the RoundFloat, which hands it on).
      p.dst_out = bf16_out_ && bf16_dst && is_plain_desc(p.dst_md) ? with_data_type(p.dst_md, dt::bf16) : p.dst_md;
      if (try_create_with(p, bias_src1, dt::bf16)) return true;
      p.dst_out = p.dst_md;
      if (try_create_with(p, bias_src1, dt::bf16)) return true;
    }
    p.src_in = p.src_md;
    p.wei_in = p.wei_md;
    p.dst_out = p.dst_md;
    return try_create_with(p, bias_src1, dt::f32);
  }

  // The matmul's attributes: alpha as the output scale, the Bias as a binary add of `bias_src1` (none
  // when empty) and this node's post-op chain with the residual Z as `z`; nullopt when oneDNN has no such
  // post-op. Throws dnnl::error as oneDNN does.
  std::optional<dnnl::primitive_attr> make_attr(const md& bias_src1, const md& z, int& bias_po, int& z_po) const {
    dnnl::primitive_attr attr;
    if (alpha_ != 1.f) attr.set_output_scales(0, {alpha_});
    dnnl::post_ops po;
    bias_po = -1;
    if (!bias_src1.is_zero()) {
      bias_po = po.len();
      po.append_binary(dnnl::algorithm::binary_add, bias_src1);
    }
    if (!append_chain(po, z, z_po)) return std::nullopt;
    attr.set_post_ops(po);
    return attr;
  }

  bool try_create_with(MatMulPlan& p, const md& bias_src1, dt in_type) {
    try {
      const std::optional<dnnl::primitive_attr> attr = make_attr(bias_src1, p.z_md, p.bias_po, p.z_po);
      if (!attr) return false;
      const md wei_any(p.wei_md.dims(), in_type, tag::any);
      dnnl::matmul::desc d(p.src_in, p.packed_b_wanted ? wei_any : p.wei_in, p.dst_out);
      p.pd = dnnl::matmul::primitive_desc(d, *attr, engine());
      // oneDNN's reference implementations ("ref:any") run at a few hundred MFLOP/s: never taken.
      if (is_reference_impl(p.pd)) return false;
      p.prim = dnnl::matmul(p.pd);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }

  // A bf16 plan of a Linear layer (2-D dense bf16 A, packed constant B, the Bias a row vector) in blocks
  // of rows where matmul_row_blocks.h says that gains.
  void make_row_blocks(MatMulPlan& p, int64_t rows, int64_t K, int64_t N) {
    if (!bf16_ || p.src_in == p.src_md || dims_of(p.src_in).size() != 2 || p.bias_materialized || p.bias_after) return;
    // The whole matmul's chain (the Bias, a row vector here, is bias_md where it has one), Z per block.
    const md bias_src1 = p.bias_po >= 0 ? p.bias_md : md();
    p.row_blocks = MatMulRowBlocks::make(rows, K, N, p.wei_packed, p.dst_out.data_type(), z_input_ >= 0, [&](const md& z) {
      int bias_po = -1, z_po = -1;
      std::optional<dnnl::primitive_attr> attr = make_attr(bias_src1, z, bias_po, z_po);
      if (!attr) throw dnnl::error(dnnl_unimplemented, "no such post-op chain");
      return *attr;
    });
    if (p.row_blocks && impl_.find("+row_blocks") == std::string::npos) impl_ += "+row_blocks";
  }

  Result<MatMulPlan*> plan_for(const std::vector<int64_t>& ad, const std::vector<int64_t>& bd,
                               const std::vector<int64_t>* cd, const Tensor* const_b) {
    const std::vector<int64_t> cdims = cd ? *cd : std::vector<int64_t>{};
    for (auto& p : plans_)
      if (p->a_dims == ad && p->b_dims == bd && p->bias_dims == cdims) return p.get();
    const std::string& op = node_.op_type;
    if (ad.empty() || bd.empty()) return Status::invalid(op + ": A and B must have rank >= 1");
    auto plan = std::make_unique<MatMulPlan>();
    plan->a_dims = ad;
    plan->b_dims = bd;
    plan->bias_dims = cdims;
    // 1-D operands: A [K] -> [1, K], B [K] -> [K, 1]; transposition does not apply to them.
    std::vector<int64_t> a2 = ad, b2 = bd;
    const bool ta = trans_a_ && ad.size() >= 2, tb = trans_b_ && bd.size() >= 2;
    if (ad.size() == 1) a2.insert(a2.begin(), 1);
    if (bd.size() == 1) b2.push_back(1);
    const int64_t M = ta ? a2.back() : a2[a2.size() - 2], K = ta ? a2[a2.size() - 2] : a2.back();
    const int64_t KB = tb ? b2.back() : b2[b2.size() - 2], N = tb ? b2[b2.size() - 2] : b2.back();
    if (K != KB)
      return Status::invalid(op + ": inner dimensions differ (A " + dims_to_string(ad) + ", B " + dims_to_string(bd) + ")");
    std::vector<int64_t> abatch(a2.begin(), a2.end() - 2), bbatch(b2.begin(), b2.end() - 2);
    FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> batch, broadcast_dims(abatch, bbatch));
    const int rank = static_cast<int>(batch.size()) + 2;
    if (rank > kMaxRank) return Status::unsupported(op + ": rank above " + std::to_string(kMaxRank));
    plan->out_dims = batch;
    if (ad.size() > 1) plan->out_dims.push_back(M);
    if (bd.size() > 1) plan->out_dims.push_back(N);
    std::vector<int64_t> dst_dims = batch;
    dst_dims.push_back(M);
    dst_dims.push_back(N);
    int64_t total = M * N * K;
    for (int64_t d : batch) total *= d;
    if (bias_input_ >= 0) {
      auto bc = broadcast_dims(cdims, plan->out_dims);
      if (!bc.ok() || *bc != plan->out_dims || cdims.size() > plan->out_dims.size())
        return Status::invalid(op + ": Bias " + dims_to_string(cdims) + " does not broadcast to the output " +
                               dims_to_string(plan->out_dims));
    }
    if (total == 0) {
      plan->reference = true;  // empty dims: nothing for oneDNN to do, the reference fills zeros / bias
      plans_.push_back(std::move(plan));
      return plans_.back().get();
    }
    // A Linear layer (B without batch dims of its own, A not transposed): A's batch dims fold into M,
    // one [batch*M, K] x [K, N] GEMM instead of many small ones (torch's attention feeds [S, B, E]
    // activations, where per-batch GEMMs would have M = 1).
    bool b_batched = false;
    for (int64_t d : bbatch) b_batched = b_batched || d != 1;
    const bool fold = !ta && !b_batched && !batch.empty();
    if (fold) {
      int64_t rows = M;
      for (int64_t d : batch) rows *= d;
      const std::vector<int64_t> b_mat(b2.end() - 2, b2.end());
      plan->src_md = operand_desc({rows, K}, false, 2);
      plan->wei_md = operand_desc(b_mat, tb, 2);
      plan->dst_md = md({rows, N}, dt::f32, tag::ab);
    } else {
      plan->src_md = operand_desc(a2, ta, rank);
      plan->wei_md = operand_desc(b2, tb, rank);
      plan->dst_md = md(to_dims(dst_dims), dt::f32, to_dims(dense_strides(dst_dims)));
    }
    plan->packed_b_wanted = const_b != nullptr;
    if (z_input_ >= 0) plan->z_md = plan->dst_md;
    // The bias at the destination's rank, in dst's dims. A 1-D output's dropped dims are unit dims in dst.
    md bias_src1;
    if (bias_input_ >= 0) {
      std::vector<int64_t> bias_out = plan->out_dims;  // bias broadcast to out, then mapped to dst dims
      std::vector<int64_t> bx(plan->out_dims.size() - cdims.size(), 1);
      bx.insert(bx.end(), cdims.begin(), cdims.end());
      // Map out-dims positions to dst positions (insert the dropped M / N unit dims).
      if (ad.size() == 1) bx.insert(bx.end() - (bd.size() > 1 ? 1 : 0), 1);
      if (bd.size() == 1) bx.push_back(1);
      bool row_vector = true;  // varies along N only
      for (size_t i = 0; i + 1 < bx.size(); ++i) row_vector = row_vector && bx[i] == 1;
      if (fold) bx = {1, bx.back()};
      plan->bias_md = md(to_dims(bx), dt::f32, to_dims(dense_strides(bx)));
      bias_src1 = plan->bias_md;
      if (fold && !row_vector) bias_src1 = md();  // the folded rows cannot express it: materialized below
    }
    bool ok = !(bias_input_ >= 0 && bias_src1.is_zero()) && try_create(*plan, bias_src1);
    if (!ok && bias_input_ >= 0) {
      // oneDNN has no kernel for this bias broadcast: give it the bias at the full output shape.
      plan->bias_materialized = true;
      plan->bias_md = plan->dst_md;
      ok = try_create(*plan, plan->bias_md);
      if (ok && const_bias_.defined()) plan->full_bias = broadcast_plain(const_bias_, plan->out_dims);
      if (!ok && ops_.empty() && z_input_ < 0) {
        plan->bias_materialized = false;
        ok = try_create(*plan, md(), false);  // the bias is added to the float32 destination after
        plan->bias_after = ok;
        if (ok) plan->bias_add = plan_broadcast(plan->out_dims, cdims, plan->out_dims);
      }
    }
    int64_t rows = M;
    for (int64_t d : batch) rows *= d;
    if (!ok) {
      plan->reference = true;
    } else if (const_b && (fold || batch.empty()) && !ta && try_packed(*plan, *const_b, rows, K, N)) {
      impl_ = plan->mkl_b                        ? "mkl:sgemm_packed"
              : rows <= VecPackedB::kFewRows ? "vec:gemm_few_rows"
                                             : "vec:gemm_packed_avx2";
      if (plan->epilogue) impl_ += "+onednn:" + plan->epilogue_impl;
    } else {
      impl_ = std::string("onednn:matmul:") + plan->pd.impl_info_str();
      plan->wei_packed = plan->pd.weights_desc();
      if (const_b) {
        Tensor plain_b;  // adopted B (packed for other shapes) unpacked once for this plan
        if (!const_b->is_plain()) {
          FERRY_ASSIGN_OR_RETURN(plain_b, const_b->plain());
          const_b = &plain_b;
        }
        FERRY_ASSIGN_OR_RETURN(plan->packed_b, make_tensor(DType::kFloat32, dims_of(plan->wei_md), plan->pd.weights_desc()));
        reorder(as_memory(*const_b, plan->wei_md), as_memory(plan->packed_b, plan->pd.weights_desc()));
        make_row_blocks(*plan, rows, K, N);
      }
    }
    plans_.push_back(std::move(plan));
    return plans_.back().get();
  }

  const ir::Node& node_;
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.f, beta_ = 1.f;
  GemmChoice gemm_;  // which packed GEMM Linear layers take (choose_gemm): MKL, own, or none (oneDNN)
  bool bf16_;  // the precision pass asked for native bf16 and the CPU has it
  // and the result goes, through a RoundFloat only, to native-bf16 matmuls as A only: written in bf16
  bool bf16_out_;
  int bias_input_ = -1, z_input_ = -1;
  std::vector<PostOp> ops_;
  const ops::OpSchema* reference_ = nullptr;
  Tensor const_b_, const_bias_;
  std::shared_ptr<MklPackedB> mkl_b_;  // constant B packed for MKL once, shared by every plan
  std::shared_ptr<VecPackedB> vec_b_;  // or for the own packed GEMM
  std::vector<std::unique_ptr<MatMulPlan>> plans_;
  std::string impl_;
};

Result<std::unique_ptr<Kernel>> create_matmul(const ir::Node& node, const CpuOptions& o) {
  auto k = std::make_unique<MatMulKernel>(node, o);
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_matmul(KernelTable& t) {
  t.push_back({"", "MatMul", matmul_supports, create_matmul});
  t.push_back({"", "Gemm", matmul_supports, create_matmul});
  t.push_back({"com.ferry", "FusedMatMul", matmul_supports, create_matmul});
}

}  // namespace ferry::backends::cpu
