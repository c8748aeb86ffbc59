#include "weights/pickle.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace ferry::weights {

namespace {

// A state_dict of a thousand tensors is ~20k values; an optimizer's state a few times that. The cap
// keeps a hostile file from growing the arena without bound (each value is ~150 bytes).
constexpr size_t kMaxValues = size_t{4} << 20;

// What calling an allowed global builds. Globals that are only referenced (a storage type, the
// Parameter class handed to _rebuild_from_type_v2) are kNotCallable.
enum class Builder {
  kNotCallable, kOrderedDict, kSet, kCodecsEncode, kSize,
  kRebuildTensor, kRebuildParameter, kRebuildFromTypeV2,
};

struct AllowedGlobal {
  std::string_view name;
  Builder builder;
};

// Protocol 2 writes Python 3's "builtins" as "__builtin__" (fix_imports), so both spellings appear.
constexpr AllowedGlobal kAllowed[] = {
    {"collections.OrderedDict", Builder::kOrderedDict},
    {"builtins.set", Builder::kSet},
    {"__builtin__.set", Builder::kSet},
    {"builtins.frozenset", Builder::kSet},
    {"__builtin__.frozenset", Builder::kSet},
    {"_codecs.encode", Builder::kCodecsEncode},
    {"torch.Size", Builder::kSize},
    {"torch._utils._rebuild_tensor", Builder::kRebuildTensor},
    {"torch._utils._rebuild_tensor_v2", Builder::kRebuildTensor},
    {"torch._utils._rebuild_parameter", Builder::kRebuildParameter},
    {"torch._utils._rebuild_parameter_with_state", Builder::kRebuildParameter},
    {"torch._tensor._rebuild_from_type_v2", Builder::kRebuildFromTypeV2},
    {"torch.nn.parameter.Parameter", Builder::kNotCallable},
    {"torch.Tensor", Builder::kNotCallable},
};

struct StorageType {
  std::string_view name;
  std::optional<DType> dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"torch.FloatStorage", DType::kFloat32},   {"torch.DoubleStorage", DType::kFloat64},
    {"torch.HalfStorage", DType::kFloat16},    {"torch.BFloat16Storage", DType::kBFloat16},
    {"torch.LongStorage", DType::kInt64},      {"torch.IntStorage", DType::kInt32},
    {"torch.ShortStorage", DType::kInt16},     {"torch.CharStorage", DType::kInt8},
    {"torch.ByteStorage", DType::kUInt8},      {"torch.BoolStorage", DType::kBool},
    {"torch.ComplexFloatStorage", std::nullopt}, {"torch.ComplexDoubleStorage", std::nullopt},
    {"torch.QInt8Storage", std::nullopt},      {"torch.QUInt8Storage", std::nullopt},
    {"torch.QInt32Storage", std::nullopt},     {"torch.UntypedStorage", std::nullopt},
};

bool is_storage_type(std::string_view name) {
  for (const StorageType& s : kStorageTypes)
    if (s.name == name) return true;
  return name.starts_with("torch.") && name.ends_with("Storage");  // float8 and other new types
}

