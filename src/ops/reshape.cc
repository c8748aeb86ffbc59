// Reshape (0 copies the input dim unless allowzero, -1 is inferred) and Flatten (to 2-D at `axis`).
// Both only relabel dims: the output shares the input's buffer.
#include <algorithm>

#include "ops/util/tensor_common.h"

namespace ferry::ops {

namespace {
using namespace tensor_ops;

Result<std::vector<int64_t>> reshape_dims(const std::vector<int64_t>& in, const std::vector<int64_t>& shape,
                                          bool allowzero) {
  std::vector<int64_t> out(shape.size());
  int infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    if (s == -1) {
      if (infer_at >= 0) return Status::invalid("shape " + dims_to_string(shape) + " has more than one -1");
      infer_at = static_cast<int>(i);
      out[i] = 1;
    } else if (s == 0) {
      has_zero = true;
      if (allowzero) {
        out[i] = 0;
      } else {
        if (i >= in.size())
          return Status::invalid("shape " + dims_to_string(shape) + " copies dim " + std::to_string(i) +
                                 " (0) but the input " + dims_to_string(in) + " has no such dim");
        out[i] = in[i];
      }
    } else if (s < -1) {
      return Status::invalid("shape " + dims_to_string(shape) + " has invalid value " + std::to_string(s));
    } else {
      out[i] = s;
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    return Status::invalid("shape " + dims_to_string(shape) + " has both 0 (with allowzero) and -1");
  FERRY_ASSIGN_OR_RETURN(int64_t in_n, checked_numel(in));
  if (infer_at >= 0) {
    int64_t rest = 1;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int>(i) != infer_at) {
        FERRY_ASSIGN_OR_RETURN(rest, checked_numel({rest, out[i]}));
      }
    if (rest == 0 || in_n % rest != 0)
      return Status::invalid("cannot reshape " + dims_to_string(in) + " to " + dims_to_string(shape) +
                             ": the -1 dim cannot be inferred");
    out[infer_at] = in_n / rest;
  }
  FERRY_ASSIGN_OR_RETURN(int64_t out_n, checked_numel(out));
  if (out_n != in_n)
    return Status::invalid("cannot reshape " + dims_to_string(in) + " (" + std::to_string(in_n) + " elements) to " +
                           dims_to_string(out));
  return out;
}

bool allowzero_of(const ir::Node& n) { return n.opset >= 14 && n.attr_int("allowzero", 0) != 0; }

Status reshape_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "data"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* s, tensor_input(ctx, 1, "shape"));
  if (s->rank() != 1) return Status::invalid("shape input must be 1-D, got " + s->describe());
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> shape, int_values(*s, "shape"));
  FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, reshape_dims(x->dims(), shape, allowzero_of(ctx.node())));
  FERRY_ASSIGN_OR_RETURN(Tensor out, x->reshaped(dims));
  ctx.set_output(0, std::move(out));
  return Status();
}

// The -1 entry of a Reshape whose dims are partly symbolic: symbols the input and output share cancel,
// and what remains must be static on both sides.
Dim infer_minus_one(const Shape& in, const Shape& out_without_minus_one) {
  std::vector<Dim> a(in.begin(), in.end()), b(out_without_minus_one.begin(), out_without_minus_one.end());
  for (auto it = b.begin(); it != b.end();) {
    if (!it->is_static() && !it->symbol.empty()) {
      auto m = std::find_if(a.begin(), a.end(), [&](const Dim& d) { return d.symbol == it->symbol && !d.is_static(); });
      if (m != a.end()) {
        a.erase(m);
        it = b.erase(it);
        continue;
      }
    }
    ++it;
  }
  int64_t pa = 1, pb = 1;
  for (const Dim& d : a) {
    if (!d.is_static()) return Dim();
    pa *= d.value;
  }
  for (const Dim& d : b) {
    if (!d.is_static()) return Dim();
    pb *= d.value;
  }
  if (pb == 0 || pa % pb != 0) return Dim();
  return Dim(pa / pb);
}

