#include "core/tensor.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/shape.h"

namespace ferry {

namespace {
std::atomic<int64_t> g_max_tensor_bytes{int64_t{16} << 30};
thread_local int64_t t_budget_bytes = 0;  // ScopedTensorBudget; 0: none

std::shared_ptr<void> allocate(size_t bytes, bool zero) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  if (zero) std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

// "4096", "0.5": GiB counts: sizes for error messages without printf noise.
static std::string gib_text(double bytes) {
  char buf[32];
  double gib = bytes / (1 << 30);
  std::snprintf(buf, sizeof buf, gib >= 10 ? "%.0f" : "%.3g", gib);
  return buf;
}

int64_t max_tensor_bytes() { return g_max_tensor_bytes.load(); }
void set_max_tensor_bytes(int64_t bytes) { g_max_tensor_bytes.store(bytes); }

ScopedTensorBudget::ScopedTensorBudget(int64_t bytes) : previous_(t_budget_bytes) { t_budget_bytes = bytes; }
ScopedTensorBudget::~ScopedTensorBudget() { t_budget_bytes = previous_; }

Result<Tensor> Tensor::create(DType dtype, std::vector<int64_t> dims) { return create(dtype, std::move(dims), true); }

Result<Tensor> Tensor::create_uninit(DType dtype, std::vector<int64_t> dims) { return create(dtype, std::move(dims), false); }

Result<Tensor> Tensor::create(DType dtype, std::vector<int64_t> dims, bool zero) {
  if (dtype == DType::kUndefined) return Status::invalid("cannot create a tensor of undefined dtype");
  FERRY_ASSIGN_OR_RETURN(int64_t n, checked_numel(dims));
  int64_t limit = max_tensor_bytes();
  const bool budget_limits = t_budget_bytes > 0 && t_budget_bytes < limit;
  if (budget_limits) limit = t_budget_bytes;
  if (n > limit / static_cast<int64_t>(dtype_size(dtype)))
    return Status::error(ErrorCode::kOutOfRange,
                         "tensor " + std::string(dtype_name(dtype)) + dims_to_string(dims) + " needs " +
                             gib_text(static_cast<double>(n) * dtype_size(dtype)) + " GiB, more than " +
                             (budget_limits ? "the session's memory budget of " + gib_text(static_cast<double>(limit)) +
                                                  " GiB (--max-memory)"
                                            : "the " + std::to_string(limit >> 30) + " GiB limit per tensor"));
  return Tensor(dtype, std::move(dims), zero);
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims) : Tensor(dtype, std::move(dims), true) {}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims, bool zero) : dtype_(dtype), dims_(std::move(dims)) {
  numel_ = 1;
  for (int64_t d : dims_) numel_ *= d;
  storage_ = allocate(nbytes(), zero);
  data_ = storage_.get();
}

Tensor Tensor::wrap(DType dtype, std::vector<int64_t> dims, void* data, std::shared_ptr<void> keep_alive) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = 1;
  for (int64_t d : t.dims_) t.numel_ *= d;
  t.storage_ = std::move(keep_alive);
  t.data_ = data;
  return t;
}

double Tensor::as_double(int64_t i) const {
  double out = 0;
  dispatch_all(dtype_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_half_v<T>)
      out = static_cast<float>(data<T>()[i]);
    else
      out = static_cast<double>(data<T>()[i]);
  });
  return out;
}

int64_t Tensor::as_int64(int64_t i) const {
  int64_t out = 0;
  dispatch_all(dtype_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_half_v<T>)
      out = static_cast<int64_t>(static_cast<float>(data<T>()[i]));
    else
      out = static_cast<int64_t>(data<T>()[i]);
  });
  return out;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(numel_);
  for (int64_t i = 0; i < numel_; ++i) v[i] = as_int64(i);
  return v;
}

std::vector<double> Tensor::to_double_vector() const {
  std::vector<double> v(numel_);
  for (int64_t i = 0; i < numel_; ++i) v[i] = as_double(i);
  return v;
}

Tensor Tensor::clone() const {
  if (!defined()) return Tensor();
  Tensor t(dtype_, dims_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Result<Tensor> Tensor::reshaped(std::vector<int64_t> dims) const {
  FERRY_ASSIGN_OR_RETURN(int64_t n, checked_numel(dims));
  if (n != numel_)
    return Status::invalid("cannot reshape " + describe() + " to " + dims_to_string(dims) +
                           ": element counts differ");
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

namespace {
template <class To, class From>
To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_half_v<From>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (is_half_v<To>) {
    if constexpr (is_half_v<From>)
      return To(static_cast<float>(v));
    else if constexpr (std::is_same_v<From, double>)
      return To(static_cast<float>(v));
    else
      return To(static_cast<float>(v));
  } else if constexpr (is_half_v<From>) {
    float f = static_cast<float>(v);
    if constexpr (std::is_integral_v<To>) {
      if (std::isnan(f)) return To(0);
    }
    return static_cast<To>(f);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}
}  // namespace

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return clone();
  Tensor out(to, dims_);
  dispatch_all(dtype_, [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_all(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* src = data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0; i < numel_; ++i) dst[i] = convert_value<To, From>(src[i]);
    });
  });
  return out;
}

bool Tensor::same_as(const Tensor& o) const {
  return dtype_ == o.dtype_ && dims_ == o.dims_ && std::memcmp(data_, o.data_, nbytes()) == 0;
}

std::string Tensor::describe() const { return std::string(dtype_name(dtype_)) + dims_to_string(dims_); }

}  // namespace ferry

namespace ferry {
Result<Tensor> Tensor::plain() const {
  if (!layout_) return *this;
  return layout_->to_plain(*this);
}
}  // namespace ferry
