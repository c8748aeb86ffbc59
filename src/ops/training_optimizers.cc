// The ai.onnx.preview.training optimizers: Adagrad, Adam, Momentum (standard and Nesterov).
// Each takes a learning rate R, an update count T, then groups of per-variable tensors
// (X..., G..., and one or two state tensors...) and returns the updated tensors group by group.
// Updates are computed in double and stored in the variable's dtype (float or double).
#include <cmath>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops {
namespace {

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

// The shared shape of the three ops: `groups` input tensors per variable after R and T, `out_groups`
// output tensors per variable.
struct OptimizerInputs {
  double r = 0;
  int64_t t = 0;
  int64_t n = 0;  // number of optimized variables
};

Result<OptimizerInputs> read_optimizer_inputs(KernelContext& ctx, const char* op, int groups, int out_groups) {
  const int num_in = ctx.num_inputs();
  if (num_in < 2 + groups || (num_in - 2) % groups != 0)
    return Status::invalid(std::string(op) + " takes R, T and " + std::to_string(groups) +
                           " tensors per optimized variable; got " + std::to_string(num_in) + " inputs");
  for (int i = 0; i < num_in; ++i) {
    if (!ctx.has_input(i) || !ctx.input_value(i)->is_tensor())
      return Status::invalid(std::string(op) + " input " + std::to_string(i) + " must be a tensor");
  }
  OptimizerInputs in;
  in.n = (num_in - 2) / groups;
  if (ctx.num_outputs() > out_groups * in.n)
    return Status::invalid(std::string(op) + " with " + std::to_string(in.n) + " variable(s) has at most " +
                           std::to_string(out_groups * in.n) + " outputs; got " + std::to_string(ctx.num_outputs()));
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (r.numel() != 1 || (r.dtype() != DType::kFloat32 && r.dtype() != DType::kFloat64))
    return Status::invalid(std::string(op) + " R must be a float or double scalar; got " + r.describe());
  if (t.numel() != 1 || t.dtype() != DType::kInt64)
    return Status::invalid(std::string(op) + " T must be an int64 scalar; got " + t.describe());
  in.r = r.as_double(0);
  in.t = t.as_int64(0);
  for (int i = 2; i < num_in; ++i) {
    const Tensor& v = ctx.input(i);
    if (v.dtype() != DType::kFloat32 && v.dtype() != DType::kFloat64)
      return Status::invalid(std::string(op) + " input " + std::to_string(i) + " must be float or double; got " +
                             v.describe());
  }
  // Tensors of one variable must agree with its X (the variables themselves may differ).
  for (int64_t v = 0; v < in.n; ++v) {
    const Tensor& x = ctx.input(static_cast<int>(2 + v));
    for (int g = 1; g < groups; ++g) {
      const Tensor& other = ctx.input(static_cast<int>(2 + g * in.n + v));
      if (other.dims() != x.dims() || other.dtype() != x.dtype())
        return Status::invalid(std::string(op) + " input " + std::to_string(2 + g * in.n + v) + " (" +
                               other.describe() + ") must match its variable " + x.describe());
    }
  }
  return in;
}

// Runs update(src, dst) element by element for every variable: src holds that element of the
// variable's `groups` inputs (X, G, state...), dst receives its `out_groups` outputs.
template <class Update>
Status run_optimizer(KernelContext& ctx, const OptimizerInputs& in, int groups, int out_groups, Update&& update) {
  for (int64_t v = 0; v < in.n; ++v) {
    const Tensor& x = ctx.input(static_cast<int>(2 + v));
    std::vector<const Tensor*> ins;
    for (int g = 0; g < groups; ++g) ins.push_back(&ctx.input(static_cast<int>(2 + g * in.n + v)));
    std::vector<Tensor> outs;
    for (int o = 0; o < out_groups; ++o) {
      FERRY_ASSIGN_OR_RETURN(Tensor t, Tensor::create(x.dtype(), x.dims()));
      outs.push_back(std::move(t));
    }
    std::vector<double> src(groups), dst(out_groups);
    for (int64_t i = 0; i < x.numel(); ++i) {
      for (int g = 0; g < groups; ++g) src[g] = ins[g]->as_double(i);
      update(src, dst);
      for (int o = 0; o < out_groups; ++o) {
        if (x.dtype() == DType::kFloat32)
          outs[o].data<float>()[i] = static_cast<float>(dst[o]);
        else
          outs[o].data<double>()[i] = dst[o];
      }
    }
    for (int o = 0; o < out_groups; ++o) {
      const int slot = static_cast<int>(o * in.n + v);
      if (ctx.wants_output(slot)) ctx.set_output(slot, std::move(outs[o]));
    }
  }
  return Status();
}

// Every output of group o has the type and shape of variable X_i (input 2 + i).
Status infer_optimizer(InferContext& ctx, int groups, int out_groups) {
  const int num_in = ctx.node().num_inputs();
  if (num_in < 2 + groups || (num_in - 2) % groups != 0) return Status();  // the kernel reports it
  const int n = (num_in - 2) / groups;
  for (int o = 0; o < out_groups; ++o) {
    for (int v = 0; v < n; ++v) {
      const ir::Value* x = ctx.input(2 + v);
      if (!x) continue;
      ctx.set_output(o * n + v, x->dtype, x->shape);
    }
  }
  return Status();
}

Status adagrad_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(OptimizerInputs in, read_optimizer_inputs(ctx, "Adagrad", 3, 2));
  const ir::Node& node = ctx.node();
  const double norm_coefficient = node.attr_float("norm_coefficient", 0.0f);
  const double decay_factor = node.attr_float("decay_factor", 0.0f);
  const double epsilon = node.attr_float("epsilon", 1e-6f);
  const double r = in.r / (1.0 + static_cast<double>(in.t) * decay_factor);
  // src: X, G, H; dst: X_new, H_new.
  return run_optimizer(ctx, in, 3, 2, [&](const std::vector<double>& s, std::vector<double>& d) {
    const double g = norm_coefficient * s[0] + s[1];
    const double h_new = s[2] + g * g;
    d[0] = s[0] - r * g / (std::sqrt(h_new) + epsilon);
    d[1] = h_new;
  });
}

