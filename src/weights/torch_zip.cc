// torch.save's zip format (torch >= 1.6, the default since): <archive>/data.pkl is a protocol-2 pickle
// of the saved object whose tensors refer to storages by persistent id ('storage', torch.FloatStorage,
// key, location, numel); each storage's bytes are the member <archive>/data/<key>, little-endian
// (<archive>/byteorder says so from torch 2.1 on). A training checkpoint ({"epoch": .., "state_dict":
// {...}, "optimizer": {...}}) is read too: the dict holding the most tensors is taken as the weights.
#include <cstring>
#include <map>
#include <optional>

#include "core/zip_reader.h"
#include "weights/checkpoint.h"
#include "weights/pickle.h"

namespace ferry::weights {

namespace {

constexpr uint64_t kMaxPickleBytes = uint64_t{1} << 30;
constexpr int kMaxNesting = 64;
// Names under which training scripts keep the model's weights, in the order they win a tie.
constexpr std::string_view kWeightsNames[] = {"state_dict", "model_state_dict", "model", "net", "module",
                                              "network", "params", "weights", "ema"};

struct Archive {
  const ZipArchive& zip;
  std::string prefix;  // "<archive>/"
};

Result<std::pair<const ZipMember*, std::string>> find_pickle(const ZipArchive& zip) {
  const ZipMember* pkl = nullptr;
  std::string prefix;
  for (const ZipMember& m : zip.members()) {
    if (m.name != "data.pkl" && !m.name.ends_with("/data.pkl")) continue;
    if (pkl) return Status::invalid(zip.path() + ": holds two pickles ('" + pkl->name + "', '" + m.name + "')");
    pkl = &m;
    prefix = m.name.substr(0, m.name.size() - std::strlen("data.pkl"));
  }
  if (!pkl)
    return Status::invalid(zip.path() + ": a zip archive without data.pkl, so not a torch.save file (ferry reads .pth/.pt "
                                        "in torch's zip format, .safetensors, .npz and MindSpore .ckpt)");
  return std::make_pair(pkl, prefix);
}

Status check_byteorder(const Archive& a) {
  const ZipMember* m = a.zip.find(a.prefix + "byteorder");
  if (!m) return Status();  // torch < 2.1 wrote only little-endian files
  FERRY_ASSIGN_OR_RETURN(std::string order, a.zip.read(*m, 16));
  if (order == "little") return Status();
  return Status::unsupported(a.zip.path() + ": byte order '" + order + "' (only little-endian checkpoints are read)");
}

// BINPERSID ('storage', storage_type, key, location, numel) -> a storage value, one per key.
PersistentLoad storage_loader(const std::string& label, std::map<std::string, ValueId>& by_key) {
  return [&label, &by_key](PickleDocument& doc, ValueId pid) -> Result<ValueId> {
    const PyValue& t = doc.at(pid);
    auto is = [&](size_t i, PyKind k) { return t.items.size() > i && doc.at(t.items[i]).kind == k; };
    if (t.kind != PyKind::kTuple || !is(0, PyKind::kStr) || doc.at(t.items[0]).text != "storage" ||
        !is(1, PyKind::kGlobal) || !is(2, PyKind::kStr) || !is(4, PyKind::kInt))
      return Status::invalid(label + ": a persistent id that is not ('storage', type, key, location, numel)");
    const std::string& type = doc.at(t.items[1]).text;
    std::optional<DType> dtype = torch_storage_dtype(type);
    if (!dtype) return Status::unsupported(label + ": storage type " + type + " is not supported");
    const std::string key = doc.at(t.items[2]).text;
    if (auto it = by_key.find(key); it != by_key.end()) return it->second;
    PyValue s;
    s.kind = PyKind::kStorage;
    s.dtype = *dtype;
    s.text = key;
    s.number = doc.at(t.items[4]).number;
    if (s.number < 0) return Status::invalid(label + ": storage '" + key + "' claims a negative size");
    doc.values.push_back(std::move(s));
    ValueId id = static_cast<ValueId>(doc.values.size() - 1);
    by_key[key] = id;
    return id;
  };
}

// Whether a view's elements lie in row-major order (the stride of a size-1 dim does not matter).
bool is_row_major(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  int64_t expect = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != 1 && strides[i] != expect) return false;
    expect *= dims[i];
  }
  return true;
}

