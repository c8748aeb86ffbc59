// Random inputs and attributes for the tensor-manipulation ops: every kernel and inference call must
// return (ok or an error), never crash or read out of bounds (run under ASan to check the latter).
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <random>

#include "ir/graph.h"
#include "ops/op.h"

namespace ferry::ops {
namespace {

struct FuzzSpec {
  std::string op;
  int opset;
  std::string inputs;  // per input: D data, I int64 list, S int64 scalar, B bool list, F float scalar, N omitted-or-I
  std::vector<std::pair<std::string, char>> attrs;  // name, kind: i int, l ints, s string (from choices)
  int outputs = 1;
};

class Fuzzer {
 public:
  explicit Fuzzer(uint32_t seed) : rng_(seed) {}

  int64_t small_int() {
    static const int64_t extremes[] = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                                       int64_t{1} << 40, -(int64_t{1} << 40), int64_t{1} << 31};
    if (pick(20) == 0) return extremes[pick(5)];
    return static_cast<int64_t>(pick(13)) - 6;
  }
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  Tensor data() {
    int rank = pick(5);
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(pick(4));
    if (pick(3) == 0) dims = std::vector<int64_t>(rank, 2);
    Tensor t(pick(4) == 0 ? DType::kFloat16 : DType::kFloat32, dims);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.dtype() == DType::kFloat32) t.data<float>()[i] = static_cast<float>(pick(7)) - 3;
      else t.data<float16>()[i] = float16(static_cast<float>(pick(7)) - 3);
    }
    return t;
  }
  Tensor ints() {
    int n = pick(5);
    std::vector<int64_t> v;
    for (int i = 0; i < n; ++i) v.push_back(small_int());
    if (pick(6) == 0) return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size()), 1});
    return Tensor::from_vector<int64_t>(v);
  }
  Tensor bools() {
    int n = pick(6);
    Tensor t(DType::kBool, {n});
    for (int i = 0; i < n; ++i) t.data<bool>()[i] = pick(2);
    return t;
  }
  ir::Attribute attr(const std::string& name, char kind) {
    ir::Attribute a;
    if (kind == 'i') {
      a.kind = ir::Attribute::Kind::kInt;
      a.i = small_int();
    } else if (kind == 'l') {
      a.kind = ir::Attribute::Kind::kInts;
      int n = pick(6);
      for (int i = 0; i < n; ++i) a.ints.push_back(small_int());
    } else {
      static const std::map<std::string, std::vector<std::string>> choices = {
          {"mode", {"constant", "reflect", "edge", "wrap", "DCR", "CRD", "linear", "circular", "bogus"}},
          {"reduction", {"none", "add", "mul", "max", "min", "bogus"}}};
      a.kind = ir::Attribute::Kind::kString;
      auto it = choices.find(name);
      a.s = it == choices.end() ? "x" : it->second[pick(static_cast<int>(it->second.size()))];
    }
    return a;
  }

 private:
  std::mt19937 rng_;
};

void fuzz_once(const FuzzSpec& spec, Fuzzer& f) {
  ir::Graph g;
  ir::Node* n = g.add_node(spec.op, "n");
  n->opset = spec.opset;
  for (const auto& [name, kind] : spec.attrs)
    if (f.pick(3) != 0) n->attrs[name] = f.attr(name, kind);
  std::vector<RtValue> values;
  values.reserve(spec.inputs.size());
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    char k = spec.inputs[i];
    if (k == 'N' && f.pick(2) == 0) {
      n->inputs.push_back(nullptr);
      values.emplace_back();
      continue;
    }
    Tensor t;
    switch (k) {
      case 'D': t = f.data(); break;
      case 'S': t = Tensor::scalar<int64_t>(f.small_int()); break;
      case 'B': t = f.bools(); break;
      case 'F': t = Tensor::scalar<float>(static_cast<float>(f.pick(10)) / 10); break;
      default: t = f.ints(); break;
    }
    ir::Value* v = g.add_value("in" + std::to_string(i));
    v->dtype = t.dtype();
    v->shape = to_shape(t.dims());
    if (f.pick(2) == 0) v->initializer = t;  // exercise inference with known values too
    n->inputs.push_back(v);
    values.emplace_back(t);
  }
  for (int i = 0; i < spec.outputs; ++i) {
    ir::Value* o = g.add_value("out" + std::to_string(i));
    o->producer = n;
    o->producer_output = i;
    n->outputs.push_back(o);
  }
  const OpSchema* s = OpRegistry::global().find("", spec.op, spec.opset);
  ASSERT_NE(s, nullptr) << spec.op;
  if (s->infer) {
    InferContext ic(*n);
    (void)s->infer(ic);
  }
  std::vector<const RtValue*> ptrs;
  for (size_t i = 0; i < values.size(); ++i) ptrs.push_back(n->inputs[i] ? &values[i] : nullptr);
  KernelContext kc(*n, ptrs, nullptr);
  (void)s->kernel(kc);
}