std::optional<Builder> allowed_global(std::string_view name) {
  for (const AllowedGlobal& g : kAllowed)
    if (g.name == name) return g.builder;
  if (is_storage_type(name)) return Builder::kNotCallable;
  return std::nullopt;
}

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& label, const PersistentLoad& persistent_load)
      : b_(bytes), label_(label), persistent_load_(persistent_load) {}

  Result<PickleDocument> run() {
    for (;;) {
      if (pos_ >= b_.size()) return fail("ends without a STOP opcode (truncated)");
      op_at_ = pos_;
      const uint8_t op = static_cast<uint8_t>(b_[pos_++]);
      if (op == '.') break;
      FERRY_RETURN_IF_ERROR(step(op));
    }
    if (stack_.size() != 1 || !marks_.empty()) return fail("leaves " + std::to_string(stack_.size()) + " values on its stack");
    doc_.root = stack_.back();
    return std::move(doc_);
  }

 private:
  Status fail(const std::string& what) const {
    return Status::invalid(label_ + ": not a readable pickle: " + what + " (at byte " + std::to_string(op_at_) + ")");
  }

  // ---- reading the opcode stream --------------------------------------------------------------------

  Result<std::string_view> take(uint64_t n) {
    if (n > b_.size() - pos_) return fail("an argument runs past the end (truncated)");
    std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  template <class T>
  Result<T> le() {
    FERRY_ASSIGN_OR_RETURN(std::string_view s, take(sizeof(T)));
    T v;
    std::memcpy(&v, s.data(), sizeof(T));
    return v;  // little-endian host (static_assert in npy.cc)
  }
  Result<std::string_view> line() {
    size_t nl = b_.find('\n', pos_);
    if (nl == std::string_view::npos) return fail("a GLOBAL name has no end of line");
    std::string_view s = b_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }

  // ---- values ------------------------------------------------------------------------------------

  Result<ValueId> add(PyValue v) {
    if (doc_.values.size() >= kMaxValues) return fail("holds more than " + std::to_string(kMaxValues) + " values");
    doc_.values.push_back(std::move(v));
    return static_cast<ValueId>(doc_.values.size() - 1);
  }
  Status push(PyValue v) {
    FERRY_ASSIGN_OR_RETURN(ValueId id, add(std::move(v)));
    stack_.push_back(id);
    return Status();
  }
  // A string or bytes value: its length as an L, then that many bytes.
  template <class L>
  Status push_sized(PyKind kind) {
    FERRY_ASSIGN_OR_RETURN(L n, le<L>());
    FERRY_ASSIGN_OR_RETURN(std::string_view s, take(n));
    return push_text(kind, s);
  }
  Status push_kind(PyKind kind) {
    PyValue v;
    v.kind = kind;
    return push(std::move(v));
  }
  Status push_int(int64_t n) {
    PyValue v;
    v.kind = PyKind::kInt;
    v.number = n;
    return push(std::move(v));
  }
  Status push_text(PyKind kind, std::string_view s) {
    PyValue v;
    v.kind = kind;
    v.text.assign(s);
    return push(std::move(v));
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Result<ValueId> pop() {
    if (stack_.size() <= floor()) return fail("pops from an empty stack");
    ValueId id = stack_.back();
    stack_.pop_back();
    return id;
  }
  Result<ValueId> top() const {
    if (stack_.size() <= floor()) return fail("reads from an empty stack");
    return stack_.back();
  }
  Result<std::vector<ValueId>> pop_mark() {
    if (marks_.empty()) return fail("no MARK for a tuple, list or dict");
    std::vector<ValueId> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  PyValue& at(ValueId id) { return doc_.values[id]; }
  Status push_tuple(std::vector<ValueId> items) {
    PyValue v;
    v.kind = PyKind::kTuple;
    v.items = std::move(items);
    return push(std::move(v));
  }

  // ---- opcodes -------------------------------------------------------------------------------------

  Status step(uint8_t op);
  Status op_global(std::string name);
  Status op_reduce(ValueId callable, ValueId args);
  Status op_build();
  Status append_items(const std::vector<ValueId>& items);
  Status set_items(const std::vector<ValueId>& items);
  Result<ValueId> call(ValueId callable, ValueId args);
  Result<ValueId> rebuild_tensor(const std::vector<ValueId>& args);
  Result<ValueId> codecs_encode(const std::vector<ValueId>& args);
  Result<ValueId> make_container(PyKind kind, const std::vector<ValueId>& args);

  std::string_view b_;
  size_t pos_ = 0, op_at_ = 0;
  std::string label_;
  const PersistentLoad& persistent_load_;
  PickleDocument doc_;
  std::vector<ValueId> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ValueId> memo_;
};

Status Unpickler::step(uint8_t op) {
  switch (op) {
    case 0x80: return le<uint8_t>().status();                       // PROTO
    case 0x95: return le<uint64_t>().status();                      // FRAME: a size hint
    case '(': marks_.push_back(stack_.size()); return Status();     // MARK
    case 'N': return push_kind(PyKind::kNone);
    case 0x88: case 0x89: {                                          // NEWTRUE, NEWFALSE
      PyValue v;
      v.kind = PyKind::kBool;
      v.number = op == 0x88;
      return push(std::move(v));
    }
    case 'K': { FERRY_ASSIGN_OR_RETURN(uint8_t n, le<uint8_t>()); return push_int(n); }
    case 'M': { FERRY_ASSIGN_OR_RETURN(uint16_t n, le<uint16_t>()); return push_int(n); }
    case 'J': { FERRY_ASSIGN_OR_RETURN(int32_t n, le<int32_t>()); return push_int(n); }
    case 0x8a: case 0x8b: {                                          // LONG1, LONG4: two's complement bytes
      uint64_t n = 0;
      if (op == 0x8a) { FERRY_ASSIGN_OR_RETURN(uint8_t k, le<uint8_t>()); n = k; }
      else { FERRY_ASSIGN_OR_RETURN(uint32_t k, le<uint32_t>()); n = k; }
      FERRY_ASSIGN_OR_RETURN(std::string_view s, take(n));
      if (s.size() > 8) {  // beyond int64: only metadata (a seed) is that big; keep its magnitude
        PyValue v;
        v.kind = PyKind::kFloat;
        v.real = std::ldexp(1.0, static_cast<int>(8 * s.size() - 1));
        return push(std::move(v));
      }
      uint64_t u = 0;
      for (size_t i = 0; i < s.size(); ++i) u |= static_cast<uint64_t>(static_cast<uint8_t>(s[i])) << (8 * i);
      if (!s.empty() && s.size() < 8 && (static_cast<uint8_t>(s.back()) & 0x80)) u |= ~uint64_t{0} << (8 * s.size());
      return push_int(static_cast<int64_t>(u));
    }
    case 'G': {                                                      // BINFLOAT: big-endian double
      FERRY_ASSIGN_OR_RETURN(uint64_t bits, le<uint64_t>());
      PyValue v;
      v.kind = PyKind::kFloat;
      v.real = std::bit_cast<double>(__builtin_bswap64(bits));
      return push(std::move(v));
    }
    case 'X': return push_sized<uint32_t>(PyKind::kStr);
    case 0x8c: return push_sized<uint8_t>(PyKind::kStr);
    case 0x8d: return push_sized<uint64_t>(PyKind::kStr);
    case 'T': return push_sized<uint32_t>(PyKind::kStr);
    case 'U': return push_sized<uint8_t>(PyKind::kStr);
    case 'B': return push_sized<uint32_t>(PyKind::kBytes);
    case 'C': return push_sized<uint8_t>(PyKind::kBytes);
    case 0x8e: case 0x96: return push_sized<uint64_t>(PyKind::kBytes);
    case ')': return push_tuple({});
    case 0x85: case 0x86: case 0x87: {                               // TUPLE1..3
      size_t n = op - 0x84;
      if (stack_.size() < floor() + n) return fail("TUPLE" + std::to_string(n) + " on a short stack");
      std::vector<ValueId> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
      stack_.resize(stack_.size() - n);
      return push_tuple(std::move(items));
    }
    case 't': { FERRY_ASSIGN_OR_RETURN(auto items, pop_mark()); return push_tuple(std::move(items)); }
    case ']': return push_kind(PyKind::kList);
    case '}': return push_kind(PyKind::kDict);
    case 0x8f: return push_kind(PyKind::kSet);
    case 'l': case 'd': case 0x91: {                                 // LIST, DICT, FROZENSET from a MARK
      FERRY_ASSIGN_OR_RETURN(auto items, pop_mark());
      FERRY_RETURN_IF_ERROR(push_kind(op == 'l' ? PyKind::kList : op == 'd' ? PyKind::kDict : PyKind::kSet));
      return op == 'd' ? set_items(items) : append_items(items);
    }
    case 'a': { FERRY_ASSIGN_OR_RETURN(ValueId v, pop()); return append_items({v}); }
    case 'e': case 0x90: { FERRY_ASSIGN_OR_RETURN(auto items, pop_mark()); return append_items(items); }
    case 's': {
      FERRY_ASSIGN_OR_RETURN(ValueId v, pop());
      FERRY_ASSIGN_OR_RETURN(ValueId k, pop());
      return set_items({k, v});
    }
    case 'u': { FERRY_ASSIGN_OR_RETURN(auto items, pop_mark()); return set_items(items); }
    case '0': return pop().status();
    case '1': return pop_mark().status();
    case '2': { FERRY_ASSIGN_OR_RETURN(ValueId v, top()); stack_.push_back(v); return Status(); }
    case 'q': case 'r': case 0x94: {                                 // BINPUT, LONG_BINPUT, MEMOIZE
      uint64_t idx = memo_.size();
      if (op == 'q') { FERRY_ASSIGN_OR_RETURN(uint8_t i, le<uint8_t>()); idx = i; }
      if (op == 'r') { FERRY_ASSIGN_OR_RETURN(uint32_t i, le<uint32_t>()); idx = i; }
      FERRY_ASSIGN_OR_RETURN(ValueId v, top());
      memo_[idx] = v;
      return Status();
    }
    case 'h': case 'j': {                                            // BINGET, LONG_BINGET
      uint64_t idx;
      if (op == 'h') { FERRY_ASSIGN_OR_RETURN(uint8_t i, le<uint8_t>()); idx = i; }
      else { FERRY_ASSIGN_OR_RETURN(uint32_t i, le<uint32_t>()); idx = i; }
      auto it = memo_.find(idx);
      if (it == memo_.end()) return fail("gets memo entry " + std::to_string(idx) + ", which was never put");
      stack_.push_back(it->second);
      return Status();
    }
    case 'c': {                                                      // GLOBAL "module\nname\n"
      FERRY_ASSIGN_OR_RETURN(std::string_view module, line());
      FERRY_ASSIGN_OR_RETURN(std::string_view name, line());
      return op_global(std::string(module) + "." + std::string(name));
    }
    case 0x93: {                                                     // STACK_GLOBAL
      FERRY_ASSIGN_OR_RETURN(ValueId name, pop());
      FERRY_ASSIGN_OR_RETURN(ValueId module, pop());
      if (at(module).kind != PyKind::kStr || at(name).kind != PyKind::kStr) return fail("STACK_GLOBAL without two strings");
      return op_global(at(module).text + "." + at(name).text);
    }
    case 'R': {
      FERRY_ASSIGN_OR_RETURN(ValueId args, pop());
      FERRY_ASSIGN_OR_RETURN(ValueId callable, pop());
      return op_reduce(callable, args);
    }
    case 0x81: {                                                     // NEWOBJ: cls.__new__(cls, *args)
      FERRY_ASSIGN_OR_RETURN(ValueId args, pop());
      FERRY_ASSIGN_OR_RETURN(ValueId cls, pop());
      return op_reduce(cls, args);
    }
    case 'b': return op_build();
    case 'Q': {                                                      // BINPERSID
      FERRY_ASSIGN_OR_RETURN(ValueId pid, pop());
      if (!persistent_load_) return fail("refers to external data (BINPERSID) that this file cannot hold");
      FERRY_ASSIGN_OR_RETURN(ValueId v, persistent_load_(doc_, pid));
      stack_.push_back(v);
      return Status();
    }
    case 'i': case 'o': case 0x92:
      return Status::invalid(label_ + ": refused: the pickle builds an arbitrary object (opcode '" +
                             std::string(1, static_cast<char>(op)) +
                             "'), which would run its code; ferry reads tensors and plain containers only");
    default: {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      return fail(std::string("opcode ") + hex +
                  " is not supported (protocol 0/1 text opcodes and out-of-band buffers are not read; torch.save "
                  "writes protocol 2)");
    }
  }
}

Status Unpickler::op_global(std::string name) {
  if (!allowed_global(name))
    return Status::invalid(label_ + ": refused: the pickle names the Python global '" + name +
                           "', which ferry does not load (a checkpoint may hold tensors and plain containers only, "
                           "and ferry never runs a checkpoint's code)");
  return push_text(PyKind::kGlobal, name);
}

Status Unpickler::op_reduce(ValueId callable, ValueId args) {
  FERRY_ASSIGN_OR_RETURN(ValueId v, call(callable, args));
  stack_.push_back(v);
  return Status();
}

Result<ValueId> Unpickler::call(ValueId callable, ValueId args_id) {
  if (at(callable).kind != PyKind::kGlobal) return fail("calls something that is not a global");
  const std::string name = at(callable).text;
  if (at(args_id).kind != PyKind::kTuple) return fail("calls " + name + " without an argument tuple");
  const std::vector<ValueId> args = at(args_id).items;
  switch (*allowed_global(name)) {
    case Builder::kOrderedDict: return make_container(PyKind::kDict, args);
    case Builder::kSet: return make_container(PyKind::kSet, args);
    case Builder::kSize:
      if (args.size() != 1 || at(args[0]).kind != PyKind::kTuple) return fail("torch.Size without a tuple");
      return args[0];
    case Builder::kCodecsEncode: return codecs_encode(args);
    case Builder::kRebuildTensor: return rebuild_tensor(args);
    case Builder::kRebuildParameter:
      if (args.empty() || at(args[0]).kind != PyKind::kTensor) return fail(name + " without a tensor");
      return args[0];
    case Builder::kRebuildFromTypeV2:  // (func, new_type, args, state): func(*args), the type ignored
      if (args.size() < 3) return fail(name + " with " + std::to_string(args.size()) + " arguments");
      if (at(args[0]).kind == PyKind::kGlobal && at(args[0]).text == name) return fail(name + " nested in itself");
      return call(args[0], args[2]);
    case Builder::kNotCallable: break;
  }
  return Status::invalid(label_ + ": refused: the pickle calls '" + name +
                         "', which ferry does not run (it reads tensors and plain containers only)");
}

Result<ValueId> Unpickler::make_container(PyKind kind, const std::vector<ValueId>& args) {
  PyValue v;
  v.kind = kind;
  FERRY_ASSIGN_OR_RETURN(ValueId id, add(std::move(v)));
  if (args.empty()) return id;
  if (args.size() != 1 || (at(args[0]).kind != PyKind::kList && at(args[0]).kind != PyKind::kTuple))
    return fail("a dict or set built from something other than a list");
  const std::vector<ValueId> items = at(args[0]).items;
  if (kind == PyKind::kSet) {
    at(id).items = items;
    return id;
  }
  for (ValueId pair : items) {  // OrderedDict([(k, v), ...])
    const PyValue& p = at(pair);
    if ((p.kind != PyKind::kTuple && p.kind != PyKind::kList) || p.items.size() != 2)
      return fail("OrderedDict built from something other than pairs");
    at(id).items.push_back(p.items[0]);
    at(id).items.push_back(p.items[1]);
  }
  return id;
}

Result<ValueId> Unpickler::codecs_encode(const std::vector<ValueId>& args) {
  // Protocol 2 pickles bytes as _codecs.encode(text, 'latin1'): each code point below 256 is a byte.
  if (args.size() != 2 || at(args[0]).kind != PyKind::kStr) return fail("_codecs.encode without (str, encoding)");
  const std::string& utf8 = at(args[0]).text;
  PyValue v;
  v.kind = PyKind::kBytes;
  for (size_t i = 0; i < utf8.size(); ++i) {
    auto c = static_cast<uint8_t>(utf8[i]);
    if (c < 0x80) {
      v.text += static_cast<char>(c);
    } else if ((c & 0xE0) == 0xC0 && i + 1 < utf8.size() && c <= 0xC3) {
      v.text += static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(utf8[++i]) & 0x3F));
    } else {
      return fail("_codecs.encode of text that is not latin-1");
    }
  }
  return add(std::move(v));
}

