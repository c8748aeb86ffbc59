#include "ops/util/tensor_common.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace ferry::ops::tensor_ops {

Result<const Tensor*> tensor_input(const KernelContext& ctx, int i, const char* what) {
  if (!ctx.has_input(i)) return Status::invalid(std::string("missing input '") + what + "'");
  const RtValue* v = ctx.input_value(i);
  if (!v->is_tensor()) return Status::invalid(std::string("input '") + what + "' must be a tensor");
  return &v->tensor;
}

bool has_tensor_input(const KernelContext& ctx, int i) {
  return ctx.has_input(i) && ctx.input_value(i)->is_tensor();
}

Result<std::vector<int64_t>> int_values(const Tensor& t, const char* what) {
  if (!is_integer(t.dtype()))
    return Status::invalid(std::string("'") + what + "' must be an integer tensor, got " + dtype_str(t.dtype()));
  return t.to_int64_vector();
}

Result<int64_t> int_scalar(const Tensor& t, const char* what) {
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> v, int_values(t, what));
  if (v.size() != 1)
    return Status::invalid(std::string("'") + what + "' must hold one value, got " + t.describe());
  return v[0];
}

std::string dtype_str(DType t) { return std::string(dtype_name(t)); }

Status unsupported_dtype(const char* op, DType t) {
  return Status::unsupported(std::string(op) + " does not support dtype " + dtype_str(t));
}

void strided_copy(const void* src, int64_t base, const std::vector<int64_t>& src_strides, void* dst,
                  const std::vector<int64_t>& out_dims, size_t es) {
  const int r = static_cast<int>(out_dims.size());
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  if (n == 0) return;
  const auto* s = static_cast<const uint8_t*>(src);
  auto* o = static_cast<uint8_t*>(dst);
  if (r == 0) {
    std::memcpy(o, s + base * es, es);
    return;
  }
  // The innermost dim is copied as one run when contiguous in the source.
  const int64_t inner = out_dims[r - 1];
  const int64_t inner_stride = src_strides[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t off = base;
  for (int64_t done = 0; done < n; done += inner) {
    if (inner_stride == 1) {
      std::memcpy(o, s + off * es, static_cast<size_t>(inner) * es);
      o += inner * es;
    } else {
      int64_t q = off;
      for (int64_t k = 0; k < inner; ++k, q += inner_stride, o += es) std::memcpy(o, s + q * es, es);
    }
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < out_dims[d]) {
        off += src_strides[d];
        break;
      }
      off -= src_strides[d] * (out_dims[d] - 1);
      idx[d] = 0;
    }
  }
}

Result<std::vector<int64_t>> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, bool unique) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    FERRY_ASSIGN_OR_RETURN(int64_t n, normalize_axis(a, rank));
    if (unique && !seen.insert(n).second)
      return Status::invalid("axis " + std::to_string(a) + " is repeated in " + dims_to_string(axes));
    out.push_back(n);
  }
  return out;
}

Result<int64_t> normalize_index(int64_t index, int64_t dim, const char* what) {
  if (index < -dim || index >= dim)
    return Status::invalid(std::string(what) + " " + std::to_string(index) + " is out of range for an axis of size " +
                           std::to_string(dim));
  return index < 0 ? index + dim : index;
}

Result<Tensor> constant_node_value(const ir::Node& node) {
  using K = ir::Attribute::Kind;
  if (const Tensor* t = node.attr_tensor("value")) return *t;
  if (const ir::Attribute* a = node.attr("value_float")) return Tensor::scalar<float>(a->kind == K::kFloat ? a->f : 0.f);
  if (const ir::Attribute* a = node.attr("value_floats"))
    return Tensor::from_vector<float>(a->floats);
  if (const ir::Attribute* a = node.attr("value_int")) return Tensor::scalar<int64_t>(a->i);
  if (const ir::Attribute* a = node.attr("value_ints")) return Tensor::from_vector<int64_t>(a->ints);
  if (node.has_attr("value_string") || node.has_attr("value_strings"))
    return Status::unsupported("Constant with a string value: string tensors are not supported by ferry");
  if (node.has_attr("sparse_value")) return Status::unsupported("Constant with a sparse_value is not supported");
  return Status::invalid("Constant has none of the value attributes (value, value_float(s), value_int(s))");
}

