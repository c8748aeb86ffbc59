#include "backends/cpu/cpu_backend.h"

#include <omp.h>

#include <cstdlib>
#include <string>

#include "backends/cpu/isa_probe.h"
#include "passes/precision.h"

namespace ferry::backends::cpu {

// Kernel files: each adds its entries to the table. Add one line per new file.
// (declarations of register_* functions go here)
void register_depthwise_conv(KernelTable& t);
void register_conv(KernelTable& t);
void register_conv_transpose(KernelTable& t);
void register_pool(KernelTable& t);
void register_batch_norm(KernelTable& t);
void register_eltwise(KernelTable& t);
void register_vec_unary(KernelTable& t);
void register_binary(KernelTable& t);
void register_matmul(KernelTable& t);
void register_attention(KernelTable& t);
void register_softmax(KernelTable& t);
void register_layer_norm(KernelTable& t);
void register_transpose(KernelTable& t);
void register_slice(KernelTable& t);

namespace {

const KernelTable& table() {
  static const KernelTable t = [] {
    KernelTable t;
    // (register_* calls go here)
    register_depthwise_conv(t);  // before register_conv: it takes the depthwise nodes it covers
    register_conv(t);
    register_conv_transpose(t);
    register_pool(t);
    register_batch_norm(t);
    register_eltwise(t);
    register_vec_unary(t);
    register_binary(t);
    register_matmul(t);
    register_attention(t);
    register_softmax(t);
    register_layer_norm(t);
    register_transpose(t);
    register_slice(t);
    return t;
  }();
  return t;
}

const KernelEntry* find_entry(const ir::Node& node) {
  for (const KernelEntry& e : table())
    if (e.op_type == node.op_type && e.domain == node.domain && e.supports(node)) return &e;
  return nullptr;
}

class CpuBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool supports(const ir::Node& node) const override { return find_entry(node) != nullptr; }
  Result<std::unique_ptr<Kernel>> create_kernel(const ir::Node& node) override {
    const KernelEntry* e = find_entry(node);
    if (!e) return Status::unsupported("the cpu backend has no kernel for " + node.label());
    return e->create(node);
  }
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

bool native_bf16_available() { return bf16_choice().native; }

namespace {
// Reports (passes::describe) say whether bf16 is native on this machine, and why.
bool native_bf16_probe(std::string* why) {
  if (why) *why = bf16_choice().why;
  return bf16_choice().native;
}
const bool kProbeRegistered = (passes::set_native_bf16_probe(&native_bf16_probe), true);
}  // namespace

bool wants_native_bf16(const ir::Node& node) {
  return node.attr_string("ferry_precision", "") == "bfloat16" && native_bf16_available();
}

void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

}  // namespace ferry::backends::cpu

namespace ferry::backends {
std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }
}  // namespace ferry::backends
