// TfIdfVectorizer (opset 9): counts the pool's n-grams (with skips) in each row of an integer input
// and weights the counts (TF, IDF or TFIDF). The pool is loaded into a trie keyed by token, as the
// reference does, so an n-gram's id is found by walking its tokens. ferry has no string tensors, so
// only pool_int64s with int32/int64 input is supported.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ops/op.h"

namespace ferry::ops {
namespace {

struct TrieNode {
  int64_t id = 0;  // 1-based n-gram id; 0: not the end of a pool n-gram
  std::map<int64_t, int> children;  // token -> index into Vectorizer::nodes
};

enum class Weighting { kTF, kIDF, kTFIDF };

struct Vectorizer {
  std::vector<TrieNode> nodes{TrieNode{}};  // nodes[0] is the root
  std::vector<int64_t> ngram_indexes;
  std::vector<float> weights;
  int64_t output_size = 0;
  int64_t min_gram = 0, max_gram = 0, max_skip = 0;
  Weighting weighting = Weighting::kTF;
};

int child_of(Vectorizer& v, int node, int64_t token) {
  auto it = v.nodes[node].children.find(token);
  if (it != v.nodes[node].children.end()) return it->second;
  v.nodes.emplace_back();
  const int idx = static_cast<int>(v.nodes.size()) - 1;
  v.nodes[node].children[token] = idx;
  return idx;
}

Result<Vectorizer> build_vectorizer(const ir::Node& node) {
  if (node.has_attr("pool_strings"))
    return Status::unsupported("TfIdfVectorizer with pool_strings needs string tensors, which ferry does not support");
  for (const char* required : {"mode", "ngram_indexes", "ngram_counts", "max_skip_count", "min_gram_length", "max_gram_length"})
    if (!node.has_attr(required)) return Status::invalid(std::string("attribute '") + required + "' is required");
  Vectorizer v;
  const std::string mode = node.attr_string("mode", "");
  if (mode == "TF") v.weighting = Weighting::kTF;
  else if (mode == "IDF") v.weighting = Weighting::kIDF;
  else if (mode == "TFIDF") v.weighting = Weighting::kTFIDF;
  else return Status::invalid("mode must be 'TF', 'IDF' or 'TFIDF'; got '" + mode + "'");
  v.min_gram = node.attr_int("min_gram_length", 0);
  v.max_gram = node.attr_int("max_gram_length", 0);
  v.max_skip = node.attr_int("max_skip_count", 0);
  if (v.min_gram < 1 || v.max_gram < v.min_gram)
    return Status::invalid("need 1 <= min_gram_length <= max_gram_length; got " + std::to_string(v.min_gram) + " and " +
                           std::to_string(v.max_gram));
  if (v.max_skip < 0) return Status::invalid("max_skip_count must be >= 0; got " + std::to_string(v.max_skip));
  v.ngram_indexes = node.attr_ints("ngram_indexes");
  if (v.ngram_indexes.empty()) return Status::invalid("ngram_indexes is empty");
  for (int64_t idx : v.ngram_indexes)
    if (idx < 0) return Status::invalid("ngram_indexes holds a negative index " + std::to_string(idx));
  v.output_size = *std::max_element(v.ngram_indexes.begin(), v.ngram_indexes.end()) + 1;
  v.weights = node.attr_floats("weights");
  if (!v.weights.empty() && static_cast<int64_t>(v.weights.size()) < v.output_size)
    return Status::invalid("weights has " + std::to_string(v.weights.size()) + " values for an output of " +
                           std::to_string(v.output_size));

  const std::vector<int64_t> pool = node.attr_ints("pool_int64s");
  const std::vector<int64_t> counts = node.attr_ints("ngram_counts");
  const int64_t total = static_cast<int64_t>(pool.size());
  int64_t ngram_id = 1;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t ngram_size = static_cast<int64_t>(i) + 1;
    const int64_t start = counts[i];
    const int64_t end = i + 1 < counts.size() ? counts[i + 1] : total;
    if (start < 0 || end < start || end > total)
      return Status::invalid("ngram_counts " + std::to_string(start) + ".." + std::to_string(end) +
                             " is not an increasing range inside the pool of " + std::to_string(total));
    const int64_t ngrams = (end - start) / ngram_size;
    if (ngram_size < v.min_gram || ngram_size > v.max_gram) {
      ngram_id += ngrams;  // ids still count the n-grams of sizes that are not extracted
      continue;
    }
    int64_t pos = start;
    for (int64_t g = 0; g < ngrams; ++g) {
      int cur = 0;
      for (int64_t n = 1; n <= ngram_size; ++n) cur = child_of(v, cur, pool[pos++]);
      v.nodes[cur].id = ngram_id++;
    }
  }
  if (ngram_id - 1 > static_cast<int64_t>(v.ngram_indexes.size()))
    return Status::invalid("the pool holds " + std::to_string(ngram_id - 1) + " n-grams but ngram_indexes only " +
                           std::to_string(v.ngram_indexes.size()));
  return v;
}

// Adds the n-gram counts of the row x[begin, begin + len) to freq (that row of the output).
void count_row(const Vectorizer& v, const std::vector<int64_t>& x, int64_t begin, int64_t len, int64_t* freq) {
  int64_t start_size = v.min_gram;
  for (int64_t skip = 1; skip <= v.max_skip + 1; ++skip) {
    for (int64_t start = 0; start < len; ++start) {
      if (start + skip * (start_size - 1) >= len) break;  // no n-gram of a wanted size fits any more
      int cur = 0;
      int64_t item = start;
      for (int64_t size = 1; size <= v.max_gram && item < len; ++size, item += skip) {
        const auto& children = v.nodes[cur].children;
        auto it = children.find(x[begin + item]);
        if (it == children.end()) break;
        cur = it->second;
        const int64_t id = v.nodes[cur].id;
        if (size >= start_size && id != 0) ++freq[v.ngram_indexes[id - 1]];
      }
    }
    // Unigrams do not depend on the skip distance: count them once.
    if (start_size == 1) {
      ++start_size;
      if (start_size > v.max_gram) break;
    }
  }
}

Status tfidf_kernel(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.input_value(0)->is_tensor()) return Status::invalid("input X must be a tensor");
  FERRY_ASSIGN_OR_RETURN(Vectorizer v, build_vectorizer(ctx.node()));
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kInt32 && x.dtype() != DType::kInt64)
    return Status::unsupported("TfIdfVectorizer takes int32 or int64 input (string input is not supported); got " +
                               x.describe());
  if (x.rank() > 2) return Status::invalid("input must be [C] or [N, C]; got " + x.describe());
  const bool batched = x.rank() == 2;
  const int64_t rows = batched ? x.dim(0) : 1;
  const int64_t len = x.rank() == 0 ? 1 : x.dim(-1);
  if (batched && rows < 1) return Status::invalid("input [N, C] needs N > 0; got " + x.describe());
  std::vector<int64_t> out_dims = batched ? std::vector<int64_t>{rows, v.output_size} : std::vector<int64_t>{v.output_size};
  FERRY_ASSIGN_OR_RETURN(int64_t out_numel, checked_numel(out_dims));
  FERRY_ASSIGN_OR_RETURN(Tensor y, Tensor::create(DType::kFloat32, out_dims));
  std::vector<int64_t> freq(static_cast<size_t>(out_numel), 0);
  const std::vector<int64_t> tokens = x.to_int64_vector();
  for (int64_t r = 0; r < rows; ++r) count_row(v, tokens, r * len, len, freq.data() + r * v.output_size);
  float* py = y.data<float>();
  for (int64_t p = 0; p < out_numel; ++p) {
    const int64_t col = p % v.output_size;
    const float f = static_cast<float>(freq[p]);
    switch (v.weighting) {
      case Weighting::kTF: py[p] = f; break;
      case Weighting::kIDF:
        py[p] = freq[p] > 0 ? (v.weights.empty() ? 1.0f : v.weights[col]) : 0.0f;
        break;
      case Weighting::kTFIDF: py[p] = v.weights.empty() ? f : v.weights[col] * f; break;
    }
  }
  ctx.set_output(0, std::move(y));
  return Status();
}

Status tfidf_infer(InferContext& ctx) {
  const std::vector<int64_t> idx = ctx.node().attr_ints("ngram_indexes");
  Dim size;
  if (!idx.empty()) size = Dim(*std::max_element(idx.begin(), idx.end()) + 1);
  std::optional<Shape> shape;
  const int rank = ctx.input_rank(0);
  if (rank == 0 || rank == 1) shape = Shape{size};
  else if (rank == 2) shape = Shape{(**ctx.input_shape(0))[0], size};
  ctx.set_output(0, DType::kFloat32, shape);
  return Status();
}

}  // namespace

void register_tfidf_vectorizer(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "TfIdfVectorizer",
      .since_version = 9,
      .min_inputs = 1,
      .max_inputs = 1,
      .infer = tfidf_infer,
      .kernel = tfidf_kernel,
  });
}

}  // namespace ferry::ops
