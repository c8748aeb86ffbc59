#include "tools/evaluate/preprocess.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ferry::tools::evaluate {

namespace {

const char* kImagenet = "resize=256,crop=224,order=rgb,scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225,layout=nchw";

Result<double> parse_number(const std::string& key, const std::string& v) {
  auto slash = v.find('/');
  if (slash != std::string::npos) {
    auto a = parse_number(key, v.substr(0, slash));
    auto b = parse_number(key, v.substr(slash + 1));
    if (!a.ok() || !b.ok() || *b == 0) return Status::invalid("--preprocess " + key + "=" + v + ": not a number or a/b");
    return *a / *b;
  }
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d))
    return Status::invalid("--preprocess " + key + "=" + v + ": not a number");
  return d;
}

Result<int> parse_size(const std::string& key, const std::string& v) {
  auto d = parse_number(key, v);
  if (!d.ok()) return d.status();
  if (*d < 1 || *d > 65536 || *d != std::floor(*d))
    return Status::invalid("--preprocess " + key + "=" + v + ": must be a whole number of pixels, 1 to 65536");
  return static_cast<int>(*d);
}

Result<std::vector<float>> parse_channels(const std::string& key, const std::string& v) {
  std::vector<float> out;
  std::stringstream ss(v);
  std::string part;
  while (std::getline(ss, part, ':')) {
    auto d = parse_number(key, part);
    if (!d.ok()) return d.status();
    out.push_back(static_cast<float>(*d));
  }
  if (out.size() != 1 && out.size() != 3)
    return Status::invalid("--preprocess " + key + "=" + v + ": give 1 value or 3 (one per channel, ':' between)");
  if (key == "std")
    for (float f : out)
      if (f == 0) return Status::invalid("--preprocess std=" + v + ": a std of 0 divides by zero");
  if (out.size() == 1) out.assign(3, out[0]);
  return out;
}

Status set_key(PreprocessSpec& s, const std::string& key, const std::string& v) {
  if (key == "resize") {
    auto n = parse_size(key, v);
    if (!n.ok()) return n.status();
    s.resize = *n;
  } else if (key == "crop") {
    auto x = v.find('x');
    auto h = parse_size(key, v.substr(0, x));
    auto w = x == std::string::npos ? h : parse_size(key, v.substr(x + 1));
    if (!h.ok()) return h.status();
    if (!w.ok()) return w.status();
    s.crop_height = *h;
    s.crop_width = *w;
  } else if (key == "order") {
    if (v != "rgb" && v != "bgr") return Status::invalid("--preprocess order=" + v + ": rgb or bgr");
    s.bgr = v == "bgr";
  } else if (key == "scale") {
    auto d = parse_number(key, v);
    if (!d.ok()) return d.status();
    s.scale = static_cast<float>(*d);
  } else if (key == "mean" || key == "std") {
    auto c = parse_channels(key, v);
    if (!c.ok()) return c.status();
    (key == "mean" ? s.mean : s.std) = *c;
  } else if (key == "layout") {
    if (v != "nchw" && v != "nhwc") return Status::invalid("--preprocess layout=" + v + ": nchw or nhwc");
    s.nchw = v == "nchw";
  } else if (key == "dtype") {
    auto t = dtype_from_name(v);
    if (!t || (*t != DType::kFloat32 && *t != DType::kFloat16 && *t != DType::kUInt8))
      return Status::invalid("--preprocess dtype=" + v + ": float32, float16 or uint8");
    s.dtype = *t;
  } else {
    return Status::invalid("--preprocess: unknown key '" + key +
                           "' (known: resize, crop, order, scale, mean, std, layout, dtype; preset: imagenet)");
  }
  return Status();
}

Status parse_pairs(PreprocessSpec& s, const std::string& text) {
  std::string norm = text;
  for (char& c : norm)
    if (c == ' ' || c == ';') c = ',';
  std::stringstream ss(norm);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      if (item != "imagenet")
        return Status::invalid("--preprocess: '" + item + "' is neither key=value nor a preset (imagenet)");
      FERRY_RETURN_IF_ERROR(parse_pairs(s, kImagenet));
      continue;
    }
    FERRY_RETURN_IF_ERROR(set_key(s, item.substr(0, eq), item.substr(eq + 1)));
  }
  return Status();
}