Result<ValueId> Unpickler::rebuild_tensor(const std::vector<ValueId>& args) {
  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  if (args.size() < 4) return fail("a tensor rebuilt from " + std::to_string(args.size()) + " arguments");
  const PyValue &storage = at(args[0]), &offset = at(args[1]), &size = at(args[2]), &stride = at(args[3]);
  if (storage.kind != PyKind::kStorage || offset.kind != PyKind::kInt || size.kind != PyKind::kTuple ||
      stride.kind != PyKind::kTuple || size.items.size() != stride.items.size())
    return fail("a tensor rebuilt from arguments that are not (storage, offset, size, stride)");
  PyValue t;
  t.kind = PyKind::kTensor;
  t.storage = args[0];
  t.dtype = storage.dtype;
  t.number = offset.number;
  for (size_t i = 0; i < size.items.size(); ++i) {
    const PyValue &d = at(size.items[i]), &s = at(stride.items[i]);
    if (d.kind != PyKind::kInt || s.kind != PyKind::kInt) return fail("a tensor's size or stride is not integers");
    t.dims.push_back(d.number);
    t.strides.push_back(s.number);
  }
  return add(std::move(t));
}

Status Unpickler::op_build() {
  FERRY_ASSIGN_OR_RETURN(ValueId state, pop());
  FERRY_ASSIGN_OR_RETURN(ValueId obj, top());
  // OrderedDict carries attributes (a state_dict's _metadata: versions per module), a Parameter its
  // __dict__: attributes of values ferry reads only for their items and data, so they are dropped.
  PyKind k = at(obj).kind;
  if (k == PyKind::kDict || k == PyKind::kTensor || k == PyKind::kSet) return Status();
  (void)state;
  return fail("BUILD on a value that is not a dict or a tensor");
}