// Copies a (possibly strided) view of a storage into a row-major tensor, after checking that every
// element it reads lies inside the storage.
Result<Tensor> materialize(const PyValue& t, const PyValue& storage, const std::string& bytes, const std::string& what) {
  for (size_t i = 0; i < t.dims.size(); ++i)
    if (t.dims[i] < 0 || t.strides[i] < 0) return Status::invalid(what + ": negative size or stride");
  FERRY_ASSIGN_OR_RETURN(Tensor out, Tensor::create(t.dtype, t.dims));
  if (out.numel() == 0) return out;
  if (t.number < 0) return Status::invalid(what + ": negative storage offset");
  int64_t last = t.number;  // the furthest element read, in elements
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (t.strides[i] > 0 && t.dims[i] - 1 > (storage.number - 1 - last) / t.strides[i])
      return Status::invalid(what + ": reads past the end of its storage (" + std::to_string(storage.number) + " elements)");
    last += (t.dims[i] - 1) * t.strides[i];
  }
  if (last >= storage.number)
    return Status::invalid(what + ": reads past the end of its storage (" + std::to_string(storage.number) + " elements)");
  const size_t esize = dtype_size(t.dtype);
  const char* src = bytes.data();
  char* dst = static_cast<char*>(out.raw());
  const int rank = static_cast<int>(t.dims.size());
  if (is_row_major(t.dims, t.strides)) {  // the usual case: one copy
    std::memcpy(dst, src + t.number * esize, out.nbytes());
    return out;
  }
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < out.numel(); ++n) {  // odometer over the view's indices
    int64_t at = t.number;
    for (int d = 0; d < rank; ++d) at += index[d] * t.strides[d];
    std::memcpy(dst + n * esize, src + at * esize, esize);
    for (int d = rank - 1; d >= 0 && ++index[d] == t.dims[d]; --d) index[d] = 0;
  }
  return out;
}

// The dict holding the weights: the root, or one of its dict entries, whichever has the most tensors.
std::pair<ValueId, std::string> weights_dict(const PickleDocument& doc) {
  auto tensors_in = [&](ValueId d) {
    size_t n = 0;
    const auto& items = doc.at(d).items;
    for (size_t i = 1; i < items.size(); i += 2) n += doc.at(items[i]).kind == PyKind::kTensor;
    return n;
  };
  auto rank_of = [](const std::string& name) {
    for (size_t i = 0; i < std::size(kWeightsNames); ++i)
      if (kWeightsNames[i] == name) return i;
    return std::size(kWeightsNames);
  };
  ValueId best = doc.root;
  std::string best_name;
  size_t best_count = tensors_in(doc.root);
  const auto& items = doc.at(doc.root).items;
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    const PyValue &k = doc.at(items[i]), &v = doc.at(items[i + 1]);
    if (k.kind != PyKind::kStr || v.kind != PyKind::kDict) continue;
    size_t n = tensors_in(items[i + 1]);
    if (n > best_count || (n == best_count && n > 0 && rank_of(k.text) < rank_of(best_name))) {
      best = items[i + 1];
      best_name = k.text;
      best_count = n;
    }
  }
  return {best, best_name};
}

std::string key_text(const PyValue& k) {
  if (k.kind == PyKind::kStr) return k.text;
  if (k.kind == PyKind::kInt) return std::to_string(k.number);
  return "?";
}

