// NonMaxSuppression: per batch and class, greedily selects boxes by descending score (ties: lower box
// index first) that have score > score_threshold (when given) and IoU <= iou_threshold with every box
// already selected, up to max_output_boxes_per_class (0 when absent). Boxes are [y1, x1, y2, x2] (corners
// in any order) or, with center_point_box = 1, [x_center, y_center, width, height]. The IoU is computed in
// float as the reference does. Output: int64 [num_selected, 3] of (batch, class, box).
#include <algorithm>
#include <numeric>

#include "ops/util/nn_common.h"

namespace ferry::ops {

namespace {
struct Extent {
  float x_min, x_max, y_min, y_max;
};

Extent extent_of(const float* b, bool center) {
  if (center) {
    const float hw = b[2] / 2, hh = b[3] / 2;
    return {b[0] - hw, b[0] + hw, b[1] - hh, b[1] + hh};
  }
  return {std::min(b[1], b[3]), std::max(b[1], b[3]), std::min(b[0], b[2]), std::max(b[0], b[2])};
}

bool suppresses(const float* a, const float* b, bool center, float iou_threshold) {
  const Extent e1 = extent_of(a, center), e2 = extent_of(b, center);
  const float ix_min = std::max(e1.x_min, e2.x_min), ix_max = std::min(e1.x_max, e2.x_max);
  if (ix_max <= ix_min) return false;
  const float iy_min = std::max(e1.y_min, e2.y_min), iy_max = std::min(e1.y_max, e2.y_max);
  if (iy_max <= iy_min) return false;
  const float inter = (ix_max - ix_min) * (iy_max - iy_min);
  if (inter <= 0) return false;
  const float a1 = (e1.x_max - e1.x_min) * (e1.y_max - e1.y_min), a2 = (e2.x_max - e2.x_min) * (e2.y_max - e2.y_min);
  const float uni = a1 + a2 - inter;
  if (a1 <= 0 || a2 <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

Status nms_kernel(KernelContext& ctx) {
  FERRY_ASSIGN_OR_RETURN(const Tensor* boxes, nn::tensor_in(ctx, 0, "boxes"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* scores, nn::tensor_in(ctx, 1, "scores"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* max_t, nn::optional_tensor_in(ctx, 2, "max_output_boxes_per_class"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* iou_t, nn::optional_tensor_in(ctx, 3, "iou_threshold"));
  FERRY_ASSIGN_OR_RETURN(const Tensor* score_t, nn::optional_tensor_in(ctx, 4, "score_threshold"));
  if (boxes->dtype() != DType::kFloat32) return nn::bad_dtype(ctx, *boxes, "boxes");
  if (scores->dtype() != DType::kFloat32) return nn::bad_dtype(ctx, *scores, "scores");
  if (boxes->rank() != 3 || boxes->dim(2) != 4)
    return Status::invalid("NonMaxSuppression: boxes must be [batches, boxes, 4], got " + boxes->describe());
  if (scores->rank() != 3 || scores->dim(0) != boxes->dim(0) || scores->dim(2) != boxes->dim(1))
    return Status::invalid("NonMaxSuppression: scores " + scores->describe() + " must be [batches, classes, " +
                           std::to_string(boxes->dim(1)) + "]");
  const int64_t center = ctx.node().attr_int("center_point_box", 0);
  if (center != 0 && center != 1) return Status::invalid("NonMaxSuppression: center_point_box must be 0 or 1");
  int64_t max_out = 0;
  if (max_t && max_t->numel() > 0) max_out = std::max<int64_t>(0, max_t->as_int64(0));
  const float iou = iou_t && iou_t->numel() > 0 ? static_cast<float>(iou_t->as_double(0)) : 0.0f;
  const bool use_score = score_t && score_t->numel() > 0;
  const float score_thr = use_score ? static_cast<float>(score_t->as_double(0)) : 0.0f;
  const int64_t B = boxes->dim(0), K = scores->dim(1), NB = boxes->dim(1);
  const float* bd = boxes->data<float>();
  const float* sd = scores->data<float>();
  std::vector<int64_t> sel;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k) {
      const float* sc = sd + (b * K + k) * NB;
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < NB; ++i)
        if (!use_score || sc[i] > score_thr) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t i, int64_t j) { return sc[i] > sc[j]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool ok = true;
        for (int64_t j : kept)
          if (suppresses(bd + (b * NB + i) * 4, bd + (b * NB + j) * 4, center == 1, iou)) {
            ok = false;
            break;
          }
        if (!ok) continue;
        kept.push_back(i);
        sel.insert(sel.end(), {b, k, i});
      }
    }
  FERRY_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, DType::kInt64, {static_cast<int64_t>(sel.size() / 3), 3}));
  std::copy(sel.begin(), sel.end(), y->data<int64_t>());
  return Status();
}
}  // namespace

void register_non_max_suppression(OpRegistry& r) {
  r.add(OpSchema{.op_type = "NonMaxSuppression",
                 .since_version = 10,
                 .min_inputs = 2,
                 .max_inputs = 5,
                 .infer =
                     [](InferContext& ctx) {
                       ctx.set_output(0, DType::kInt64, Shape{Dim(), Dim(3)});
                       return Status();
                     },
                 .kernel = nms_kernel});
}

}  // namespace ferry::ops