Status Unpickler::append_items(const std::vector<ValueId>& items) {
  FERRY_ASSIGN_OR_RETURN(ValueId target, top());
  if (at(target).kind != PyKind::kList && at(target).kind != PyKind::kSet) return fail("APPEND to something not a list");
  auto& dst = at(target).items;
  dst.insert(dst.end(), items.begin(), items.end());
  return Status();
}

Status Unpickler::set_items(const std::vector<ValueId>& items) {
  FERRY_ASSIGN_OR_RETURN(ValueId target, top());
  if (at(target).kind != PyKind::kDict) return fail("SETITEM on something not a dict");
  if (items.size() % 2) return fail("SETITEMS with a key and no value");
  auto& dst = at(target).items;
  dst.insert(dst.end(), items.begin(), items.end());
  return Status();
}

}  // namespace

Result<PickleDocument> parse_pickle(std::string_view bytes, const std::string& label,
                                    const PersistentLoad& persistent_load) {
  return Unpickler(bytes, label, persistent_load).run();
}

std::optional<DType> torch_storage_dtype(std::string_view global) {
  for (const StorageType& s : kStorageTypes)
    if (s.name == global) return s.dtype;
  return std::nullopt;
}

std::string describe_value(const PickleDocument& doc, ValueId id) {
  const PyValue& v = doc.at(id);
  switch (v.kind) {
    case PyKind::kNone: return "None";
    case PyKind::kBool: return v.number ? "True" : "False";
    case PyKind::kInt: return std::to_string(v.number);
    case PyKind::kFloat: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", v.real);
      return buf;
    }
    case PyKind::kStr: return "'" + (v.text.size() > 40 ? v.text.substr(0, 40) + "..." : v.text) + "'";
    case PyKind::kBytes: return std::to_string(v.text.size()) + " bytes";
    case PyKind::kTuple: case PyKind::kList: case PyKind::kSet:
      return "[" + std::to_string(v.items.size()) + " items]";
    case PyKind::kDict: return "{" + std::to_string(v.items.size() / 2) + " entries}";
    case PyKind::kGlobal: return v.text;
    case PyKind::kStorage: return "storage " + v.text;
    case PyKind::kTensor: return "tensor";
  }
  return "?";
}

}  // namespace ferry::weights
