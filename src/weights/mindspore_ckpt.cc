// MindSpore .ckpt files (weights/mindspore_checkpoint.proto), read and written. A parameter MindSpore
// split over several Values (it does so for very large tensors) is joined again in file order.
#include <algorithm>
#include <fstream>
#include <map>

#include "core/read_only_file.h"
#include "core/shape.h"
#include "src/weights/mindspore_checkpoint.pb.h"  // generated from mindspore_checkpoint.proto
#include "weights/checkpoint.h"
#include "weights/mindspore.h"

namespace ferry::weights {

namespace {

// Beyond ONNX-sized protobufs nobody writes a single .ckpt; protobuf itself caps messages at 2 GiB.
constexpr uint64_t kMaxCkptBytes = uint64_t{2} << 30;

constexpr DtypeName kMsDtypes[] = {
    {"Float32", DType::kFloat32}, {"Float16", DType::kFloat16}, {"BFloat16", DType::kBFloat16},
    {"Float64", DType::kFloat64}, {"Int8", DType::kInt8},       {"Int16", DType::kInt16},
    {"Int32", DType::kInt32},     {"Int64", DType::kInt64},     {"UInt8", DType::kUInt8},
    {"UInt16", DType::kUInt16},   {"UInt32", DType::kUInt32},   {"UInt64", DType::kUInt64},
    {"Bool", DType::kBool},
};

struct Pending {
  DType dtype;
  std::vector<int64_t> dims;
  std::string bytes;
};

Status add_value(const ferry::mindspore::Checkpoint::Value& v, const std::string& path, std::vector<std::string>& order,
                 std::map<std::string, Pending>& params) {
  if (!v.has_tag() || !v.has_tensor())
    return Status::invalid(path + ": a checkpoint value without " + std::string(v.has_tag() ? "a tensor" : "a name"));
  const std::string where = path + ": parameter '" + v.tag() + "'";
  const auto& t = v.tensor();
  std::optional<DType> dtype = dtype_named(kMsDtypes, t.tensor_type());
  if (!dtype) return Status::unsupported(where + ": tensor type '" + t.tensor_type() + "' is not supported");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  auto [it, fresh] = params.try_emplace(v.tag(), Pending{*dtype, dims, ""});
  if (fresh) order.push_back(v.tag());
  else if (it->second.dtype != *dtype || it->second.dims != dims)
    return Status::invalid(where + ": appears twice with different types or shapes");
  it->second.bytes += t.tensor_content();
  return Status();
}

Result<Tensor> to_tensor(const std::string& key, Pending& p, const std::string& path) {
  const std::string where = path + ": parameter '" + key + "'";
  for (int64_t d : p.dims)
    if (d < 0) return Status::invalid(where + ": negative dimension");
  // MindSpore writes a 0-d parameter (a scalar) with dims [] or [0] and one element of data.
  const size_t esize = dtype_size(p.dtype);
  if ((p.dims.empty() || p.dims == std::vector<int64_t>{0}) && p.bytes.size() == esize) p.dims.clear();
  auto numel = checked_numel(p.dims);
  if (!numel.ok()) return Status(numel.status()).with_context(where);
  const uint64_t want = static_cast<uint64_t>(*numel) * esize;
  // Chunks of a split parameter each repeat the full shape; the data is the concatenation.
  if (p.bytes.size() != want)
    return Status::invalid(where + ": " + std::to_string(p.bytes.size()) + " data bytes for shape " +
                           dims_to_string(p.dims) + " (" + std::to_string(want) + " expected)");
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(p.dtype, p.dims));
  std::copy(p.bytes.begin(), p.bytes.end(), static_cast<char*>(out.raw()));
  return out;
}

}  // namespace

std::string_view mindspore_dtype_name(DType t) { return name_of_dtype(kMsDtypes, t); }

Result<Checkpoint> read_mindspore_ckpt(const std::string& path) {
  ReadOnlyFile f;
  FERRY_RETURN_IF_ERROR(f.open(path));
  if (f.size() > kMaxCkptBytes)
    return Status::unsupported(path + ": a MindSpore checkpoint over 2 GiB (protobuf's limit) is not read");
  std::string bytes(f.size(), '\0');
  FERRY_RETURN_IF_ERROR(f.read_at(0, bytes.data(), bytes.size(), "the checkpoint"));
  ferry::mindspore::Checkpoint msg;
  if (!msg.ParseFromString(bytes))
    return Status::invalid(path + ": not a MindSpore checkpoint (the protobuf does not parse; an encrypted "
                                  "checkpoint, saved with enc_key, cannot be read)");
  std::vector<std::string> order;
  std::map<std::string, Pending> params;
  for (const auto& v : msg.value()) FERRY_RETURN_IF_ERROR(add_value(v, path, order, params));
  Checkpoint ck;
  ck.path = path;
  ck.format = "mindspore ckpt";
  for (const std::string& key : order) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, to_tensor(key, params[key], path));
    ck.tensors.push_back({key, std::move(t)});
  }
  return ck;
}

Status write_mindspore_ckpt(const std::string& path, const std::vector<CheckpointTensor>& tensors) {
  ferry::mindspore::Checkpoint msg;
  for (const CheckpointTensor& t : tensors) {
    std::string_view type = mindspore_dtype_name(t.value.dtype());
    if (type.empty())
      return Status::unsupported(path + ": parameter '" + t.key + "' has dtype " +
                                 std::string(dtype_name(t.value.dtype())) + ", which MindSpore checkpoints lack");
    FERRY_ASSIGN_OR_RETURN(Tensor plain, t.value.plain());
    auto* v = msg.add_value();
    v->set_tag(t.key);
    auto* tp = v->mutable_tensor();
    for (int64_t d : plain.dims()) tp->add_dims(d);
    if (plain.dims().empty()) tp->add_dims(0);  // MindSpore's own spelling of a scalar
    tp->set_tensor_type(std::string(type));
    tp->set_tensor_content(std::string(static_cast<const char*>(plain.raw()), plain.nbytes()));
  }
  if (msg.ByteSizeLong() > kMaxCkptBytes)
    return Status::unsupported(path + ": the checkpoint would be over 2 GiB, protobuf's limit");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !msg.SerializeToOstream(&out)) return Status::io("cannot write '" + path + "'");
  out.close();
  if (!out) return Status::io("cannot write '" + path + "'");
  return Status();
}

}  // namespace ferry::weights