namespace {

// Shape computations are tiny; the bound keeps inference from materializing real data.
constexpr int64_t kMaxFoldElems = 1024;

// For ops whose output size is set by input values rather than input sizes, whether the output stays
// within kMaxFoldElems (checked before running the kernel, which would otherwise allocate it).
bool value_sized_output_is_small(const std::string& op, const std::vector<RtValue>& in) {
  auto small = [](const std::vector<int64_t>& dims) {
    for (int64_t d : dims)
      if (d < 0) return false;
    auto n = checked_numel(dims, kMaxFoldElems);
    return n.ok() && *n <= kMaxFoldElems;
  };
  if (op == "ConstantOfShape") return in.size() >= 1 && in[0].is_tensor() && small(in[0].tensor.to_int64_vector());
  if (op == "Expand") {
    if (in.size() < 2 || !in[0].is_tensor() || !in[1].is_tensor()) return false;
    std::vector<int64_t> shape = in[1].tensor.to_int64_vector();
    for (int64_t& d : shape)
      if (d < 0) return false;
    auto dims = broadcast_dims(in[0].tensor.dims(), shape);
    return dims.ok() && small(*dims);
  }
  if (op == "Tile") {
    if (in.size() < 2 || !in[0].is_tensor() || !in[1].is_tensor()) return false;
    std::vector<int64_t> reps = in[1].tensor.to_int64_vector();
    const std::vector<int64_t>& d = in[0].tensor.dims();
    if (reps.size() != d.size()) return false;
    std::vector<int64_t> all = d;
    all.insert(all.end(), reps.begin(), reps.end());
    return small(all);
  }
  if (op == "Range") {
    if (in.size() < 3) return false;
    for (int i = 0; i < 3; ++i)
      if (!in[i].is_tensor() || in[i].tensor.numel() != 1) return false;
    const double s = in[0].tensor.as_double(0), l = in[1].tensor.as_double(0), d = in[2].tensor.as_double(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) return false;
    return std::ceil((l - s) / d) <= static_cast<double>(kMaxFoldElems);
  }
  return true;
}

// Ops cheap enough, and common enough in shape computations, to evaluate during inference.
bool foldable_op(const std::string& op) {
  static const std::set<std::string> ops = {
      "Identity", "Cast", "CastLike", "Gather", "GatherElements", "Concat", "Slice", "Squeeze", "Unsqueeze",
      "Reshape", "Flatten", "Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Max", "Min", "Equal", "Less",
      "Greater", "LessOrEqual", "GreaterOrEqual", "Where", "Not", "And", "Or", "ConstantOfShape", "Range",
      "Expand", "Tile", "ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax", "Floor", "Ceil", "Sign", "Clip",
      "Transpose", "Split", "Size", "Shape", "Sqrt", "Pow"};
  return ops.count(op) != 0;
}

// Ops that only move int64 values around (never compute with them), so a shape tensor holding
// stand-ins for unknown dims can pass through them.
bool moves_values_only(const ir::Node& p) {
  static const std::set<std::string> ops = {"Identity", "Gather", "Concat", "Slice", "Squeeze", "Unsqueeze",
                                            "Reshape", "Flatten", "Transpose", "Split", "Expand", "Tile"};
  if (ops.count(p.op_type)) return true;
  return p.op_type == "Cast" && p.attr_int("to", 0) == 7;  // to int64
}

// Evaluates small subgraphs with the reference kernels. A dim of a Shape's input that is not static
// becomes a stand-in value (kStandIn - k, far below any real shape value) remembered in `stand_ins`;
// stand-ins may flow through value-moving ops only, so a result either holds them verbatim or fails.
struct Folder {
  static constexpr int64_t kStandIn = -(int64_t{1} << 62);
  int budget = 256;
  bool allow_stand_ins = false;
  std::vector<Dim> stand_ins;

  static bool is_stand_in(int64_t v) { return v <= kStandIn && v > kStandIn - (int64_t{1} << 20); }
  static bool has_stand_ins(const Tensor& t) {
    if (t.dtype() != DType::kInt64) return false;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (is_stand_in(t.data<int64_t>()[i])) return true;
    return false;
  }

