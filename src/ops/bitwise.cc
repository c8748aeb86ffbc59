// Bitwise ops on integers: BitShift (direction attribute), BitwiseAnd BitwiseOr BitwiseXor
// (numpy broadcasting) and BitwiseNot.
#include "ops/util/elementwise_common.h"

namespace ferry::ops {

namespace {
using namespace ew;

template <class F>
KernelFn bitwise(F f) {
  return [f](KernelContext& ctx) { return binary_same(ctx, IntTypes{}, f); };
}

// The ONNX reference defines shifts by a negative amount or by >= the bit width (undefined in C):
// left gives 0; right gives 0, or -1 for a negative signed value (the sign fill). A valid right shift
// of a signed value is arithmetic; a left shift works on the unsigned bits.
template <class T>
T shift_value(T a, T b, bool left) {
  constexpr int bits = static_cast<int>(sizeof(T) * 8);
  bool out_of_range = b >= T(bits);
  if constexpr (std::is_signed_v<T>) out_of_range = out_of_range || b < 0;
  if (out_of_range) {
    if constexpr (std::is_signed_v<T>) {
      if (!left && a < 0) return T(-1);
    }
    return T(0);
  }
  const int s = static_cast<int>(b);
  if (left) {
    using U = wide_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<std::make_unsigned_t<T>>(a)) << s);
  }
  return static_cast<T>(a >> s);
}

Status bitshift_kernel(KernelContext& ctx) {
  const std::string direction = ctx.node().attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return Status::invalid("BitShift: attribute direction must be 'LEFT' or 'RIGHT', got '" + direction + "'");
  const bool left = direction == "LEFT";
  return binary_same(ctx, IntTypes{}, [left](auto a, auto b) { return shift_value(a, b, left); });
}
}  // namespace

void register_bitwise(OpRegistry& r) {
  add_binary_schema(r, "BitShift", 11, bitshift_kernel);
  add_binary_schema(r, "BitwiseAnd", 18, bitwise([](auto a, auto b) { return a & b; }));
  add_binary_schema(r, "BitwiseOr", 18, bitwise([](auto a, auto b) { return a | b; }));
  add_binary_schema(r, "BitwiseXor", 18, bitwise([](auto a, auto b) { return a ^ b; }));
  add_unary_schema(r, "BitwiseNot", 18, [](KernelContext& ctx) {
    return unary_same(ctx, IntTypes{}, [](auto x) { return static_cast<decltype(x)>(~x); });
  });
}

}  // namespace ferry::ops
