#include "tools/html.h"

#include <cmath>
#include <cstdint>

namespace ferry::tools::html {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}
std::string str(const json& j, const char* k, const std::string& d) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : d;
}
double dbl(const json& j, const char* k, double d) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : d; }
json obj(const json& j, const char* k) { return j.is_object() && j.contains(k) && j[k].is_object() ? j[k] : json::object(); }
json arr(const json& j, const char* k) { return j.is_object() && j.contains(k) && j[k].is_array() ? j[k] : json::array(); }
bool flag(const json& j, const char* k) { return j.is_object() && j.contains(k) && j[k].is_boolean() && j[k].get<bool>(); }
std::string count(const json& j, const char* k) { return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].dump() : "0"; }
std::string text(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

const char* const kCss = R"(body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}
header{background:#1d2330;color:#fff;padding:24px 40px}header h1{margin:0;font-size:24px}header p{margin:6px 0 0;color:#c9d1e0}
main{padding:24px 40px;max-width:1200px}section{background:#fff;border-radius:10px;padding:20px 24px;margin:0 0 20px;box-shadow:0 1px 3px #0002}
h2{margin:0 0 12px;font-size:18px}.verdict{font-size:28px;font-weight:700}.ok{color:#17803d}.warning{color:#b7791f}.failed,.bad{color:#c53030}.skipped{color:#718096}
.cards{display:flex;gap:16px;flex-wrap:wrap;margin-top:12px}.card{background:#f0f3f8;border-radius:8px;padding:12px 16px;min-width:150px}
.card b{display:block;font-size:20px}table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #e2e8f0;vertical-align:top}
th{background:#f7fafc}pre{background:#1d2330;color:#e2e8f0;padding:12px;border-radius:8px;overflow-x:auto;font-size:12px}
.note{color:#4a5568;font-size:13px}svg text{font-family:inherit})";

std::string png_data_uri(const std::string& png) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "data:image/png;base64,";
  size_t i = 0;
  for (; i + 2 < png.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(png[i]) << 16) | (static_cast<uint8_t>(png[i + 1]) << 8) | static_cast<uint8_t>(png[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (i < png.size()) {
    uint32_t v = static_cast<uint8_t>(png[i]) << 16;
    if (i + 1 < png.size()) v |= static_cast<uint8_t>(png[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < png.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace ferry::tools::html
