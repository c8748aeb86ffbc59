// JPEG through TurboJPEG's API (errors are return codes, no setjmp) and PNG through libpng's simplified
// API (the same); both decode straight to interleaved RGB.
#include "tools/evaluate/image.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/read_only_file.h"

namespace ferry::tools::evaluate {

namespace {

constexpr uint64_t kMaxPixels = uint64_t{1} << 28;
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;

std::string lower_ext(const std::string& path) {
  auto dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return "";
  std::string e = path.substr(dot);
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

Status check_pixels(uint64_t w, uint64_t h, const std::string& path, const char* format) {
  if (w == 0 || h == 0) return Status::invalid(path + ": corrupt " + format + " (a header of " + std::to_string(w) + "x" +
                                               std::to_string(h) + " pixels)");
  if (w * h > kMaxPixels)
    return Status::invalid(path + ": " + std::to_string(w) + "x" + std::to_string(h) +
                           " pixels is over the 2^28 this reads");
  return Status();
}

Result<Image> decode_jpeg(const std::string& bytes, const std::string& path) {
  std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitDecompress(), tjDestroy);
  if (!tj) return Status::internal("TurboJPEG could not start");
  auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.get(), data, bytes.size(), &w, &h, &subsamp, &colorspace) != 0)
    return Status::invalid(path + ": not a readable JPEG (" + tjGetErrorStr2(tj.get()) + ")");
  FERRY_RETURN_IF_ERROR(check_pixels(w, h, path, "JPEG"));
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<size_t>(w) * h * 3);
  // Accurate (islow) IDCT: the decoder PIL and OpenCV use by default, so pixels match theirs.
  if (tjDecompress2(tj.get(), data, bytes.size(), img.rgb.data(), w, 0, h, TJPF_RGB, TJFLAG_ACCURATEDCT) != 0 &&
      tjGetErrorCode(tj.get()) == TJERR_FATAL)
    return Status::invalid(path + ": corrupt JPEG (" + tjGetErrorStr2(tj.get()) + ")");
  return img;
}

Result<Image> decode_png(const std::string& bytes, const std::string& path) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
    return Status::invalid(path + ": not a readable PNG (" + png.message + ")");
  Status st = check_pixels(png.width, png.height, path, "PNG");
  if (!st.ok()) {
    png_image_free(&png);
    return st;
  }
  png.format = PNG_FORMAT_RGB;  // gray, palette and alpha converted; 16-bit reduced
  Image img;
  img.width = static_cast<int>(png.width);
  img.height = static_cast<int>(png.height);
  img.rgb.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, img.rgb.data(), 0, nullptr))
    return Status::invalid(path + ": corrupt PNG (" + png.message + ")");
  return img;
}

}  // namespace

bool is_image_path(const std::string& path) {
  std::string e = lower_ext(path);
  return e == ".jpg" || e == ".jpeg" || e == ".png";
}

Result<Image> decode_image(const std::string& path) {
  ReadOnlyFile f;
  FERRY_RETURN_IF_ERROR(f.open(path));
  if (f.size() > kMaxFileBytes) return Status::invalid(path + ": over 1 GiB, not an image this reads");
  std::string bytes(f.size(), '\0');
  FERRY_RETURN_IF_ERROR(f.read_at(0, bytes.data(), bytes.size(), "image"));
  auto starts = [&](const char* sig, size_t n) { return bytes.size() >= n && bytes.compare(0, n, sig, n) == 0; };
  if (starts("\xFF\xD8\xFF", 3)) return decode_jpeg(bytes, path);
  if (starts("\x89PNG\r\n\x1a\n", 8)) return decode_png(bytes, path);
  return Status::invalid(path + ": neither a JPEG nor a PNG (by its first bytes)");
}

Image resize_shorter(const Image& img, int shorter) {
  const int h = img.height, w = img.width;
  int oh, ow;
  if (h <= w) {
    oh = shorter;
    ow = static_cast<int>(std::lround(static_cast<double>(w) * shorter / h));
  } else {
    ow = shorter;
    oh = static_cast<int>(std::lround(static_cast<double>(h) * shorter / w));
  }
  ow = std::max(ow, 1);
  oh = std::max(oh, 1);
  if (oh == h && ow == w) return img;
  // Per output column: the two source columns and the weight of the second (half-pixel centers,
  // clamped at the borders).
  struct Tap {
    int i0, i1;
    float f;
  };
  auto taps = [](int out, int in) {
    std::vector<Tap> t(out);
    const double scale = static_cast<double>(in) / out;
    for (int o = 0; o < out; ++o) {
      double x = std::max((o + 0.5) * scale - 0.5, 0.0);
      int i0 = std::min(static_cast<int>(x), in - 1);
      int i1 = std::min(i0 + 1, in - 1);
      t[o] = {i0, i1, static_cast<float>(x - i0)};
    }
    return t;
  };
  const std::vector<Tap> tx = taps(ow, w), ty = taps(oh, h);
  Image out;
  out.height = oh;
  out.width = ow;
  out.rgb.resize(static_cast<size_t>(oh) * ow * 3);
  std::vector<float> row0(static_cast<size_t>(ow) * 3), row1(static_cast<size_t>(ow) * 3);
  auto hpass = [&](int y, std::vector<float>& row) {
    const uint8_t* src = img.rgb.data() + static_cast<size_t>(y) * w * 3;
    for (int o = 0; o < ow; ++o)
      for (int c = 0; c < 3; ++c) {
        float a = src[tx[o].i0 * 3 + c], b = src[tx[o].i1 * 3 + c];
        row[o * 3 + c] = a + (b - a) * tx[o].f;
      }
  };
  for (int o = 0; o < oh; ++o) {
    hpass(ty[o].i0, row0);
    hpass(ty[o].i1, row1);
    uint8_t* dst = out.rgb.data() + static_cast<size_t>(o) * ow * 3;
    for (int i = 0; i < ow * 3; ++i) {
      float v = row0[i] + (row1[i] - row0[i]) * ty[o].f;
      dst[i] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
    }
  }
  return out;
}

Result<Image> center_crop(const Image& img, int height, int width, const std::string& label) {
  if (img.height < height || img.width < width)
    return Status::invalid(label + ": " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                           " is smaller than the " + std::to_string(width) + "x" + std::to_string(height) +
                           " crop (resize first: resize=N in --preprocess)");
  // torchvision: int(round((H - h) / 2.0)), Python's round is half to even.
  auto offset = [](int in, int out) { return static_cast<int>(std::nearbyint((in - out) / 2.0)); };
  const int top = offset(img.height, height), left = offset(img.width, width);
  Image out;
  out.height = height;
  out.width = width;
  out.rgb.resize(static_cast<size_t>(height) * width * 3);
  for (int y = 0; y < height; ++y)
    std::copy_n(img.rgb.data() + (static_cast<size_t>(top + y) * img.width + left) * 3, static_cast<size_t>(width) * 3,
                out.rgb.data() + static_cast<size_t>(y) * width * 3);
  return out;
}

Result<std::string> encode_png(const Image& img) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(img.width);
  png.height = static_cast<png_uint_32>(img.height);
  png.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, img.rgb.data(), 0, nullptr))
    return Status::internal(std::string("PNG encoding failed: ") + png.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, img.rgb.data(), 0, nullptr))
    return Status::internal(std::string("PNG encoding failed: ") + png.message);
  out.resize(size);
  return out;
}

}  // namespace ferry::tools::evaluate
