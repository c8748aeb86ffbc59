// Images for `ferry evaluate`: JPEG (libjpeg-turbo) and PNG (libpng) decoded to 8-bit RGB, and the
// geometric half of preprocessing (shorter-side resize, center crop) done on 8-bit pixels, as a camera
// pipeline or PIL does before the model sees the image. The per-pixel half (scale, mean/std, channel order,
// layout) is in preprocess.h: it can run here or inside the model (`ferry compile --preprocess`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ferry::tools::evaluate {

// Interleaved 8-bit RGB, row-major (HWC).
struct Image {
  int height = 0, width = 0;
  std::vector<uint8_t> rgb;  // height * width * 3
};

// Whether a file name has an image extension this reads (.jpg .jpeg .png, any case).
bool is_image_path(const std::string& path);

// Decodes a JPEG or PNG (chosen by the file's signature, not its name): grayscale and palette images are
// expanded to RGB, alpha dropped, 16-bit PNG reduced to 8. Errors name the file; images over
// 2^28 pixels are refused before decoding (a hostile header cannot make it allocate gigabytes).
Result<Image> decode_image(const std::string& path);

// Bilinear resize so the shorter side is `shorter` (the other side rounds to nearest, aspect kept),
// with half-pixel centers (ONNX Resize's half_pixel, OpenCV's INTER_LINEAR, torch's bilinear with
// align_corners=False and no antialiasing); results rounded to 8 bits. A no-op when already that size.
Image resize_shorter(const Image& img, int shorter);
// The centered height x width window (offsets rounded as torchvision's CenterCrop: (H - h) / 2 rounded
// half to even). Errors when the image is smaller than the crop.
Result<Image> center_crop(const Image& img, int height, int width, const std::string& label);

// Encodes as PNG in memory (for the report's thumbnails).
Result<std::string> encode_png(const Image& img);

}  // namespace ferry::tools::evaluate
