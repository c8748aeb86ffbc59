// ConvTranspose on oneDNN deconvolution (fp32, 1-3 spatial dims, groups, dilations, strides, pads,
// output_padding / output_shape / auto_pad), weights prepacked once. A geometry oneDNN rejects (e.g.
// negative padding) runs the op's reference kernel instead, so support never depends on the shape.
#include <memory>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/layout.h"
#include "ops/util/nn_common.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

struct DeconvGeom {
  std::vector<int64_t> strides, dilations, pad_begin, pad_end, out;
};

// The output size and pads, as the reference kernel (src/ops/conv_transpose.cc) computes them: from
// output_shape (auto_pad SAME_* derives the pads, otherwise the explicit begin pads place the result),
// from auto_pad SAME_* (out = in * stride), or from explicit pads and output_padding.
Result<DeconvGeom> deconv_geometry(const ir::Node& node, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel) {
  const size_t n = in.size();
  auto ints = [&](const char* name, std::vector<int64_t> dflt) {
    std::vector<int64_t> v = node.attr_ints(name, dflt);
    return v.empty() ? dflt : v;
  };
  DeconvGeom g;
  g.strides = ints("strides", std::vector<int64_t>(n, 1));
  g.dilations = ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> out_pad = ints("output_padding", std::vector<int64_t>(n, 0));
  if (g.strides.size() != n || g.dilations.size() != n || out_pad.size() != n)
    return Status::invalid("ConvTranspose: strides, dilations and output_padding need " + std::to_string(n) + " values");
  for (size_t i = 0; i < n; ++i)
    if (g.strides[i] <= 0 || g.dilations[i] <= 0 || out_pad[i] < 0 || kernel[i] <= 0 ||
        g.strides[i] > ops::nn::kMaxWindowAttr || g.dilations[i] > ops::nn::kMaxWindowAttr ||
        out_pad[i] > ops::nn::kMaxWindowAttr || kernel[i] > ops::nn::kMaxWindowAttr)
      return Status::invalid("ConvTranspose: strides, dilations and kernel must be positive, output_padding >= 0");
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool has_pads = node.has_attr("pads") && auto_pad != "VALID";
  std::vector<int64_t> pads = has_pads ? node.attr_ints("pads") : std::vector<int64_t>(2 * n, 0);
  if (pads.size() != 2 * n) return Status::invalid("ConvTranspose: pads must have " + std::to_string(2 * n) + " values");
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != n)
    return Status::invalid("ConvTranspose: output_shape must have " + std::to_string(n) + " values");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (out_shape.empty() && same && !has_pads)
    for (size_t i = 0; i < n; ++i) out_shape.push_back(in[i] * g.strides[i]);
  g.pad_begin.assign(n, 0);
  g.pad_end.assign(n, 0);
  g.out.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t eff = (kernel[i] - 1) * g.dilations[i] + 1;
    const int64_t full = g.strides[i] * (in[i] - 1) + out_pad[i] + eff;
    if (!out_shape.empty()) {
      g.out[i] = out_shape[i];
      g.pad_begin[i] = !same ? pads[i] : auto_pad == "SAME_UPPER" ? floor_div2(full - out_shape[i])
                                                                 : full - out_shape[i] - floor_div2(full - out_shape[i]);
    } else {
      if (pads[i] < 0 || pads[i + n] < 0) return Status::invalid("ConvTranspose: pads must not be negative");
      g.pad_begin[i] = pads[i];
      g.out[i] = full - pads[i] - pads[i + n];
    }
    if (g.out[i] <= 0)
      return Status::invalid("ConvTranspose: output spatial dim " + std::to_string(i) + " would be " + std::to_string(g.out[i]));
    // oneDNN: out = (in - 1) * stride + eff - pad_begin - pad_end (output_padding lands in pad_end).
    g.pad_end[i] = g.strides[i] * (in[i] - 1) + eff - g.pad_begin[i] - g.out[i];
  }
  return g;
}

bool deconv_supports(const ir::Node& node, const CpuOptions& o) {
  if (!node.has_input(0) || !node.has_input(1)) return false;
  for (int i = 0; i < node.num_inputs(); ++i)
    if (node.has_input(i) && node.inputs[i]->dtype != DType::kFloat32) return false;
  const auto& ws = node.inputs[1]->shape;
  return ws && ws->size() >= 3 && ws->size() <= 5;
}


