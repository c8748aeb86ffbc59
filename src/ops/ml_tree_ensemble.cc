// TreeEnsemble (ai.onnx.ml 5): evaluates an ensemble of decision trees on X [N, F] and aggregates the
// leaf weights per target into Y [N, n_targets], then applies post_transform. Interior nodes are the
// nodes_* tuples; a branch points either at another node or (when nodes_*leafs says so) at a leaf_*
// tuple. The tables are validated up front so evaluation cannot index out of range or loop forever.
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops {
namespace {

enum Mode : int64_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember };
enum Aggregate : int64_t { kAverage = 0, kSum, kMin, kMax };
enum PostTransform : int64_t { kNone = 0, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

struct Ensemble {
  std::vector<int64_t> features, modes, true_ids, false_ids, true_leaf, false_leaf, missing_true, roots, leaf_targets;
  std::vector<double> splits, leaf_weights;
  std::vector<std::set<double>> members;  // per node; filled for BRANCH_MEMBER nodes
  int64_t n_targets = 0;
  int64_t aggregate = kSum, post = kNone;
};

Result<Ensemble> read_ensemble(const ir::Node& node) {
  Ensemble e;
  for (const char* required : {"tree_roots", "nodes_modes", "nodes_featureids", "nodes_splits", "nodes_truenodeids",
                               "nodes_trueleafs", "nodes_falsenodeids", "nodes_falseleafs", "leaf_targetids",
                               "leaf_weights"})
    if (!node.has_attr(required)) return Status::invalid(std::string("attribute '") + required + "' is required");
  const Tensor* modes = node.attr_tensor("nodes_modes");
  const Tensor* splits = node.attr_tensor("nodes_splits");
  const Tensor* weights = node.attr_tensor("leaf_weights");
  if (!modes || !splits || !weights) return Status::invalid("nodes_modes, nodes_splits and leaf_weights must be tensors");
  e.modes = modes->to_int64_vector();
  e.splits = splits->to_double_vector();
  e.leaf_weights = weights->to_double_vector();
  e.features = node.attr_ints("nodes_featureids");
  e.true_ids = node.attr_ints("nodes_truenodeids");
  e.false_ids = node.attr_ints("nodes_falsenodeids");
  e.true_leaf = node.attr_ints("nodes_trueleafs");
  e.false_leaf = node.attr_ints("nodes_falseleafs");
  e.roots = node.attr_ints("tree_roots");
  e.leaf_targets = node.attr_ints("leaf_targetids");
  const size_t n = e.modes.size();
  e.missing_true = node.attr_ints("nodes_missing_value_tracks_true", std::vector<int64_t>(n, 0));
  for (const auto* v : {&e.features, &e.true_ids, &e.false_ids, &e.true_leaf, &e.false_leaf, &e.missing_true})
    if (v->size() != n) return Status::invalid("all nodes_* attributes must have " + std::to_string(n) + " entries");
  if (e.splits.size() != n) return Status::invalid("nodes_splits must have " + std::to_string(n) + " entries");
  const size_t n_leaves = e.leaf_targets.size();
  if (e.leaf_weights.size() != n_leaves)
    return Status::invalid("leaf_weights and leaf_targetids must have the same length");
  if (e.roots.empty()) return Status::invalid("tree_roots is empty");

  int64_t max_target = -1;
  for (int64_t t : e.leaf_targets) {
    if (t < 0) return Status::invalid("leaf_targetids holds a negative target " + std::to_string(t));
    max_target = std::max(max_target, t);
  }
  e.n_targets = node.attr_int("n_targets", max_target + 1);
  if (e.n_targets <= max_target)
    return Status::invalid("leaf target " + std::to_string(max_target) + " is out of range for n_targets " +
                           std::to_string(e.n_targets));
  e.aggregate = node.attr_int("aggregate_function", kSum);
  if (e.aggregate < kAverage || e.aggregate > kMax)
    return Status::invalid("aggregate_function must be 0..3; got " + std::to_string(e.aggregate));
  e.post = node.attr_int("post_transform", kNone);
  if (e.post < kNone || e.post > kProbit) return Status::invalid("post_transform must be 0..4; got " + std::to_string(e.post));

  for (size_t i = 0; i < n; ++i) {
    if (e.modes[i] < kLeq || e.modes[i] > kMember)
      return Status::invalid("nodes_modes[" + std::to_string(i) + "] = " + std::to_string(e.modes[i]) + " is not 0..6");
    if (e.features[i] < 0) return Status::invalid("nodes_featureids[" + std::to_string(i) + "] is negative");
    for (int side = 0; side < 2; ++side) {
      const int64_t id = side ? e.false_ids[i] : e.true_ids[i];
      const bool leaf = side ? e.false_leaf[i] : e.true_leaf[i];
      const size_t limit = leaf ? n_leaves : n;
      if (id < 0 || static_cast<size_t>(id) >= limit)
        return Status::invalid(std::string(side ? "nodes_falsenodeids[" : "nodes_truenodeids[") + std::to_string(i) +
                               "] = " + std::to_string(id) + " is out of range for " + std::to_string(limit) +
                               (leaf ? " leaves" : " nodes"));
    }
  }
  for (int64_t r : e.roots)
    if (r < 0 || static_cast<size_t>(r) >= n)
      return Status::invalid("tree root " + std::to_string(r) + " is out of range for " + std::to_string(n) + " nodes");

  // Set members: one NaN-terminated run of membership_values per BRANCH_MEMBER node, in node order.
  e.members.resize(n);
  std::vector<double> values;
  if (const Tensor* mv = node.attr_tensor("membership_values")) values = mv->to_double_vector();
  size_t pos = 0;
  for (size_t i = 0; i < n; ++i) {
    if (e.modes[i] != kMember) continue;
    for (; pos < values.size() && !std::isnan(values[pos]); ++pos) e.members[i].insert(values[pos]);
    if (pos >= values.size())
      return Status::invalid("membership_values must hold one NaN-terminated set per BRANCH_MEMBER node");
    ++pos;  // the NaN
  }
  if (pos != values.size()) return Status::invalid("membership_values has more sets than BRANCH_MEMBER nodes");
  return e;
}

bool goes_true(const Ensemble& e, size_t i, double x) {
  if (std::isnan(x) && e.missing_true[i]) return true;
  const double s = e.splits[i];
  switch (e.modes[i]) {
    case kLeq: return x <= s;
    case kLt: return x < s;
    case kGte: return x >= s;
    case kGt: return x > s;
    case kEq: return x == s;
    case kNeq: return x != s;
    default: return e.members[i].count(x) != 0;
  }
}

// The leaf a sample reaches in the tree rooted at `root`.
Result<int64_t> find_leaf(const Ensemble& e, int64_t root, const double* x, int64_t n_features) {
  // A one-leaf tree is a node whose both branches name the same leaf.
  if (e.true_leaf[root] && e.false_leaf[root] && e.true_ids[root] == e.false_ids[root]) return e.true_ids[root];
  int64_t cur = root;
  for (size_t steps = 0; steps <= e.modes.size(); ++steps) {
    const int64_t f = e.features[cur];
    if (f >= n_features)
      return Status::invalid("nodes_featureids[" + std::to_string(cur) + "] = " + std::to_string(f) +
                             " is out of range for X with " + std::to_string(n_features) + " features");
    const bool t = goes_true(e, static_cast<size_t>(cur), x[f]);
    const int64_t next = t ? e.true_ids[cur] : e.false_ids[cur];
    if (t ? e.true_leaf[cur] : e.false_leaf[cur]) return next;
    cur = next;
  }
  return Status::invalid("the tree rooted at node " + std::to_string(root) + " has a cycle");
}

// Inverse error function: a rational first guess refined by Newton steps on std::erf.
double erfinv(double y) {
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  const double w = -std::log((1.0 - y) * (1.0 + y));
  double x = w < 5 ? y * (1.2533141373155 + 0.2 * w) / (1 + 0.1 * w) : (y < 0 ? -1 : 1) * std::sqrt(w - std::log(w));
  for (int i = 0; i < 40; ++i) {
    const double err = std::erf(x) - y;
    const double step = err / (1.1283791670955126 * std::exp(-x * x));  // erf'(x) = 2/sqrt(pi) e^(-x^2)
    x -= step;
    if (std::fabs(step) <= 1e-15 * std::max(1.0, std::fabs(x))) break;
  }
  return x;
}

void post_transform(int64_t post, double* row, int64_t n) {
  if (post == kNone) return;
  if (post == kLogistic) {
    for (int64_t j = 0; j < n; ++j) row[j] = 1.0 / (1.0 + std::exp(-row[j]));
  } else if (post == kProbit) {
    for (int64_t j = 0; j < n; ++j) row[j] = std::sqrt(2.0) * erfinv(2.0 * row[j] - 1.0);
  } else {
    // SOFTMAX, or SOFTMAX_ZERO where exact zeros stay zero (as in ONNX Runtime).
    const bool keep_zero = post == kSoftmaxZero;
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
    for (int64_t j = 0; j < n; ++j) {
      row[j] = keep_zero && row[j] == 0.0 ? 0.0 : std::exp(row[j] - mx);
      sum += row[j];
    }
    for (int64_t j = 0; j < n && sum > 0; ++j) row[j] /= sum;
  }
}

Status tree_ensemble_kernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.input_value(0)->is_tensor()) return Status::invalid("input X must be a tensor");
  FERRY_ASSIGN_OR_RETURN(Ensemble e, read_ensemble(ctx.node()));
  const Tensor& x = ctx.input(0);
  const DType dt = x.dtype();
  if (dt != DType::kFloat32 && dt != DType::kFloat64 && dt != DType::kFloat16)
    return Status::unsupported("TreeEnsemble takes float, double or float16; got " + x.describe());
  if (x.rank() != 2) return Status::invalid("X must be [N, F]; got " + x.describe());
  const int64_t rows = x.dim(0), n_features = x.dim(1), nt = e.n_targets;
  FERRY_ASSIGN_OR_RETURN(Tensor y, Tensor::create(DType::kFloat64, {rows, nt}));
  // MIN/MAX start from the extremes of X's dtype, so targets no leaf reaches keep them (as the reference).
  const double lowest = dt == DType::kFloat16 ? -65504.0 : dt == DType::kFloat32 ? -std::numeric_limits<float>::max()
                                                                                   : -std::numeric_limits<double>::max();
  const double init = e.aggregate == kMin ? -lowest : e.aggregate == kMax ? lowest : 0.0;
  const std::vector<double> xv = x.to_double_vector();
  double* py = y.data<double>();
  const double n_trees = static_cast<double>(e.roots.size());
  for (int64_t r = 0; r < rows; ++r) {
    double* row = py + r * nt;
    for (int64_t j = 0; j < nt; ++j) row[j] = init;
    for (int64_t root : e.roots) {
      FERRY_ASSIGN_OR_RETURN(int64_t leaf, find_leaf(e, root, xv.data() + r * n_features, n_features));
      const double w = e.leaf_weights[leaf];
      double& acc = row[e.leaf_targets[leaf]];
      switch (e.aggregate) {
        case kAverage: acc += w / n_trees; break;
        case kSum: acc += w; break;
        case kMin: acc = std::min(acc, w); break;
        default: acc = std::max(acc, w); break;
      }
    }
    post_transform(e.post, row, nt);
  }
  ctx.set_output(0, y.cast(dt));
  return Status();
}

Status tree_ensemble_infer(InferContext& ctx) {
  std::optional<Shape> shape;
  const std::optional<Shape>* xs = ctx.input_shape(0);
  if (xs && *xs && (*xs)->size() == 2) {
    Dim targets;
    if (ctx.node().has_attr("n_targets")) targets = Dim(ctx.node().attr_int("n_targets", 0));
    shape = Shape{(**xs)[0], targets};
  }
  ctx.set_output(0, ctx.input_dtype(0), shape);
  return Status();
}

}  // namespace

void register_ml_tree_ensemble(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "TreeEnsemble",
      .domain = "ai.onnx.ml",
      .since_version = 5,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = tree_ensemble_infer,
      .kernel = tree_ensemble_kernel,
  });
}

}  // namespace ferry::ops
