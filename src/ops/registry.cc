// The op registry, the context helpers, and whole-graph inference.
#include <cstring>
#include <mutex>

#include "ops/op.h"

#include "core/shape.h"
#include "ops/util/tensor_common.h"

namespace ferry::ops {

void register_all_ops(OpRegistry& r);  // generated: build/generated/op_table.cc

namespace {
std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }
}  // namespace

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    register_all_ops(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::add(OpSchema schema) {
  schema.domain = canonical_domain(schema.domain);
  schemas_[{schema.domain, schema.op_type}].push_back(std::move(schema));
}

const OpSchema* OpRegistry::find(const std::string& domain, const std::string& op_type, int opset) const {
  auto it = schemas_.find({canonical_domain(domain), op_type});
  if (it == schemas_.end()) return nullptr;
  const OpSchema* best = nullptr;
  for (const OpSchema& s : it->second) {
    if (opset >= s.since_version && opset <= s.until_version) {
      if (!best || s.since_version > best->since_version) best = &s;
    }
  }
  return best;
}

bool OpRegistry::knows(const std::string& domain, const std::string& op_type) const {
  return schemas_.count({canonical_domain(domain), op_type}) != 0;
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& [key, list] : schemas_)
    for (const OpSchema& s : list) out.push_back(&s);
  return out;
}

Result<Tensor*> KernelContext::allocate_output(int i, DType dtype, std::vector<int64_t> dims) {
  return allocate(i, dtype, std::move(dims), /*zero=*/true);
}

Result<Tensor*> KernelContext::allocate_output_uninit(int i, DType dtype, std::vector<int64_t> dims) {
  return allocate(i, dtype, std::move(dims), /*zero=*/false);
}

void KernelContext::set_output_slot(int i, void* mem, size_t bytes, std::shared_ptr<void> keep_alive) {
  if (i < 0 || i >= num_outputs()) return;
  if (slots_.size() < outputs_.size()) slots_.resize(outputs_.size());
  slots_[i] = Slot{mem, bytes, std::move(keep_alive)};
}

Result<Tensor*> KernelContext::allocate(int i, DType dtype, std::vector<int64_t> dims, bool zero) {
  if (i >= 0 && static_cast<size_t>(i) < slots_.size() && slots_[i].mem && dtype != DType::kUndefined) {
    const Slot& slot = slots_[i];
    auto n = checked_numel(dims);
    // A tensor that does not fit (a shape other than the planned one) gets its own memory below.
    if (n.ok() && static_cast<uint64_t>(*n) <= slot.bytes / dtype_size(dtype)) {
      Tensor t = Tensor::wrap(dtype, std::move(dims), slot.mem, slot.keep_alive);
      if (zero) std::memset(slot.mem, 0, t.nbytes());
      outputs_[i] = RtValue(std::move(t));
      return &outputs_[i].tensor;
    }
  }
  // Without a slot (graph outputs) the memory comes from the allocator: zeroed only where asked for
  // (recycled buffers are not fresh pages, and a zero fill costs as much as the kernel's own writes).
  FERRY_ASSIGN_OR_RETURN(Tensor t, zero ? Tensor::create(dtype, std::move(dims)) : Tensor::create_uninit(dtype, std::move(dims)));
  outputs_[i] = RtValue(std::move(t));
  return &outputs_[i].tensor;
}

int InferContext::input_rank(int i) const {
  const ir::Value* v = input(i);
  if (!v || !v->shape) return -1;
  return static_cast<int>(v->shape->size());
}

const Tensor* InferContext::input_constant(int i) const {
  const ir::Value* v = input(i);
  if (!v) return nullptr;
  if (v->is_constant()) return &v->initializer;
  if (v->producer && v->producer->op_type == "Constant" && v->producer->domain.empty()) {
    const Tensor* t = v->producer->attr_tensor("value");
    if (t) return t;
  }
  std::optional<Tensor> folded = tensor_ops::known_value_of(v);
  if (!folded) return nullptr;
  folded_.push_back(std::move(*folded));
  return &folded_.back();
}

void InferContext::set_output(int i, DType dtype, std::optional<Shape> shape) {
  if (!node_.has_output(i)) return;
  ir::Value* v = node_.outputs[i];
  if (dtype != DType::kUndefined) v->dtype = dtype;
  if (shape) v->shape = std::move(shape);
}

void InferContext::set_output_dtype(int i, DType dtype) {
  if (node_.has_output(i) && dtype != DType::kUndefined) node_.outputs[i]->dtype = dtype;
}

void InferContext::set_output_kind(int i, ir::ValueKind kind) {
  if (node_.has_output(i)) node_.outputs[i]->kind = kind;
}

Status infer_graph(ir::Graph& g) {
  const OpRegistry& reg = OpRegistry::global();
  for (auto& node : g.nodes) {
    const OpSchema* s = reg.find(node->domain, node->op_type, node->opset);
    if (!s || !s->infer) continue;
    InferContext ctx(*node);
    Status st = s->infer(ctx);
    if (!st.ok()) return st.with_context("while inferring shapes of " + node->label());
  }
  return Status();
}

}  // namespace ferry::ops
