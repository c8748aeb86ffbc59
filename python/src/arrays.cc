// numpy <-> ferry::Tensor. Inputs are wrapped without a copy where the array already has the layout a
// ferry tensor needs; outputs always are: the array's base is a capsule holding the tensor, so the
// buffer lives as long as the array.
#include <cstdint>
#include <string>
#include <vector>

#include "bindings.h"

namespace ferry::python {
namespace {

// numpy's dtype for a ferry dtype; bfloat16 comes from ml_dtypes (optional).
py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kFloat32: return py::dtype::of<float>();
    case DType::kFloat64: return py::dtype::of<double>();
    case DType::kFloat16: return py::dtype("float16");
    case DType::kInt8: return py::dtype::of<int8_t>();
    case DType::kInt16: return py::dtype::of<int16_t>();
    case DType::kInt32: return py::dtype::of<int32_t>();
    case DType::kInt64: return py::dtype::of<int64_t>();
    case DType::kUInt8: return py::dtype::of<uint8_t>();
    case DType::kUInt16: return py::dtype::of<uint16_t>();
    case DType::kUInt32: return py::dtype::of<uint32_t>();
    case DType::kUInt64: return py::dtype::of<uint64_t>();
    case DType::kBool: return py::dtype::of<bool>();
    case DType::kBFloat16: return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
    case DType::kUndefined: break;
  }
  throw std::runtime_error("undefined dtype");
}

bool have_ml_dtypes() {
  static const bool have = [] {
    try {
      py::module_::import("ml_dtypes");
      return true;
    } catch (const py::error_already_set&) {
      return false;
    }
  }();
  return have;
}

std::optional<DType> dtype_of_array(const py::array& a) {
  std::string name = py::str(a.dtype().attr("name"));
  if (name == "bool") return DType::kBool;
  return dtype_from_name(name);  // "float32", "int64", "float16", "bfloat16", ...
}

// The array's buffer kept alive by the tensor; released with the GIL held (the tensor may be freed on a
// thread running without it).
std::shared_ptr<void> keep_array(const py::array& a) {
  auto* held = new py::object(a);
  return std::shared_ptr<void>(held, [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
}

}  // namespace

std::string ort_type_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "tensor(float)";
    case DType::kFloat64: return "tensor(double)";
    case DType::kFloat16: return "tensor(float16)";
    case DType::kBFloat16: return "tensor(bfloat16)";
    case DType::kBool: return "tensor(bool)";
    default: return "tensor(" + std::string(dtype_name(t)) + ")";
  }
}

Tensor tensor_from_array(const std::string& name, const py::array& a, DType want) {
  std::optional<DType> have = dtype_of_array(a);
  std::string have_name = py::str(a.dtype());
  if (!have) raise_status(Status::invalid("input '" + name + "': numpy dtype " + have_name + " has no ferry equivalent"));
  if (want != DType::kUndefined && *have != want)
    raise_status(Status::invalid("input '" + name + "' is " + std::string(dtype_name(want)) + " but the array is " +
                                 have_name + " (convert it with .astype)"));
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  const bool contiguous = (a.flags() & py::array::c_style) != 0;
  const bool aligned = reinterpret_cast<uintptr_t>(a.data()) % 64 == 0;
  if (contiguous && aligned && a.size() > 0)
    return Tensor::wrap(*have, std::move(dims), const_cast<void*>(a.data()), keep_array(a));
  Result<Tensor> t = Tensor::create(*have, dims);
  if (!t.ok()) raise_status(Status(t.status()).with_context("input '" + name + "'"));
  if (a.size() == 0) return std::move(t).value();
  // Let numpy do the strided copy into the aligned buffer.
  py::capsule borrowed(t->raw(), [](void*) {});  // a view: the tensor owns the buffer
  py::array dst(a.dtype(), a.request().shape, t->raw(), borrowed);
  py::module_::import("numpy").attr("copyto")(dst, a);
  return std::move(t).value();
}

py::object array_from_tensor(const Tensor& src) {
  Tensor t = src;
  if (!t.is_plain()) t = unwrap(t.plain());
  if (t.dtype() == DType::kBFloat16 && !have_ml_dtypes()) t = t.cast(DType::kFloat32);
  py::dtype dt = numpy_dtype(t.dtype());
  std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
  if (t.numel() == 0) return py::array(dt, shape);
  auto* owner = new Tensor(t);
  py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, shape, {}, owner->raw(), base);
}

py::object object_from_value(const RtValue& v) {
  if (v.is_tensor()) return array_from_tensor(v.tensor);
  if (v.is_sequence()) {
    py::list l;
    for (const Tensor& t : v.sequence) l.append(array_from_tensor(t));
    return l;
  }
  return py::none();
}

}  // namespace ferry::python
