// Transpose (fp32, any rank up to 12): contiguous runs copied by threads when the last axis stays
// innermost (attention's head split/merge), else a oneDNN reorder: the source described with the output's
// dims and the input's strides permuted, the destination dense. oneDNN's reorder kernels copy in
// blocks and threads, where the reference kernel walks elements one by one (attention's head
// split/merge transposes showed up in transformer profiles).
//
// NCHW <-> NHWC without a copy: the bytes of an NCHW tensor in oneDNN's channels-last layout (acdb) are
// exactly the plain NHWC tensor, so perm (0,2,3,1) of such an input and perm (0,3,1,2) of a plain input
// (when every reader takes layouts) return a view of the input under the other dims and layout.
// ConvNeXt does both around every block (depthwise conv -> NHWC LayerNorm / MLP -> back): 44
// Transposes and the convs' own conversions to and from plain NCHW went away.
//
// In bf16 mode a Transpose whose readers are all native-bf16 attentions (the head split of Q, K, V)
// writes its result in bf16 storage (layout.h), rounding to nearest even as the attention's own
// conversion would: half the bytes written, and no conversion in the attention.
#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "backends/cpu/shape_prepared_kernel.h"
#include "backends/cpu/strided_copy.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;

// The 4-D perms that can be views: to channels-last (0,2,3,1) and back (0,3,1,2).
enum class View { kNone, kToChannelsLast, kFromChannelsLast };

View view_kind(const ir::Node& node) {
  const std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_input(0) || !node.has_output(0)) return View::kNone;
  if (perm == std::vector<int64_t>{0, 2, 3, 1} && may_produce_blocked(*node.inputs[0])) return View::kToChannelsLast;
  if (perm == std::vector<int64_t>{0, 3, 1, 2} && may_produce_blocked(*node.outputs[0])) return View::kFromChannelsLast;
  return View::kNone;
}

// The view with size-1 dims dropped and neighbours merged where the source holds them contiguously
// (the destination is dense, so they are contiguous there too): the same copy in the fewest dims.
// oneDNN's reorder takes its fast transposing kernels for [8, 512, 49] <- [8, 49, 512] but walks the
// equivalent 6-D view of maxvit's window departition ([0,5,1,3,2,4] of [8,7,7,1,1,512]) one element at
// a time (1.36 ms for 0.8 MB).
void coalesce(dnnl::memory::dims& dims, dnnl::memory::dims& strides) {
  dnnl::memory::dims d, s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == strides[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = strides[i];
      continue;
    }
    d.push_back(dims[i]);
    s.push_back(strides[i]);
  }
  if (d.empty()) d = {1}, s = {1};
  dims = std::move(d);
  strides = std::move(s);
}

class TransposeKernel : public ShapePreparedKernel {
 public:
  TransposeKernel(const ir::Node& node, const CpuOptions& o)
      : ShapePreparedKernel(node),
        view_kind_(view_kind(node)),
        bf16_out_(view_kind_ == View::kNone && node.has_output(0) && read_as_bf16_by_attention(*node.outputs[0], o)) {}
  std::string name() const override { return "cpu:onednn:transpose"; }
  bool accepts_layouts() const override { return true; }
  bool may_view_input(int output) const override { return output == 0 && view_kind_ != View::kNone; }

