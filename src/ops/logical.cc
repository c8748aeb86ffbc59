// Logical ops on bool tensors: And Or Xor (numpy broadcasting) and Not.
#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

template <class F>
KernelFn logical(F f) {
  return [f](KernelContext& ctx) { return binary_same(ctx, BoolTypes{}, f); };
}
}  // namespace

void register_logical(OpRegistry& r) {
  add_binary_schema(r, "And", 7, logical([](bool a, bool b) { return a && b; }));
  add_binary_schema(r, "Or", 7, logical([](bool a, bool b) { return a || b; }));
  add_binary_schema(r, "Xor", 7, logical([](bool a, bool b) { return a != b; }));
  add_unary_schema(r, "Not", 1, [](KernelContext& ctx) {
    return unary_same(ctx, BoolTypes{}, [](bool x) { return !x; });
  });
}

}  // namespace ferry::ops
