#include "backends/cpu/cpu_backend.h"

#include <omp.h>

#include <cstdlib>
#include <string>

#include "backends/cpu/kernel_choices.h"

namespace ferry::backends::cpu {

// Kernel files, in the order their entries are tried (depthwise_conv before conv: it takes the
// depthwise nodes it covers). Each defines register_<stem>(KernelTable&); this one list declares and
// calls them.
#define FERRY_CPU_KERNEL_FILES(X) \
  X(depthwise_conv)               \
  X(conv)                         \
  X(conv_transpose)               \
  X(pool)                         \
  X(batch_norm)                   \
  X(concat)                       \
  X(channel_shuffle)              \
  X(eltwise)                      \
  X(vec_unary)                    \
  X(binary)                       \
  X(matmul)                       \
  X(attention)                    \
  X(softmax)                      \
  X(layer_norm)                   \
  X(instance_norm)                \
  X(transpose)                    \
  X(slice)                        \
  X(gather)                       \
  X(rnn)                          \
  X(resize)                       \
  X(reduce)

#define FERRY_DECLARE_REGISTER(stem) void register_##stem(KernelTable& t);
FERRY_CPU_KERNEL_FILES(FERRY_DECLARE_REGISTER)
#undef FERRY_DECLARE_REGISTER

namespace {

const KernelTable& table() {
  static const KernelTable t = [] {
    KernelTable t;
#define FERRY_CALL_REGISTER(stem) register_##stem(t);
    FERRY_CPU_KERNEL_FILES(FERRY_CALL_REGISTER)
#undef FERRY_CALL_REGISTER
    return t;
  }();
  return t;
}

const KernelEntry* find_entry(const ir::Node& node, const CpuOptions& o) {
  for (const KernelEntry& e : table())
    if (e.op_type == node.op_type && e.domain == node.domain && e.supports(node, o)) return &e;
  return nullptr;
}

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& o) : options_(o.cpu) {
    // OpenMP's thread count is process-wide: the last backend made with a count sets it.
    if (o.threads > 0) omp_set_num_threads(o.threads);
  }
  std::string name() const override { return "cpu"; }
  bool supports(const ir::Node& node) const override { return find_entry(node, options_) != nullptr; }
  Result<std::unique_ptr<Kernel>> create_kernel(const ir::Node& node) override {
    const KernelEntry* e = find_entry(node, options_);
    if (!e) return Status::unsupported("the cpu backend has no kernel for " + node.label());
    return e->create(node, options_);
  }
  bool native_bf16(std::string* why) const override {
    const Bf16Choice c = choose_bf16(options_);
    if (why) *why = c.why;
    return c.native;
  }
  std::vector<std::string> kernel_choices() const override { return describe_kernel_choices(options_); }

 private:
  CpuOptions options_;
};

}  // namespace

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  static dnnl::stream s(engine());
  return s;
}

bool wants_native_bf16(const ir::Node& node, const CpuOptions& o) {
  return node.attr_string("ferry_precision", "") == "bfloat16" && choose_bf16(o).native;
}

}  // namespace ferry::backends::cpu

namespace ferry::backends {
std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& o) { return std::make_unique<cpu::CpuBackend>(o); }
}  // namespace ferry::backends
