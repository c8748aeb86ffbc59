// The reference backend: every node runs its op's reference kernel from the op registry.
#include "backends/backend.h"

namespace ferry::backends {

namespace {

class ReferenceKernel : public Kernel {
 public:
  explicit ReferenceKernel(const ops::OpSchema* schema) : schema_(schema) {}
  Status run(ops::KernelContext& ctx) override { return schema_->kernel(ctx); }
  std::string name() const override { return "reference"; }

 private:
  const ops::OpSchema* schema_;
};

class ReferenceBackend : public Backend {
 public:
  std::string name() const override { return "reference"; }
  bool supports(const ir::Node& node) const override {
    return ops::OpRegistry::global().find(node.domain, node.op_type, node.opset) != nullptr;
  }
  Result<std::unique_ptr<Kernel>> create_kernel(const ir::Node& node) override {
    const ops::OpSchema* s = ops::OpRegistry::global().find(node.domain, node.op_type, node.opset);
    if (!s) return Status::unsupported("no reference kernel for " + node.label() + " at opset " + std::to_string(node.opset));
    int n = node.num_inputs();
    if (n < s->min_inputs || n > s->max_inputs)
      return Status::invalid(node.label() + " has " + std::to_string(n) + " inputs; " + node.op_type + " takes " +
                             std::to_string(s->min_inputs) + (s->max_inputs == s->min_inputs ? "" : " to " + (s->max_inputs >= (1 << 20) ? std::string("any number") : std::to_string(s->max_inputs))));
    return std::unique_ptr<Kernel>(new ReferenceKernel(s));
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

Result<std::unique_ptr<Backend>> make_backend(const std::string& name, const BackendOptions& options) {
  if (name == "reference") return make_reference_backend();
  if (name == "cpu") return make_cpu_backend(options);
  return Status::invalid("unknown backend '" + name + "' (available: reference, cpu)");
}

}  // namespace ferry::backends