struct DeconvPlan {
  std::vector<int64_t> in_dims, out_dims;
  bool fallback = false;  // oneDNN rejected the geometry: the reference kernel runs
  dnnl::deconvolution_forward::primitive_desc pd;
  dnnl::deconvolution_forward prim;
  Tensor packed_w;
};

class DeconvKernel : public Kernel {
 public:
  DeconvKernel(const ir::Node& node, bool blocked_out) : node_(node), blocked_out_(blocked_out) {
    if (node.inputs[1]->is_constant()) const_w_ = node.inputs[1]->initializer;
  }
  std::string name() const override { return "cpu:onednn:deconvolution"; }
  bool accepts_layouts() const override { return true; }

  Status prepare() {
    const ir::Value* x = node_.inputs[0];
    if (x->shape && is_static(*x->shape) && const_w_.defined()) return plan_for(static_dims(*x->shape), const_w_).status();
    return Status();
  }

  Status run(ops::KernelContext& ctx) override {
    const std::string& op = node_.op_type;
    FERRY_ASSIGN_OR_RETURN(const Tensor* x, ops::nn::tensor_in(ctx, 0, "X"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* w, ops::nn::tensor_in(ctx, 1, "W"));
    FERRY_ASSIGN_OR_RETURN(const Tensor* b, ops::nn::optional_tensor_in(ctx, 2, "B"));
    if (x->dtype() != DType::kFloat32 || w->dtype() != DType::kFloat32 || (b && b->dtype() != DType::kFloat32))
      return Status::invalid(op + ": the cpu kernel takes float32 X, W and B");
    FERRY_ASSIGN_OR_RETURN(DeconvPlan * p, plan_for(x->dims(), *w));
    if (p->fallback) return run_reference(ctx);
    if (b && (b->rank() != 1 || b->dim(0) != p->out_dims[1]))
      return Status::invalid(op + ": B must be a 1-D tensor of " + std::to_string(p->out_dims[1]) + " values");
    FERRY_ASSIGN_OR_RETURN(Tensor src, reorder_to(*x, p->pd.src_desc()));
    Tensor wt = p->packed_w;
    if (!wt.defined()) {
      FERRY_ASSIGN_OR_RETURN(wt, pack(*w, p->pd.weights_desc()));
    }
    FERRY_ASSIGN_OR_RETURN(Tensor dst, new_output(ctx, 0, DType::kFloat32, p->out_dims, p->pd.dst_desc(), blocked_out_));
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, as_memory(src, p->pd.src_desc())},
                                               {DNNL_ARG_WEIGHTS, as_memory(wt, p->pd.weights_desc())},
                                               {DNNL_ARG_DST, as_memory(dst, p->pd.dst_desc())}};
    if (b) args.emplace(DNNL_ARG_BIAS, as_memory(*b, p->pd.bias_desc()));
    if (x->numel() > 0) {
      p->prim.execute(stream(), args);
      stream().wait();
    }
    return set_output(ctx, 0, std::move(dst), blocked_out_);
  }

 private:
  int64_t group() const { return node_.attr_int("group", 1); }

  // ONNX W [C, M/G, k...] as oneDNN's [G, M/G, C/G, k...] (or [M, C, k...]): a strided view, no copy.
  md onnx_weights_desc(const Tensor& w) const {
    const int64_t G = group(), C = w.dim(0), mg = w.dim(1), cg = C / G;
    int64_t kvol = 1;
    std::vector<int64_t> k(w.dims().begin() + 2, w.dims().end());
    for (int64_t v : k) kvol *= v;
    dnnl::memory::dims dims, strides;
    if (G > 1) {
      dims = {G, mg, cg};
      strides = {cg * mg * kvol, kvol, mg * kvol};
    } else {
      dims = {mg, C};
      strides = {kvol, mg * kvol};
    }
    int64_t s = kvol;
    for (int64_t v : k) {
      dims.push_back(v);
      s /= v;
      strides.push_back(s);
    }
    return md(dims, dt::f32, strides);
  }

  Result<Tensor> pack(const Tensor& w, const md& want) {
    const md from = onnx_weights_desc(w);
    FERRY_ASSIGN_OR_RETURN(Tensor out, make_tensor(DType::kFloat32, w.dims(), want));
    reorder(as_memory(w, from), as_memory(out, want));
    out.set_layout(std::make_shared<DnnlLayout>(want));
    return out;
  }

  Status run_reference(ops::KernelContext& ctx) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(node_.domain, node_.op_type, node_.opset);
    if (!s) return Status::unsupported(node_.label() + ": no reference kernel");
    std::vector<RtValue> plain;
    plain.reserve(ctx.num_inputs());
    std::vector<const RtValue*> ins;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const RtValue* v = ctx.input_value(i);
      if (v && v->is_tensor() && !v->tensor.is_plain()) {
        FERRY_ASSIGN_OR_RETURN(Tensor t, v->tensor.plain());
        plain.emplace_back(std::move(t));
        v = &plain.back();
      }
      ins.push_back(v);
    }
    ops::KernelContext ref(node_, ins, ctx.runner());
    FERRY_RETURN_IF_ERROR(s->kernel(ref));
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_value(i, std::move(ref.outputs()[i]));
    return Status();
  }

  Result<DeconvPlan*> plan_for(const std::vector<int64_t>& xd, const Tensor& w) {
    for (auto& p : plans_)
      if (p->in_dims == xd) return p.get();
    const std::string& op = node_.op_type;
    const int64_t G = group();
    if (w.rank() < 3 || w.rank() > 5 || static_cast<int>(xd.size()) != w.rank())
      return Status::invalid(op + ": X " + dims_to_string(xd) + " and W " + w.describe() + " must have the same rank, 3 to 5");
    if (G <= 0 || xd[1] != w.dim(0) || w.dim(0) % G != 0)
      return Status::invalid(op + ": W " + w.describe() + " must have X's " + std::to_string(xd[1]) +
                             " channels as dim 0, divisible by group " + std::to_string(G));
    std::vector<int64_t> in_sp(xd.begin() + 2, xd.end()), k(w.dims().begin() + 2, w.dims().end());
    if (node_.has_attr("kernel_shape") && node_.attr_ints("kernel_shape") != k)
      return Status::invalid(op + ": kernel_shape attribute differs from W's spatial dims");
    FERRY_ASSIGN_OR_RETURN(DeconvGeom g, deconv_geometry(node_, in_sp, k));
    auto plan = std::make_unique<DeconvPlan>();
    plan->in_dims = xd;
    plan->out_dims = {xd[0], w.dim(1) * G};
    for (int64_t o : g.out) plan->out_dims.push_back(o);
    std::vector<int64_t> wd = G > 1 ? std::vector<int64_t>{G, w.dim(1), w.dim(0) / G} : std::vector<int64_t>{w.dim(1), w.dim(0)};
    wd.insert(wd.end(), k.begin(), k.end());
    dnnl::memory::dims dil;
    for (int64_t d : g.dilations) dil.push_back(d - 1);
    md bias_md = node_.has_input(2) ? md({plan->out_dims[1]}, dt::f32, tag::x) : md();
    try {
      dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                          md(to_dims(xd), dt::f32, tag::any), md(to_dims(wd), dt::f32, tag::any), bias_md,
                                          md(to_dims(plan->out_dims), dt::f32, tag::any), to_dims(g.strides), dil,
                                          to_dims(g.pad_begin), to_dims(g.pad_end));
      plan->pd = dnnl::deconvolution_forward::primitive_desc(d, engine());
      plan->prim = dnnl::deconvolution_forward(plan->pd);
    } catch (const dnnl::error&) {
      plan->fallback = true;
    }
    if (!plan->fallback && const_w_.defined() && w.raw() == const_w_.raw()) {
      FERRY_ASSIGN_OR_RETURN(plan->packed_w, pack(const_w_, plan->pd.weights_desc()));
    }
    plans_.push_back(std::move(plan));
    return plans_.back().get();
  }

  const ir::Node& node_;
  bool blocked_out_;
  Tensor const_w_;
  std::vector<std::unique_ptr<DeconvPlan>> plans_;
};

Result<std::unique_ptr<Kernel>> create_deconv(const ir::Node& node, const CpuOptions& o) {
  auto k = std::make_unique<DeconvKernel>(node, node.has_output(0) && may_produce_blocked(*node.outputs[0]));
  FERRY_RETURN_IF_ERROR(k->prepare());
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

void register_conv_transpose(KernelTable& t) {
  t.push_back({"", "ConvTranspose", deconv_supports, create_deconv});
  declare_layout_aware("", "ConvTranspose");
}

}  // namespace ferry::backends::cpu