Status adam_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(OptimizerInputs in, read_optimizer_inputs(ctx, "Adam", 4, 3));
  const ir::Node& node = ctx.node();
  const double alpha = node.attr_float("alpha", 0.9f);
  const double beta = node.attr_float("beta", 0.999f);
  const double epsilon = node.attr_float("epsilon", 1e-6f);
  const double norm_coefficient = node.attr_float("norm_coefficient", 0.0f);
  const double norm_coefficient_post = node.attr_float("norm_coefficient_post", 0.0f);
  const double t = static_cast<double>(in.t);
  // Bias correction of both moments only once updates have happened (T > 0).
  const double r_adjusted =
      in.t > 0 ? in.r * std::sqrt(1.0 - std::pow(beta, t)) / (1.0 - std::pow(alpha, t)) : in.r;
  // src: X, G, V, H; dst: X_new, V_new, H_new.
  return run_optimizer(ctx, in, 4, 3, [&](const std::vector<double>& s, std::vector<double>& d) {
    const double g = norm_coefficient * s[0] + s[1];
    const double v_new = alpha * s[2] + (1.0 - alpha) * g;
    const double h_new = beta * s[3] + (1.0 - beta) * g * g;
    const double x_new = s[0] - r_adjusted * (v_new / (std::sqrt(h_new) + epsilon));
    d[0] = (1.0 - norm_coefficient_post) * x_new;
    d[1] = v_new;
    d[2] = h_new;
  });
}

Status momentum_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(OptimizerInputs in, read_optimizer_inputs(ctx, "Momentum", 3, 2));
  const ir::Node& node = ctx.node();
  for (const char* required : {"alpha", "beta", "norm_coefficient", "mode"})
    if (!node.has_attr(required)) return Status::invalid(std::string("Momentum requires attribute '") + required + "'");
  const double alpha = node.attr_float("alpha", 0.0f);
  const double beta = node.attr_float("beta", 0.0f);
  const double norm_coefficient = node.attr_float("norm_coefficient", 0.0f);
  const std::string mode = node.attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return Status::invalid("Momentum mode must be 'standard' or 'nesterov'; got '" + mode + "'");
  const bool nesterov = mode == "nesterov";
  // The first update (T == 0) takes the whole gradient.
  const double beta_adjusted = in.t > 0 ? beta : 1.0;
  // src: X, G, V; dst: X_new, V_new.
  return run_optimizer(ctx, in, 3, 2, [&](const std::vector<double>& s, std::vector<double>& d) {
    const double g = norm_coefficient * s[0] + s[1];
    const double v_new = alpha * s[2] + beta_adjusted * g;
    d[0] = nesterov ? s[0] - in.r * (g + alpha * v_new) : s[0] - in.r * v_new;
    d[1] = v_new;
  });
}

}  // namespace

void register_training_optimizers(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Adagrad",
      .domain = kTrainingDomain,
      .since_version = 1,
      .min_inputs = 5,
      .infer = [](InferContext& ctx) { return infer_optimizer(ctx, 3, 2); },
      .kernel = adagrad_kernel,
  });
  r.add(OpSchema{
      .op_type = "Adam",
      .domain = kTrainingDomain,
      .since_version = 1,
      .min_inputs = 6,
      .infer = [](InferContext& ctx) { return infer_optimizer(ctx, 4, 3); },
      .kernel = adam_kernel,
  });
  r.add(OpSchema{
      .op_type = "Momentum",
      .domain = kTrainingDomain,
      .since_version = 1,
      .min_inputs = 5,
      .infer = [](InferContext& ctx) { return infer_optimizer(ctx, 3, 2); },
      .kernel = momentum_kernel,
  });
}

}  // namespace ferry::ops
