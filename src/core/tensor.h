// Tensor: a dtype, concrete dims and a shared, 64-byte aligned buffer. Copies share the buffer;
// clone() makes a deep copy. Creation checks sizes, so an absurd shape is an error, not a crash.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace ferry {

// Upper bound on one tensor's bytes (default 16 GiB); creation past it fails with a clear error.
int64_t max_tensor_bytes();
void set_max_tensor_bytes(int64_t bytes);

// A session's memory budget on this thread while it runs (runtime/memory_budget.h): Tensor::create
// refuses a tensor past it, naming the budget. Scoped; nests.
class ScopedTensorBudget {
 public:
  explicit ScopedTensorBudget(int64_t bytes);
  ~ScopedTensorBudget();
  ScopedTensorBudget(const ScopedTensorBudget&) = delete;
  ScopedTensorBudget& operator=(const ScopedTensorBudget&) = delete;

 private:
  int64_t previous_;
};

class Tensor;

// A non-plain memory layout that an optimized backend keeps between its own kernels (e.g. oneDNN's
// blocked nChw16c). Such a tensor's dims() are the logical (ONNX) dims, but its bytes are not in
// row-major order, so only kernels that say they accept layouts may read it; the executor turns it
// back into a plain tensor (to_plain) before any other kernel, a hook or a graph output sees it.
class TensorLayout {
 public:
  virtual ~TensorLayout() = default;
  virtual std::string describe() const = 0;                      // "nChw16c"
  virtual Result<Tensor> to_plain(const Tensor& self) const = 0;  // row-major copy
};

class Tensor {
 public:
  Tensor() = default;  // undefined (no dtype, no storage)

  // Zero-filled tensor; fails on negative dims, overflow, or sizes past max_tensor_bytes().
  static Result<Tensor> create(DType dtype, std::vector<int64_t> dims);
  // Like create() without the zero fill, for a kernel's output that it writes whole: memset of a
  // recycled 3 MB buffer before the kernel wrote it again was a third of gpt2_past's Concat time.
  static Result<Tensor> create_uninit(DType dtype, std::vector<int64_t> dims);
  // Like create() for sizes the caller already validated; throws std::bad_alloc only on real OOM.
  Tensor(DType dtype, std::vector<int64_t> dims);
  // Wraps external memory (e.g. an mmap'd weight section); `keep_alive` owns it.
  static Tensor wrap(DType dtype, std::vector<int64_t> dims, void* data, std::shared_ptr<void> keep_alive);
  template <class T>
  static Tensor scalar(T v) {
    Tensor t(dtype_v<T>, {});
    *t.data<T>() = v;
    return t;
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& v, std::vector<int64_t> dims) {
    Tensor t(dtype_v<T>, std::move(dims));
    for (size_t i = 0; i < v.size() && i < static_cast<size_t>(t.numel()); ++i) t.data<T>()[i] = v[i];
    return t;
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& v) {
    return from_vector(v, {static_cast<int64_t>(v.size())});
  }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t dim(int i) const { return dims_[i < 0 ? i + rank() : i]; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }

  // Element i converted to double / int64 (any dtype); handy for small index and shape tensors.
  double as_double(int64_t i) const;
  int64_t as_int64(int64_t i) const;
  // All elements of an integer (or any) tensor as int64, e.g. a shape or axes input.
  std::vector<int64_t> to_int64_vector() const;
  std::vector<double> to_double_vector() const;

  Tensor clone() const;
  // Same buffer, new dims (numel must match).
  Result<Tensor> reshaped(std::vector<int64_t> dims) const;
  // Converts element type (numpy astype semantics: float->int truncates, to bool is != 0).
  Tensor cast(DType to) const;
  // Bitwise equality of dtype, dims and bytes.
  bool same_as(const Tensor& other) const;

  std::string describe() const;  // "float32[1,3,224,224]"

  // Layout: null for plain row-major tensors (everything outside an optimized backend).
  const TensorLayout* layout() const { return layout_.get(); }
  bool is_plain() const { return layout_ == nullptr; }
  void set_layout(std::shared_ptr<const TensorLayout> l) { layout_ = std::move(l); }
  // This tensor when plain, else its row-major copy.
  Result<Tensor> plain() const;

 private:
  static Result<Tensor> create(DType dtype, std::vector<int64_t> dims, bool zero);
  Tensor(DType dtype, std::vector<int64_t> dims, bool zero);
  std::shared_ptr<const TensorLayout> layout_;
  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> dims_;
  int64_t numel_ = 0;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
};

// Runtime value: a tensor, a sequence of tensors, or an empty optional (ONNX's three value kinds).
struct RtValue {
  enum class Kind { kTensor, kSequence, kNone };
  Kind kind = Kind::kNone;
  Tensor tensor;
  std::vector<Tensor> sequence;
  DType elem_type = DType::kUndefined;  // for an empty sequence or a none optional, when known

  RtValue() = default;
  RtValue(Tensor t) : kind(Kind::kTensor), tensor(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  static RtValue make_sequence(std::vector<Tensor> s, DType elem = DType::kUndefined) {
    RtValue v;
    v.kind = Kind::kSequence;
    v.sequence = std::move(s);
    v.elem_type = elem;
    return v;
  }
  static RtValue none() { return RtValue(); }
  bool is_tensor() const { return kind == Kind::kTensor; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_none() const { return kind == Kind::kNone; }
};

}  // namespace ferry