  std::optional<Tensor> eval(const ir::Value* v, int depth) {
    if (!v) return std::nullopt;
    if (v->is_constant()) return v->initializer;
    const ir::Node* p = v->producer;
    if (!p || !p->domain.empty() || depth > 48 || --budget < 0) return std::nullopt;
    if (p->op_type == "Constant") {
      auto r = constant_node_value(*p);
      if (!r.ok()) return std::nullopt;
      return std::move(r).value();
    }
    if (p->op_type == "Shape" || p->op_type == "Size") {
      if (auto t = shape_or_size(*p)) return t;
      // fall through: the input may itself be known.
    }
    if (!foldable_op(p->op_type)) return std::nullopt;
    std::vector<RtValue> values(p->inputs.size());
    std::vector<const RtValue*> ptrs(p->inputs.size(), nullptr);
    for (size_t i = 0; i < p->inputs.size(); ++i) {
      if (!p->inputs[i]) continue;
      std::optional<Tensor> t = eval(p->inputs[i], depth + 1);
      if (!t || t->numel() > kMaxFoldElems) return std::nullopt;
      // Stand-ins are data, never indices, shapes or axes: only the first input may carry them (and
      // every Concat input).
      if (has_stand_ins(*t)) {
        if (!moves_values_only(*p) || (i > 0 && p->op_type != "Concat")) return std::nullopt;
      }
      values[i] = RtValue(std::move(*t));
      ptrs[i] = &values[i];
    }
    if (!value_sized_output_is_small(p->op_type, values)) return std::nullopt;
    const OpSchema* s = OpRegistry::global().find(p->domain, p->op_type, p->opset);
    if (!s || !s->kernel) return std::nullopt;
    int n = static_cast<int>(p->inputs.size());
    if (n < s->min_inputs || n > s->max_inputs) return std::nullopt;
    KernelContext kc(*p, std::move(ptrs), nullptr);
    if (!s->kernel(kc).ok()) return std::nullopt;
    int o = v->producer_output;
    if (o < 0 || o >= static_cast<int>(kc.outputs().size()) || !kc.outputs()[o].is_tensor()) return std::nullopt;
    Tensor out = kc.outputs()[o].tensor;
    if (!out.defined() || out.numel() > kMaxFoldElems) return std::nullopt;
    return out;
  }

  std::optional<Tensor> shape_or_size(const ir::Node& p) {
    const ir::Value* in = p.has_input(0) ? p.inputs[0] : nullptr;
    if (!in || !in->shape) return std::nullopt;
    const Shape& s = *in->shape;
    const int64_t rank = static_cast<int64_t>(s.size());
    if (p.op_type == "Size") {
      if (!is_static(s)) return std::nullopt;
      int64_t n = 1;
      for (const Dim& d : s) n *= d.value;
      return Tensor::scalar<int64_t>(n);
    }
    int64_t start = p.opset >= 15 ? p.attr_int("start", 0) : 0;
    int64_t end = p.opset >= 15 ? p.attr_int("end", rank) : rank;
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    std::vector<int64_t> dims;
    for (int64_t i = start; i < end; ++i) {
      if (s[i].is_static()) {
        dims.push_back(s[i].value);
      } else {
        if (!allow_stand_ins) return std::nullopt;
        dims.push_back(kStandIn - static_cast<int64_t>(stand_ins.size()));
        stand_ins.push_back(s[i]);
      }
    }
    return Tensor::from_vector<int64_t>(dims);
  }
};

}  // namespace

std::optional<Tensor> known_value_of(const ir::Value* v) {
  Folder f;
  f.allow_stand_ins = true;  // e.g. Shape(x)[1] is known when only dim 0 of x is symbolic
  std::optional<Tensor> t = f.eval(v, 0);
  if (!t || Folder::has_stand_ins(*t)) return std::nullopt;
  return t;
}

std::optional<Tensor> known_value(const InferContext& ctx, int i) {
  if (const Tensor* t = ctx.input_constant(i)) return *t;  // folds shape computations too
  return std::nullopt;
}

