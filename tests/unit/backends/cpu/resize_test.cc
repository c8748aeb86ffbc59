// The cpu backend's Resize / Upsample against the reference kernel across modes, coordinate modes,
// nearest modes, antialias, roi with extrapolation, scales and sizes; and that the cpu kernel runs.
#include <gtest/gtest.h>

#include "unit/backends/cpu/conv_test_util.h"

namespace ferry::backends::cpu::testing {
namespace {

struct ResizeCase {
  std::string name;
  std::vector<int64_t> x;
  Attrs attrs;
  std::vector<float> scales;    // empty: sizes
  std::vector<int64_t> sizes;
  std::vector<float> roi;       // tf_crop_and_resize
  int opset = 19;
  std::string op = "Resize";
};

void PrintTo(const ResizeCase& c, std::ostream* os) { *os << c.name; }

class CpuResizeCases : public ::testing::TestWithParam<ResizeCase> {};

TEST_P(CpuResizeCases, MatchesReference) {
  const ResizeCase& c = GetParam();
  GraphBuilder g;
  std::vector<ir::Value*> ins{g.input("x", c.x)};
  const int64_t n = static_cast<int64_t>(c.scales.empty() ? c.sizes.size() : c.scales.size());
  if (c.op == "Upsample") {
    ins.push_back(g.constant(Tensor::from_vector<float>(c.scales, {n})));
  } else {
    ins.push_back(c.roi.empty() ? nullptr : g.constant(Tensor::from_vector<float>(c.roi, {2 * n})));
    ins.push_back(c.scales.empty() ? nullptr : g.constant(Tensor::from_vector<float>(c.scales, {n})));
    if (!c.sizes.empty()) ins.push_back(g.constant(Tensor::from_vector<int64_t>(c.sizes, {n})));
  }
  g.output(g.node(c.op, ins, c.attrs, c.opset));
  ir::Graph& graph = g.finish();
  auto backend = make_backend("cpu");
  ASSERT_TRUE((*backend)->supports(*graph.nodes[0]));
  auto k = (*backend)->create_kernel(*graph.nodes[0]);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ((*k)->name(), "cpu:resize");
  Tensor x = random_tensor(c.x, 3);
  auto cpu = run_graph(graph, "cpu", {x});
  auto ref = run_graph(graph, "reference", {x});
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  expect_close((*cpu)[0], (*ref)[0], 1e-5f, c.name);
}

Attrs mode(const std::string& m, const std::string& coord, const std::string& nearest = "round_prefer_floor") {
  return {{"mode", string_attr(m)}, {"coordinate_transformation_mode", string_attr(coord)},
          {"nearest_mode", string_attr(nearest)}};
}

INSTANTIATE_TEST_SUITE_P(
    Resize, CpuResizeCases,
    ::testing::Values(
        // A detector's 2x nearest upsampling (asymmetric, floor), and the default nearest mode.
        ResizeCase{"nearest_x2_asymmetric_floor", {1, 8, 10, 12}, mode("nearest", "asymmetric", "floor"), {1, 1, 2, 2}},
        ResizeCase{"nearest_half_pixel_down", {2, 3, 9, 7}, mode("nearest", "half_pixel"), {1, 1, 0.5f, 0.7f}},
        ResizeCase{"nearest_ceil_sizes", {1, 2, 5, 6}, mode("nearest", "asymmetric", "ceil"), {}, {1, 2, 11, 13}},
        ResizeCase{"linear_half_pixel_up", {1, 4, 7, 9}, mode("linear", "half_pixel"), {1, 1, 1.75f, 2.5f}},
        ResizeCase{"linear_pytorch_half_pixel", {1, 3, 8, 8}, mode("linear", "pytorch_half_pixel"), {}, {1, 3, 1, 15}},
        ResizeCase{"linear_align_corners", {2, 2, 6, 5}, mode("linear", "align_corners"), {1, 1, 2, 3}},
        ResizeCase{"cubic_half_pixel", {1, 2, 6, 7}, mode("cubic", "half_pixel"), {1, 1, 1.5f, 0.8f}},
        ResizeCase{"linear_antialias_down",
                   {1, 3, 16, 12},
                   [] {
                     Attrs a = mode("linear", "half_pixel");
                     a["antialias"] = int_attr(1);
                     return a;
                   }(),
                   {1, 1, 0.4f, 0.5f}},
        ResizeCase{"tf_crop_and_resize_extrapolation",
                   {1, 1, 6, 6},
                   [] {
                     Attrs a = mode("linear", "tf_crop_and_resize");
                     a["extrapolation_value"] = float_attr(-3.f);
                     return a;
                   }(),
                   {},
                   {1, 1, 5, 7},
                   {0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f}},
        ResizeCase{"linear_1d_last_axis", {3, 17}, mode("linear", "asymmetric"), {1, 2.5f}},
        // The last axis upsampled runs first (the others' passes then write the output): a segmentation
        // head's 8x bilinear upsampling, cubic taps up on both axes, trilinear on three.
        ResizeCase{"linear_x8_segmentation_head", {2, 3, 9, 9}, mode("linear", "half_pixel"), {1, 1, 8, 8}},
        ResizeCase{"cubic_up_both_axes", {1, 2, 5, 6}, mode("cubic", "half_pixel"), {1, 1, 2.5f, 3}},
        ResizeCase{"trilinear_up", {1, 2, 3, 4, 5}, mode("linear", "align_corners"), {1, 1, 2, 1.5f, 3}},
        ResizeCase{"upsample9_nearest", {1, 2, 3, 4}, {{"mode", string_attr("nearest")}}, {1, 1, 2, 3}, {}, {}, 9,
                   "Upsample"}),
    [](const ::testing::TestParamInfo<ResizeCase>& i) { return i.param.name; });

}  // namespace
}  // namespace ferry::backends::cpu::testing