TEST(TensorOpsFuzz, RandomInputsNeverCrash) {
  const std::vector<FuzzSpec> specs = {
      {"Shape", 21, "D", {{"start", 'i'}, {"end", 'i'}}},
      {"Size", 21, "D", {}},
      {"Reshape", 21, "DI", {{"allowzero", 'i'}}},
      {"Flatten", 21, "D", {{"axis", 'i'}}},
      {"Squeeze", 11, "D", {{"axes", 'l'}}},
      {"Squeeze", 21, "DN", {}},
      {"Unsqueeze", 11, "D", {{"axes", 'l'}}},
      {"Unsqueeze", 21, "DI", {}},
      {"Transpose", 21, "D", {{"perm", 'l'}}},
      {"Concat", 21, "DDD", {{"axis", 'i'}}},
      {"Split", 11, "D", {{"axis", 'i'}, {"split", 'l'}}, 2},
      {"Split", 18, "DN", {{"axis", 'i'}, {"num_outputs", 'i'}}, 3},
      {"Slice", 9, "D", {{"starts", 'l'}, {"ends", 'l'}, {"axes", 'l'}}},
      {"Slice", 21, "DIINN", {}},
      {"Gather", 21, "DI", {{"axis", 'i'}}},
      {"GatherElements", 21, "DI", {{"axis", 'i'}}},
      {"GatherND", 21, "DI", {{"batch_dims", 'i'}}},
      {"ScatterElements", 21, "DID", {{"axis", 'i'}, {"reduction", 's'}}},
      {"ScatterND", 21, "DID", {{"reduction", 's'}}},
      {"Expand", 21, "DI", {}},
      {"Tile", 21, "DI", {}},
      {"Pad", 2, "D", {{"pads", 'l'}, {"mode", 's'}}},
      {"Pad", 21, "DINN", {{"mode", 's'}}},
      {"ConstantOfShape", 21, "I", {}},
      {"Range", 21, "SSS", {}},
      {"EyeLike", 21, "D", {{"k", 'i'}, {"dtype", 'i'}}},
      {"Trilu", 21, "DN", {{"upper", 'i'}}},
      {"OneHot", 21, "IIF", {{"axis", 'i'}}},
      {"Compress", 21, "DB", {{"axis", 'i'}}},
      {"NonZero", 21, "D", {}},
      {"Unique", 21, "D", {{"axis", 'i'}, {"sorted", 'i'}}, 4},
      {"DepthToSpace", 21, "D", {{"blocksize", 'i'}, {"mode", 's'}}},
      {"SpaceToDepth", 21, "D", {{"blocksize", 'i'}, {"mode", 's'}}},
      {"ReverseSequence", 21, "DI", {{"batch_axis", 'i'}, {"time_axis", 'i'}}},
      {"CenterCropPad", 21, "DI", {{"axes", 'l'}}},
      {"TensorScatter", 24, "DDN", {{"axis", 'i'}, {"mode", 's'}}},
      {"Dropout", 21, "DNN", {{"seed", 'i'}}, 2},
      {"Col2Im", 21, "DII", {{"dilations", 'l'}, {"pads", 'l'}, {"strides", 'l'}}},
  };
  // Small tensors only: extreme shape values must fail fast instead of allocating gigabytes.
  const int64_t saved = max_tensor_bytes();
  set_max_tensor_bytes(int64_t{64} << 20);
  Fuzzer f(12345);
  for (const FuzzSpec& spec : specs) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 1500; ++i) fuzz_once(spec, f);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(s, 5.0) << spec.op << " opset " << spec.opset << " took " << s << " s";
  }
  set_max_tensor_bytes(saved);
}

}  // namespace
}  // namespace ferry::ops
