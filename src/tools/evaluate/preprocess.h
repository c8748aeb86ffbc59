// Preprocessing as data (the AIPP-like step every deployment needs): a spec string such as
//   "resize=256,crop=224,order=rgb,scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225,layout=nchw"
// or a preset ("imagenet", the line above) with overrides ("imagenet,crop=160"), or a JSON file with the
// same keys. Geometry (resize, crop) runs on 8-bit pixels on the host; the per-pixel part
//   y[c] = (x[order(c)] * scale - mean[c]) / std[c]   (float32, then the layout and dtype asked for)
// runs on the host or, with `ferry compile --preprocess`, inside the model as graph nodes, so the deployed
// model takes the uint8 NHWC image; both do the same float operations in the same order.
#pragma once
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "tools/evaluate/image.h"

namespace ferry::tools::evaluate {

struct PreprocessSpec {
  int resize = 0;                    // shorter side after resize (0: none)
  int crop_height = 0, crop_width = 0;  // center crop (0: none)
  bool bgr = false;                  // channel order the model wants (images decode as RGB)
  float scale = 1.0f;                // applied before mean/std (1/255 maps 8-bit to [0, 1])
  std::vector<float> mean, std;      // per channel (3), or one value for all; empty: none
  bool nchw = true;                  // layout of the tensor given to the model
  DType dtype = DType::kFloat32;         // its dtype (u8: the 8-bit pixels as they are, no arithmetic)
  std::string text;                  // the spec as given, for reports
};

// Parses a spec (see above). Keys: resize, crop (N or HxW), order (rgb|bgr), scale (number or a/b),
// mean, std (':'-separated, 1 or 3 values), layout (nchw|nhwc), dtype (float32|float16|uint8); presets:
// imagenet. A value that is a readable *.json file is read as an object with those keys. Errors name
// the key and say what is allowed.
Result<PreprocessSpec> parse_preprocess(const std::string& spec);
// The canonical "key=value,..." form of a spec (what reports print and what parse_preprocess reads back).
std::string describe(const PreprocessSpec& s);

// Resize and crop as the spec says (no-ops when it says none). `label` names the sample in errors.
Result<Image> apply_geometry(const Image& img, const PreprocessSpec& s, const std::string& label);
// The per-pixel part: the model's input tensor for one image, [1, 3, H, W] (nchw) or [1, H, W, 3].
Result<Tensor> image_to_tensor(const Image& img, const PreprocessSpec& s);
// The 8-bit image as [1, H, W, 3] uint8: what a model compiled with --preprocess takes.
Result<Tensor> image_to_uint8_nhwc(const Image& img);
// Whether a model input is such an image (uint8, rank 4, 3 channels last).
bool takes_uint8_image(DType dtype, const std::vector<int64_t>& dims);

// `ferry compile --preprocess`: the per-pixel part of `s` as nodes in front of the model's one input, which
// becomes uint8 [N, H, W, 3] under the same name; the spec is kept in the model's metadata
// ("ferry.preprocess"). Errors name the input and say what it should be.
Status insert_preprocess(ir::Model& m, const PreprocessSpec& s);

}  // namespace ferry::tools::evaluate