std::optional<std::vector<ShapeEntry>> known_shape_entries(const InferContext& ctx, int i) {
  std::optional<Tensor> t = known_value(ctx, i);
  Folder f;
  if (!t) {
    f.allow_stand_ins = true;
    t = f.eval(ctx.input(i), 0);
  }
  if (!t || !is_integer(t->dtype()) || t->rank() > 1) return std::nullopt;
  std::vector<ShapeEntry> out;
  for (int64_t k = 0; k < t->numel(); ++k) {
    const int64_t v = t->as_int64(k);
    ShapeEntry e;
    if (t->dtype() == DType::kInt64 && Folder::is_stand_in(v)) {
      const int64_t id = Folder::kStandIn - v;
      if (id < 0 || id >= static_cast<int64_t>(f.stand_ins.size())) return std::nullopt;
      e.dim = f.stand_ins[id];
    } else {
      e.value = v;
      if (v >= 0) e.dim = Dim(v);
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<std::vector<int64_t>> known_ints(const InferContext& ctx, int i) {
  std::optional<Tensor> t = known_value(ctx, i);
  if (!t || !is_integer(t->dtype())) return std::nullopt;
  return t->to_int64_vector();
}

std::optional<std::vector<int64_t>> static_input_dims(const InferContext& ctx, int i) {
  const std::optional<Shape>* s = ctx.input_shape(i);
  if (!s || !*s || !is_static(**s)) return std::nullopt;
  return static_dims(**s);
}

Shape unknown_dims(int64_t rank) { return Shape(static_cast<size_t>(std::max<int64_t>(rank, 0))); }


Result<std::vector<int64_t>> concat_dims(const std::vector<const Tensor*>& xs, int64_t axis_attr) {
  if (xs.empty()) return Status::invalid("Concat needs at least one input");
  const Tensor& first = *xs[0];
  const int64_t rank = first.rank();
  if (rank == 0) return Status::invalid("Concat cannot join 0-d tensors");
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, rank));
  std::vector<int64_t> dims = first.dims();
  dims[axis] = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Tensor& x = *xs[k];
    if (x.dtype() != first.dtype())
      return Status::invalid("input " + std::to_string(k) + " is " + dtype_str(x.dtype()) + ", input 0 is " +
                             dtype_str(first.dtype()));
    if (x.rank() != rank)
      return Status::invalid("input " + std::to_string(k) + " " + x.describe() + " has a different rank than input 0 " +
                             first.describe());
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && x.dims()[d] != first.dims()[d])
        return Status::invalid("input " + std::to_string(k) + " " + x.describe() + " does not match input 0 " +
                               first.describe() + " outside axis " + std::to_string(axis));
    dims[axis] += x.dims()[axis];
  }
  return dims;
}

void concat_copy(const std::vector<const Tensor*>& xs, int64_t axis_attr, Tensor& out) {
  const std::vector<int64_t>& dims = out.dims();
  const int64_t rank = out.rank();
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  const size_t es = dtype_size(out.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= dims[d];
  auto* dst = static_cast<uint8_t*>(out.raw());
  const int64_t out_row = dims[axis] * inner;
  int64_t col = 0;
  for (const Tensor* x : xs) {
    const int64_t row = x->dims()[axis] * inner;
    const auto* src = static_cast<const uint8_t*>(x->raw());
    for (int64_t o = 0; o < outer; ++o) copy_elems(dst + (o * out_row + col) * es, src + o * row * es, row, es);
    col += row;
  }
}

Status infer_concat(InferContext& ctx) {
  DType dt = DType::kUndefined;
  int rank = -1;
  for (int i = 0; i < ctx.node().num_inputs(); ++i) {
    if (dt == DType::kUndefined) dt = ctx.input_dtype(i);
    if (rank < 0) rank = ctx.input_rank(i);
  }
  if (rank <= 0) {
    ctx.set_output(0, dt, std::nullopt);
    return Status();
  }
  FERRY_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx.node().attr_int("axis", 0), rank));
  Shape out = unknown_dims(rank);
  int64_t total = 0;
  bool total_known = true;
  for (int i = 0; i < ctx.node().num_inputs(); ++i) {
    const std::optional<Shape>* s = ctx.input_shape(i);
    if (!s || !*s) {
      total_known = false;
      continue;
    }
    if (static_cast<int>((*s)->size()) != rank)
      return Status::invalid("Concat inputs have different ranks (" + std::to_string(rank) + " and " +
                             std::to_string((*s)->size()) + ")");
    for (int d = 0; d < rank; ++d) {
      const Dim& v = (**s)[d];
      if (d == axis) {
        if (v.is_static()) total += v.value;
        else total_known = false;
      } else if (!out[d].is_static() && (v.is_static() || out[d].symbol.empty())) {
        out[d] = v;
      } else if (out[d].is_static() && v.is_static() && out[d].value != v.value) {
        return Status::invalid("Concat inputs differ in dim " + std::to_string(d) + " (" + out[d].to_string() +
                               " vs " + v.to_string() + ")");
      }
    }
  }
  out[axis] = total_known ? Dim(total) : Dim();
  ctx.set_output(0, dt, out);
  return Status();
}

}  // namespace ferry::ops::tensor_ops
