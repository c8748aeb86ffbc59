// Element types ferry tensors can hold, and the half-precision storage types with their conversions.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace ferry {

enum class DType : uint8_t {
  kUndefined = 0,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kBool,
};

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);           // "float32", "int64", ...
std::optional<DType> dtype_from_name(std::string_view name);  // accepts "float32" and "float"
bool is_floating(DType t);                      // f32 f16 bf16 f64
bool is_integer(DType t);                       // signed and unsigned ints (not bool)
bool is_signed_integer(DType t);

// IEEE binary16 storage. Arithmetic goes through float (the reference computes wider).
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f) : bits(from_float(f)) {}  // NOLINT(google-explicit-constructor)
  explicit float16(double d) : bits(from_float(static_cast<float>(d))) {}
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  explicit float16(I i) : bits(from_float(static_cast<float>(i))) {}
  operator float() const { return to_float(bits); }  // NOLINT(google-explicit-constructor)
  static float16 from_bits(uint16_t b) { float16 h; h.bits = b; return h; }
  static uint16_t from_float(float f);  // round to nearest even
  static float to_float(uint16_t h);
};

// bfloat16 storage: the upper half of a float32, rounded to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(from_float(f)) {}  // NOLINT(google-explicit-constructor)
  explicit bfloat16(double d) : bits(from_float(static_cast<float>(d))) {}
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  explicit bfloat16(I i) : bits(from_float(static_cast<float>(i))) {}
  operator float() const { return to_float(bits); }  // NOLINT(google-explicit-constructor)
  static bfloat16 from_bits(uint16_t b) { bfloat16 h; h.bits = b; return h; }
  static uint16_t from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
    uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((u + rounding) >> 16);
  }
  static float to_float(uint16_t h) {
    uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::kFloat32; };
template <> struct dtype_of<float16> { static constexpr DType value = DType::kFloat16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::kBFloat16; };
template <> struct dtype_of<double> { static constexpr DType value = DType::kFloat64; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct dtype_of<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct dtype_of<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct dtype_of<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::kBool; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

template <class T> inline constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;
template <class T> inline constexpr bool is_float_like_v = std::is_floating_point_v<T> || is_half_v<T>;
// The type reference kernels compute in: float for halves, T otherwise.
template <class T> using compute_t = std::conditional_t<is_half_v<T>, float, T>;

// Calls f(T{}) with the C++ type for `t`. Returns false for kUndefined.
// Use: dispatch_all(t, [&](auto tag) { using T = decltype(tag); ... });
template <class F>
bool dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: f(float{}); return true;
    case DType::kFloat16: f(float16{}); return true;
    case DType::kBFloat16: f(bfloat16{}); return true;
    case DType::kFloat64: f(double{}); return true;
    case DType::kInt8: f(int8_t{}); return true;
    case DType::kInt16: f(int16_t{}); return true;
    case DType::kInt32: f(int32_t{}); return true;
    case DType::kInt64: f(int64_t{}); return true;
    case DType::kUInt8: f(uint8_t{}); return true;
    case DType::kUInt16: f(uint16_t{}); return true;
    case DType::kUInt32: f(uint32_t{}); return true;
    case DType::kUInt64: f(uint64_t{}); return true;
    case DType::kBool: f(bool{}); return true;
    default: return false;
  }
}

// Like dispatch_all but only for numeric types (no bool).
template <class F>
bool dispatch_numeric(DType t, F&& f) {
  if (t == DType::kBool) return false;
  return dispatch_all(t, std::forward<F>(f));
}

// Only floating types (f32 f16 bf16 f64).
template <class F>
bool dispatch_floating(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: f(float{}); return true;
    case DType::kFloat16: f(float16{}); return true;
    case DType::kBFloat16: f(bfloat16{}); return true;
    case DType::kFloat64: f(double{}); return true;
    default: return false;
  }
}

}  // namespace ferry
