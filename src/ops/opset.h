// The newest ai.onnx opset ferry knows, in one place.
#pragma once

namespace ferry::ops {

// The newest ai.onnx opset whose ops ferry implements (SwiGLU, since 28, is the newest schema). A model
// importing a newer default-domain opset may use op versions whose meaning ferry does not know, and the
// open-ended schemas (until_version 1000) would run them as the old version: the importer refuses it.
// A unit test checks that no default-domain schema starts after it.
inline constexpr int kNewestOnnxOpset = 28;

}  // namespace ferry::ops
