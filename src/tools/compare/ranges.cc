// --ranges: what each golden tensor's values would do in fp16 / bf16 storage, and the advisor that
// turns outputs, layers, ranges and non-finite tensors into a few sentences.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "tools/compare/compare_internal.h"

namespace ferry::tools::compare {

namespace {
constexpr double kFp16Max = 65504.0;
constexpr double kFp16MinNormal = 6.103515625e-05;  // 2^-14
const double kBf16Max = 3.3895313892515355e38;       // (2 - 2^-7) * 2^127
const double kBf16MinNormal = std::numeric_limits<float>::min();  // 2^-126, as fp32
}  // namespace

std::optional<RangeRow> range_of(const std::string& name, const Tensor& t) {
  if (!is_floating(t.dtype())) return std::nullopt;
  RangeRow r;
  r.tensor = name;
  r.count = t.numel();
  const std::vector<double> v = t.to_double_vector();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  int64_t over16 = 0, under16 = 0, overb = 0, underb = 0, nonzero = 0;
  for (double x : v) {
    if (!std::isfinite(x)) {
      ++r.nonfinite;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    const double a = std::abs(x);
    if (a > kFp16Max) ++over16;
    if (a > kBf16Max) ++overb;
    if (a != 0) {
      ++nonzero;
      if (a < kFp16MinNormal) ++under16;
      if (a < kBf16MinNormal) ++underb;
    }
  }
  if (r.count > r.nonfinite) {
    r.min = lo;
    r.max = hi;
    r.absmax = std::max(std::abs(lo), std::abs(hi));
  }
  if (r.count > 0) {
    r.fp16_overflow = static_cast<double>(over16) / r.count;
    r.bf16_overflow = static_cast<double>(overb) / r.count;
  }
  if (nonzero > 0) {
    r.fp16_underflow = static_cast<double>(under16) / nonzero;
    r.bf16_underflow = static_cast<double>(underb) / nonzero;
  }
  return r;
}

bool CompareReport::pass() const {
  for (const Row& o : outputs)
    if (!o.pass()) return false;
  return true;
}

void advise(CompareReport& r) {
  auto add = [&](std::string kind, std::string msg) { r.advisor.push_back({std::move(kind), std::move(msg)}); };
  std::map<std::string, const Row*> layer;
  for (const Row& l : r.layers) layer[l.tensor] = &l;

  // 1. Overflow / NaN: the first tensor that turns non-finite is where to look.
  if (!r.nonfinite_tensors.empty()) {
    const std::string& t = r.nonfinite_tensors.front();
    std::string where = t;
    if (auto it = layer.find(t); it != layer.end() && !it->second->onnx_node.empty())
      where = "'" + t + "' (ONNX node '" + it->second->onnx_node + "')";
    else
      where = "'" + t + "'";
    std::string why;
    if (r.first_nonfinite_golden_absmax && *r.first_nonfinite_golden_absmax > kFp16Max)
      why = fmt::format(": its golden values reach {:.6g}, beyond fp16's largest finite value 65504 — keep that node "
                        "in fp32 (--keep-fp32) or rescale it",
                        *r.first_nonfinite_golden_absmax);
    else if (r.first_nonfinite_golden_absmax)
      why = fmt::format(" (its golden values are finite, absmax {:.6g})", *r.first_nonfinite_golden_absmax);
    add("overflow", fmt::format("overflow/NaN: {} is the first tensor with NaN or Inf in the candidate{}{}", where, why,
                                r.nonfinite_tensors.size() > 1
                                    ? fmt::format("; {} tensor(s) after it inherit it", r.nonfinite_tensors.size() - 1)
                                    : ""));
  }
  for (const std::string& t : r.fp16_overflow)
    if (r.nonfinite_tensors.empty() || t != r.nonfinite_tensors.front())
      add("range", "range: '" + t + "' exceeds the fp16 range (|x| > 65504) on these inputs; it would overflow in fp16");

  const bool outputs_pass = r.pass();
  if (r.first_divergent) {
    const Row& fd = r.layers[*r.first_divergent];
    const std::string node = fd.onnx_node.empty() ? fd.tensor : fd.onnx_node;
    if (r.single_op && fd.single_op) {
      if (!fd.single_op->pass)
        add("own-error", fmt::format("'{}' has an error of its own (single-op cos {:.6f}, relE {:.4g})", node,
                                     fd.single_op->cosine, fd.single_op->rel_euclid));
      else
        add("inherited", fmt::format("'{}' passes on golden inputs (single-op cos {:.6f}): its error is accumulated "
                                     "from small errors upstream, not its own",
                                     node, fd.single_op->cosine));
      int inherited = 0, own = 0;
      for (size_t i = *r.first_divergent + 1; i < r.layers.size(); ++i) {
        const Row& l = r.layers[i];
        if (l.pass() || !l.single_op) continue;
        (l.single_op->pass ? inherited : own)++;
      }
      if (inherited + own > 0)
        add("inherited", fmt::format("after it, {} failing tensor(s) only inherit the error (they pass single-op) and "
                                     "{} have an error of their own",
                                     inherited, own));
    }
    if (!outputs_pass && r.divergence_span)  // the candidate lacks the tensors that would tell these nodes apart
      add("accumulated", "accumulated error: " + describe_span(*r.divergence_span) +
                             "; the error reaches the outputs: start with these nodes, not only the last");
    else if (!outputs_pass)
      add("accumulated", "accumulated error: the first divergent node is '" + node +
                             "' (topological order) and the error reaches the outputs; start there");
    else
      add("single-point", "single-point error at '" + node +
                              "': an intermediate diverges but every output stays within thresholds, so the error "
                              "does not reach the outputs at a level that matters (intermediate deviations are "
                              "informative; the outputs decide)");
  } else if (!outputs_pass) {
    if (r.layerwise)
      add("outputs", "the outputs diverge although every compared intermediate passes: look at the nodes whose tensors "
                     "are not compared (fused internals) or at the output nodes");
    else
      add("outputs", "the outputs diverge: rerun with --layerwise to find the first divergent node");
  } else if (r.nonfinite_tensors.empty()) {
    add("ok", "all outputs" + std::string(r.layerwise ? " and compared tensors" : "") +
                  " are within thresholds; if accuracy still drops in the application, check pre/post-processing");
  }
}

}  // namespace ferry::tools::compare
