// Comparisons with numpy broadcasting, producing bool: Equal Greater GreaterOrEqual Less LessOrEqual.
// NaN compares unequal and unordered (every comparison but != is false), as in IEEE and numpy.
#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

template <class List, class F>
KernelFn compare(List types, F pred) {
  return [types, pred](KernelContext& ctx) { return binary_to_bool(ctx, types, pred); };
}
}  // namespace

void register_comparison(OpRegistry& r) {
  // Equal takes bool too (string is not a ferry dtype).
  add_binary_schema(r, "Equal", 7, compare(AllTypes{}, [](auto a, auto b) { return a == b; }), DType::kBool);
  add_binary_schema(r, "Greater", 7, compare(NumericTypes{}, [](auto a, auto b) { return a > b; }), DType::kBool);
  add_binary_schema(r, "GreaterOrEqual", 12, compare(NumericTypes{}, [](auto a, auto b) { return a >= b; }),
                    DType::kBool);
  add_binary_schema(r, "Less", 7, compare(NumericTypes{}, [](auto a, auto b) { return a < b; }), DType::kBool);
  add_binary_schema(r, "LessOrEqual", 12, compare(NumericTypes{}, [](auto a, auto b) { return a <= b; }),
                    DType::kBool);
}

}  // namespace ferry::ops