// (key, tensor id) of every tensor in `dict`, nested dicts flattened with '.' (a state_dict is flat;
// some scripts save {"backbone": {...}, "head": {...}}).
Status collect_tensors(const PickleDocument& doc, ValueId dict, const std::string& prefix, int depth,
                       std::vector<std::pair<std::string, ValueId>>& out, const std::string& label) {
  if (depth > kMaxNesting) return Status::invalid(label + ": dicts nested over " + std::to_string(kMaxNesting) + " deep");
  const auto& items = doc.at(dict).items;
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    const std::string key = prefix + key_text(doc.at(items[i]));
    const PyValue& v = doc.at(items[i + 1]);
    if (v.kind == PyKind::kTensor) out.emplace_back(key, items[i + 1]);
    if (v.kind == PyKind::kDict && items[i + 1] != dict)
      FERRY_RETURN_IF_ERROR(collect_tensors(doc, items[i + 1], key + ".", depth + 1, out, label));
  }
  return Status();
}

Result<Tensor> load_tensor(const Archive& a, const PickleDocument& doc, ValueId id, const std::string& key,
                           std::map<ValueId, std::string>& storage_bytes) {
  const PyValue& t = doc.at(id);
  const PyValue& storage = doc.at(t.storage);
  const std::string what = a.zip.path() + ": tensor '" + key + "'";
  auto it = storage_bytes.find(t.storage);
  if (it == storage_bytes.end()) {
    const ZipMember* m = a.zip.find(a.prefix + "data/" + storage.text);
    if (!m) return Status::invalid(what + ": its storage data/" + storage.text + " is not in the archive");
    const uint64_t want = static_cast<uint64_t>(storage.number) * dtype_size(storage.dtype);
    if (want > static_cast<uint64_t>(max_tensor_bytes()))
      return Status::error(ErrorCode::kOutOfRange, what + ": storage of " + std::to_string(want) + " bytes is over the limit");
    FERRY_ASSIGN_OR_RETURN(std::string bytes, a.zip.read(*m, want));
    if (bytes.size() != want)
      return Status::invalid(what + ": storage data/" + storage.text + " has " + std::to_string(bytes.size()) +
                             " bytes, its header says " + std::to_string(want));
    it = storage_bytes.emplace(t.storage, std::move(bytes)).first;
  }
  return materialize(t, storage, it->second, what);
}

}  // namespace

Result<Checkpoint> read_torch_zip(const std::string& path) {
  FERRY_ASSIGN_OR_RETURN(ZipArchive zip, ZipArchive::open(path, "a torch .pth (zip)"));
  FERRY_ASSIGN_OR_RETURN(auto found, find_pickle(zip));
  Archive a{zip, found.second};
  FERRY_RETURN_IF_ERROR(check_byteorder(a));
  FERRY_ASSIGN_OR_RETURN(std::string pickle, zip.read(*found.first, kMaxPickleBytes));
  const std::string label = path + ":" + found.first->name;
  std::map<std::string, ValueId> storages;
  FERRY_ASSIGN_OR_RETURN(PickleDocument doc, parse_pickle(pickle, label, storage_loader(label, storages)));
  if (doc.at(doc.root).kind != PyKind::kDict)
    return Status::invalid(path + ": holds a " + describe_value(doc, doc.root) +
                           ", not a dict of tensors (save the model's state_dict(), not the model)");
  Checkpoint ck;
  ck.path = path;
  ck.format = "torch zip (.pth)";
  auto [dict, name] = weights_dict(doc);
  ck.container = name;
  std::vector<std::pair<std::string, ValueId>> tensors;
  FERRY_RETURN_IF_ERROR(collect_tensors(doc, dict, "", 0, tensors, label));
  std::map<ValueId, std::string> storage_bytes;
  for (const auto& [key, id] : tensors) {
    FERRY_ASSIGN_OR_RETURN(Tensor t, load_tensor(a, doc, id, key, storage_bytes));
    ck.tensors.push_back({key, std::move(t)});
  }
  if (dict != doc.root) {
    const auto& items = doc.at(doc.root).items;
    for (size_t i = 0; i + 1 < items.size(); i += 2)
      if (items[i + 1] != dict) ck.other.emplace_back(key_text(doc.at(items[i])), describe_value(doc, items[i + 1]));
  }
  return ck;
}

}  // namespace ferry::weights