Status reshape_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const bool allowzero = allowzero_of(ctx.node());
  std::optional<std::vector<int64_t>> shape = known_ints(ctx, 1);
  if (shape) {
    if (auto in = static_input_dims(ctx, 0)) {
      FERRY_ASSIGN_OR_RETURN(std::vector<int64_t> dims, reshape_dims(*in, *shape, allowzero));
      ctx.set_output(0, dt, to_shape(dims));
      return Status();
    }
  }
  std::optional<std::vector<ShapeEntry>> entries = known_shape_entries(ctx, 1);
  if (!entries) {
    const std::optional<Shape>* ss = ctx.input_shape(1);
    std::optional<Shape> out;
    if (ss && *ss && (*ss)->size() == 1 && (**ss)[0].is_static()) out = unknown_dims((**ss)[0].value);
    ctx.set_output(0, dt, out);
    return Status();
  }
  // Partly known: copied (0) dims keep their symbols, stand-ins are the dims they stand for, and -1 is
  // solved when the symbols cancel.
  const std::optional<Shape>* in = ctx.input_shape(0);
  const bool in_known = in && *in;
  Shape out;
  int minus_one = -1;
  for (size_t i = 0; i < entries->size(); ++i) {
    const ShapeEntry& e = (*entries)[i];
    if (!e.value) {
      out.push_back(e.dim);
    } else if (*e.value == 0 && !allowzero) {
      out.push_back(in_known && i < (*in)->size() ? (**in)[i] : Dim());
    } else if (*e.value == -1 && minus_one < 0) {
      minus_one = static_cast<int>(i);
      out.emplace_back();
    } else {
      out.push_back(*e.value >= 0 ? Dim(*e.value) : Dim());
    }
  }
  if (minus_one >= 0 && in_known) {
    Shape rest = out;
    rest.erase(rest.begin() + minus_one);
    out[minus_one] = infer_minus_one(**in, rest);
  }
  ctx.set_output(0, dt, out);
  return Status();
}

Result<int64_t> flatten_axis(const ir::Node& n, int64_t rank) {
  int64_t axis = n.attr_int("axis", 1);
  if (axis < -rank || axis > rank)
    return Status::invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Status flatten_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(ctx, 0, "input"));
  FERRY_ASSIGN_OR_RETURN(int64_t axis, flatten_axis(ctx.node(), x->rank()));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < x->rank(); ++i) (i < axis ? outer : inner) *= x->dim(i);
  FERRY_ASSIGN_OR_RETURN(Tensor out, x->reshaped({outer, inner}));
  ctx.set_output(0, std::move(out));
  return Status();
}

Status flatten_infer(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  const std::optional<Shape>* in = ctx.input_shape(0);
  if (!in || !*in) {
    ctx.set_output(0, dt, unknown_dims(2));
    return Status();
  }
  const Shape& s = **in;
  FERRY_ASSIGN_OR_RETURN(int64_t axis, flatten_axis(ctx.node(), static_cast<int64_t>(s.size())));
  auto product = [&](size_t from, size_t to) -> Dim {
    if (to - from == 1) return s[from];
    int64_t p = 1;
    for (size_t i = from; i < to; ++i) {
      if (!s[i].is_static()) return Dim();
      p *= s[i].value;
    }
    return Dim(p);
  };
  ctx.set_output(0, dt, Shape{product(0, axis), product(axis, s.size())});
  return Status();
}
}  // namespace

void register_reshape(OpRegistry& r) {
  r.add(OpSchema{.op_type = "Reshape", .since_version = 5, .min_inputs = 2, .max_inputs = 2,
                 .infer = reshape_infer, .kernel = reshape_kernel});
  r.add(OpSchema{.op_type = "Flatten", .since_version = 1, .min_inputs = 1, .max_inputs = 1,
                 .infer = flatten_infer, .kernel = flatten_kernel});
}

}  // namespace ferry::ops