  Status run(ops::KernelContext& ctx) override {
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "data"));
    if (view_kind_ != View::kNone && x->dtype() == DType::kFloat32 && x->rank() == 4) {
      const std::vector<int64_t>& d = x->dims();
      if (view_kind_ == View::kToChannelsLast && !x->is_plain()) {
        // Another oneDNN layout (a conv's nChw16c): one reorder into channels-last, then the view.
        FERRY_ASSIGN_OR_RETURN(Tensor nhwc, reorder_to(*x, channels_last_desc(d)));  // x itself when channels-last
        FERRY_ASSIGN_OR_RETURN(Tensor y, nhwc.reshaped({d[0], d[2], d[3], d[1]}));
        y.set_layout(nullptr);
        ctx.set_output(0, std::move(y));
        return Status();
      }
      if (view_kind_ == View::kFromChannelsLast && x->is_plain()) {
        const std::vector<int64_t> nchw{d[0], d[3], d[1], d[2]};
        FERRY_ASSIGN_OR_RETURN(Tensor y, x->reshaped(nchw));
        y.set_layout(std::make_shared<DnnlLayout>(channels_last_desc(nchw)));
        ctx.set_output(0, std::move(y));
        return Status();
      }
    }
    if (x->dtype() != DType::kFloat32 || x->rank() == 0 || x->numel() == 0 || !ready_for(x->dims()))
      return run_reference_on_plain(ctx);  // a bad perm: the reference reports it
    // Any other layout is made plain first.
    Tensor plain_x;
    if (!x->is_plain()) {
      FERRY_ASSIGN_OR_RETURN(plain_x, x->plain());
      x = &plain_x;
    }
    if (bf16_out_) {
      FERRY_ASSIGN_OR_RETURN(Tensor out, new_output(ctx, 0, DType::kFloat32, out_dims_, dst_md_, true));
      prim_.execute(stream(), {{DNNL_ARG_FROM, as_memory(*x, src_md_)}, {DNNL_ARG_TO, as_memory(out, dst_md_)}});
      stream().wait();
      return set_output(ctx, 0, std::move(out), true);
    }
    FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output_uninit(0, DType::kFloat32, out_dims_));
    if (runs_) {
      strided_copy(view_, x->data<float>(), y->data<float>());
      return Status();
    }
    prim_.execute(stream(), {{DNNL_ARG_FROM, as_memory(*x, src_md_)}, {DNNL_ARG_TO, as_memory(*y, dst_md_)}});
    stream().wait();
    return Status();
  }

 private:
  bool prepare_for(const std::vector<int64_t>& d) override {
    const int r = static_cast<int>(d.size());
    std::vector<int64_t> perm = node_.attr_ints("perm");
    if (perm.empty())
      for (int i = r - 1; i >= 0; --i) perm.push_back(i);
    if (static_cast<int>(perm.size()) != r) return false;
    std::vector<bool> seen(r, false);
    for (int64_t& p : perm) {
      if (p < 0) p += r;
      if (p < 0 || p >= r || seen[p]) return false;
      seen[p] = true;
    }
    std::vector<int64_t> in_strides(r, 1);
    for (int i = r - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * d[i + 1];
    dnnl::memory::dims od(r), os(r);
    out_dims_.assign(r, 0);
    for (int i = 0; i < r; ++i) {
      out_dims_[i] = od[i] = d[perm[i]];
      os[i] = in_strides[perm[i]];
    }
    view_ = StridedView{out_dims_, std::vector<int64_t>(os.begin(), os.end()), 0};
    runs_ = !bf16_out_ && plan_strided_copy(view_);
    if (runs_) return true;
    try {
      // The bf16 result keeps its dims: its layout (bf16 storage over out_dims_) is what readers check.
      if (!bf16_out_) coalesce(od, os);
      src_md_ = md(od, dnnl::memory::data_type::f32, os);
      dst_md_ = bf16_out_ ? plain_desc(DType::kBFloat16, out_dims_) : plain_desc(DType::kFloat32, {od.begin(), od.end()});
      prim_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), src_md_, engine(), dst_md_));
    } catch (const dnnl::error&) {
      return false;
    }
    return true;
  }

  View view_kind_;
  bool bf16_out_;  // every reader is a native-bf16 attention: the result in bf16 storage
  std::vector<int64_t> out_dims_;
  bool runs_ = false;  // the last axis stays innermost: memcpy runs instead of the reorder
  StridedView view_;
  md src_md_, dst_md_;
  dnnl::reorder prim_;
};

Result<std::unique_ptr<Kernel>> create_transpose(const ir::Node& node, const CpuOptions& o) {
  auto k = std::make_unique<TransposeKernel>(node, o);
  FERRY_RETURN_IF_ERROR(k->init());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_transpose(KernelTable& t) {
  t.push_back({"", "Transpose", float32_data_supports, create_transpose});
  declare_layout_aware("", "Transpose");
}

}  // namespace ferry::backends::cpu
