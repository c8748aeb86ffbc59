// Status / Result<T>: ferry's one error type. Errors carry a message plus a chain of context lines
// ("while importing node 'Conv_12'") so the CLI can print one line that names the file, node or tensor.
#pragma once
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ferry {

enum class ErrorCode { kOk = 0, kInvalidArgument, kNotSupported, kIO, kOutOfRange, kInternal };

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok_status() { return Status(); }
  static Status error(ErrorCode code, std::string message) { return Status(code, std::move(message)); }
  static Status invalid(std::string message) { return Status(ErrorCode::kInvalidArgument, std::move(message)); }
  static Status unsupported(std::string message) { return Status(ErrorCode::kNotSupported, std::move(message)); }
  static Status io(std::string message) { return Status(ErrorCode::kIO, std::move(message)); }
  static Status internal(std::string message) { return Status(ErrorCode::kInternal, std::move(message)); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  // The innermost message, without context.
  const std::string& message() const { return message_; }
  // Adds an outer context line; the rendered message reads outermost first.
  Status& with_context(std::string context) & {
    if (!ok()) context_.push_back(std::move(context));
    return *this;
  }
  Status&& with_context(std::string context) && {
    if (!ok()) context_.push_back(std::move(context));
    return std::move(*this);
  }
  // "outer: inner: message"
  std::string to_string() const;

 private:
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::vector<std::string> context_;  // innermost first
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }
  Result& with_context(std::string context) & {
    if (!ok()) std::get<1>(v_).with_context(std::move(context));
    return *this;
  }
  Result&& with_context(std::string context) && {
    if (!ok()) std::get<1>(v_).with_context(std::move(context));
    return std::move(*this);
  }

 private:
  std::variant<T, Status> v_;
};

#define FERRY_CONCAT_INNER(a, b) a##b
#define FERRY_CONCAT(a, b) FERRY_CONCAT_INNER(a, b)

#define FERRY_RETURN_IF_ERROR(expr)              \
  do {                                           \
    ::ferry::Status ferry_status_ = (expr);      \
    if (!ferry_status_.ok()) return ferry_status_; \
  } while (0)

#define FERRY_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

// FERRY_ASSIGN_OR_RETURN(auto x, make_x());
#define FERRY_ASSIGN_OR_RETURN(lhs, expr) \
  FERRY_ASSIGN_OR_RETURN_IMPL(FERRY_CONCAT(ferry_result_, __LINE__), lhs, expr)

}  // namespace ferry
