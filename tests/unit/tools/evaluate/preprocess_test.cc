// Preprocessing specs and the geometric steps: parsing (presets, overrides, JSON-free forms, errors that
// name the key), describe() round-tripping, center-crop offsets as torchvision's, the bilinear resize on a
// case worked by hand, and the per-pixel arithmetic.
#include <gtest/gtest.h>

#include "tools/evaluate/preprocess.h"

namespace ferry::tools::evaluate {
namespace {

TEST(Preprocess, PresetAndOverrides) {
  auto s = parse_preprocess("imagenet,crop=160");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->resize, 256);
  EXPECT_EQ(s->crop_height, 160);
  EXPECT_EQ(s->crop_width, 160);
  EXPECT_NEAR(s->scale, 1.0f / 255, 1e-9);
  ASSERT_EQ(s->mean.size(), 3u);
  EXPECT_FLOAT_EQ(s->std[2], 0.225f);
  auto again = parse_preprocess(describe(*s));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(describe(*again), describe(*s));
}

TEST(Preprocess, ErrorsNameTheKey) {
  for (auto [spec, needle] : {std::pair<const char*, const char*>{"resize=0", "resize=0"},
                              {"crop=10xq", "crop"},
                              {"mean=1:2", "mean=1:2"},
                              {"std=0", "divides by zero"},
                              {"order=gbr", "rgb or bgr"},
                              {"blur=3", "unknown key 'blur'"},
                              {"imagenet2", "preset"},
                              {"dtype=uint8,scale=1/255", "drop scale"},
                              {"scale=1/0", "scale"}}) {
    auto s = parse_preprocess(spec);
    ASSERT_FALSE(s.ok()) << spec;
    EXPECT_NE(s.status().message().find(needle), std::string::npos) << s.status().message();
  }
}

Image ramp(int h, int w) {
  Image img;
  img.height = h;
  img.width = w;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) img.rgb.push_back(static_cast<uint8_t>(10 * x + 100 * c + y));
  return img;
}

TEST(Preprocess, CenterCropOffsetsAsTorchvision) {
  // (5 - 2) / 2 = 1.5 rounds half to even: 2; (6 - 3) / 2 = 1.5: 2; (7 - 2) / 2 = 2.5: 2.
  Image img = ramp(5, 7);
  auto c = center_crop(img, 2, 2, "t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rgb[0], img.rgb[(2 * 7 + 2) * 3]);
  EXPECT_FALSE(center_crop(img, 6, 2, "t").ok());
}

TEST(Preprocess, BilinearResizeWithHalfPixelCenters) {
  // 1x4 row 0,10,20,30 upscaled to 2x8: x_in = (o + 0.5) / 2 - 0.5, clamped to [0, 3]; halves round away
  // from zero (2.5 -> 3).
  Image img = ramp(1, 4);
  Image out = resize_shorter(img, 2);
  ASSERT_EQ(out.height, 2);
  ASSERT_EQ(out.width, 8);
  const int want[8] = {0, 3, 8, 13, 18, 23, 28, 30};
  for (int o = 0; o < 8; ++o) EXPECT_EQ(out.rgb[o * 3], want[o]) << o;
  EXPECT_EQ(resize_shorter(img, 1).width, 4);  // already that size: unchanged
}

TEST(Preprocess, PixelArithmeticAndLayout) {
  auto s = parse_preprocess("order=bgr,scale=1/255,mean=0.5,std=0.25,layout=nchw");
  ASSERT_TRUE(s.ok());
  Image img = ramp(1, 2);  // pixel 0: (0, 100, 200), pixel 1: (10, 110, 210)
  auto t = image_to_tensor(img, *s);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->dims(), (std::vector<int64_t>{1, 3, 1, 2}));
  const float* d = t->data<float>();
  EXPECT_FLOAT_EQ(d[0], (200.0f * (1.0f / 255) - 0.5f) / 0.25f);  // channel 0 is blue
  EXPECT_FLOAT_EQ(d[1], (210.0f * (1.0f / 255) - 0.5f) / 0.25f);
  EXPECT_FLOAT_EQ(d[4], (0.0f * (1.0f / 255) - 0.5f) / 0.25f);
  EXPECT_TRUE(takes_uint8_image(DType::kUInt8, {1, 224, 224, 3}));
  EXPECT_FALSE(takes_uint8_image(DType::kFloat32, {1, 224, 224, 3}));
}

}  // namespace
}  // namespace ferry::tools::evaluate