Status parse_json_file(PreprocessSpec& s, const std::string& path) {
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::invalid(path + ": not a JSON object of preprocessing keys");
  for (auto& [k, v] : j.items()) {
    std::string text;
    if (v.is_string()) {
      text = v.get<std::string>();
    } else if (v.is_number()) {
      text = v.dump();
    } else if (v.is_array()) {
      for (auto& e : v) {
        if (!e.is_number()) return Status::invalid(path + ": '" + k + "' must list numbers");
        text += (text.empty() ? "" : ":") + e.dump();
      }
    } else {
      return Status::invalid(path + ": '" + k + "' must be a string, a number or a list of numbers");
    }
    if (k == "crop" && v.is_array() && v.size() == 2) text = v[0].dump() + "x" + v[1].dump();
    Status st = set_key(s, k, text);
    if (!st.ok()) return Status::invalid(path + ": " + st.message());
  }
  return Status();
}

std::string fmt_float(float f) {
  std::ostringstream o;
  o.precision(9);
  o << f;
  return o.str();
}

}  // namespace

Result<PreprocessSpec> parse_preprocess(const std::string& spec) {
  PreprocessSpec s;
  s.text = spec;
  const bool json = spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".json") == 0;
  FERRY_RETURN_IF_ERROR(json ? parse_json_file(s, spec) : parse_pairs(s, spec));
  if (s.dtype == DType::kUInt8 && (s.scale != 1.0f || !s.mean.empty() || !s.std.empty()))
    return Status::invalid("--preprocess dtype=uint8 takes the pixels as they are: drop scale, mean and std");
  return s;
}

std::string describe(const PreprocessSpec& s) {
  std::string out;
  auto add = [&](const std::string& kv) { out += (out.empty() ? "" : ",") + kv; };
  if (s.resize) add("resize=" + std::to_string(s.resize));
  if (s.crop_height)
    add("crop=" + std::to_string(s.crop_height) +
        (s.crop_width != s.crop_height ? "x" + std::to_string(s.crop_width) : ""));
  add(std::string("order=") + (s.bgr ? "bgr" : "rgb"));
  if (s.scale != 1.0f) add("scale=" + fmt_float(s.scale));
  auto list = [&](const char* k, const std::vector<float>& v) {
    if (v.empty()) return;
    std::string t;
    for (float f : v) t += (t.empty() ? "" : ":") + fmt_float(f);
    add(std::string(k) + "=" + t);
  };
  list("mean", s.mean);
  list("std", s.std);
  add(std::string("layout=") + (s.nchw ? "nchw" : "nhwc"));
  add("dtype=" + std::string(dtype_name(s.dtype)));
  return out;
}

Result<Image> apply_geometry(const Image& img, const PreprocessSpec& s, const std::string& label) {
  Image out = s.resize ? resize_shorter(img, s.resize) : img;
  if (s.crop_height) return center_crop(out, s.crop_height, s.crop_width, label);
  return out;
}

Result<Tensor> image_to_tensor(const Image& img, const PreprocessSpec& s) {
  const int64_t h = img.height, w = img.width, hw = h * w;
  std::vector<int64_t> dims = s.nchw ? std::vector<int64_t>{1, 3, h, w} : std::vector<int64_t>{1, h, w, 3};
  auto t = Tensor::create(s.dtype, dims);
  if (!t.ok()) return t.status();
  for (int64_t p = 0; p < hw; ++p)
    for (int c = 0; c < 3; ++c) {
      const uint8_t px = img.rgb[p * 3 + (s.bgr ? 2 - c : c)];
      const int64_t at = s.nchw ? c * hw + p : p * 3 + c;
      if (s.dtype == DType::kUInt8) {
        t->data<uint8_t>()[at] = px;
        continue;
      }
      // The same float32 operations, in the same order, as the graph `ferry compile --preprocess` inserts.
      float v = static_cast<float>(px);
      if (s.scale != 1.0f) v = v * s.scale;
      if (!s.mean.empty()) v = v - s.mean[c];
      if (!s.std.empty()) v = v / s.std[c];
      if (s.dtype == DType::kFloat32)
        t->data<float>()[at] = v;
      else
        t->data<uint16_t>()[at] = float16::from_float(v);
    }
  return std::move(*t);
}

bool takes_uint8_image(DType dtype, const std::vector<int64_t>& dims) {
  return dtype == DType::kUInt8 && dims.size() == 4 && dims[3] == 3;
}

Result<Tensor> image_to_uint8_nhwc(const Image& img) {
  PreprocessSpec pixels_as_they_are;
  pixels_as_they_are.nchw = false;
  pixels_as_they_are.dtype = DType::kUInt8;
  return image_to_tensor(img, pixels_as_they_are);
}

}  // namespace ferry::tools::evaluate
