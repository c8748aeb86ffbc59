// What ferry's self-contained HTML reports share (migrate's report.html, evaluate's report.html): escaping,
// the one style sheet, and readers of report-JSON members that take nulls (a stage that did not run, a
// metric that could not be measured) as the default instead of throwing as json::value() does.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::tools::html {

using nlohmann::json;

std::string esc(const std::string& s);
std::string str(const json& j, const char* k, const std::string& d = "");
double dbl(const json& j, const char* k, double d = NAN);
json obj(const json& j, const char* k);
json arr(const json& j, const char* k);
bool flag(const json& j, const char* k);
std::string count(const json& j, const char* k);
std::string text(const json& j);
// The <style> contents: header, sections, cards, tables, verdict colours (.ok .warning .failed .bad).
extern const char* const kCss;
// "data:image/png;base64,..." for an <img src>.
std::string png_data_uri(const std::string& png_bytes);

}  // namespace ferry::tools::html
