// Einsum with numpy's semantics: any number of operands, letters a-z/A-Z as labels, one "..." per term
// (broadcast, right-aligned across operands), repeated labels within a term (diagonals), explicit
// ("->out") or implicit output (the ellipsis dims, then the labels used exactly once, in ASCII order).
// Labels left out of the output are summed over. Size-1 dims broadcast against the other operands.
//
// The kernel is the definition: for every combination of label values, add the product of the operand
// elements into the output element. Floats accumulate in double, integers in wrapping 64-bit arithmetic.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "ops/op.h"
#include "ops/util/broadcast.h"
#include "ops/util/reduce_util.h"

namespace ferry::ops {
namespace {

// Label ids: 0..51 for letters; ellipsis dims get ids from kEllipsisBase (dim 0 = outermost).
constexpr int kEllipsisBase = 64;

struct Term {
  std::vector<int> labels;  // per axis, after expanding "..." to the operand's ellipsis dims
};

struct ParsedEquation {
  std::vector<std::string> inputs;  // raw input terms (spaces removed)
  std::string output;               // raw output term
  bool explicit_output = false;
};

int letter_id(char c) { return std::islower(static_cast<unsigned char>(c)) ? 26 + (c - 'a') : c - 'A'; }
char id_letter(int id) { return id < 26 ? static_cast<char>('A' + id) : static_cast<char>('a' + id - 26); }

Result<ParsedEquation> parse_equation(const std::string& eq, int num_inputs) {
  std::string s;
  for (char c : eq)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  ParsedEquation p;
  std::string lhs = s;
  if (size_t arrow = s.find("->"); arrow != std::string::npos) {
    lhs = s.substr(0, arrow);
    p.output = s.substr(arrow + 2);
    p.explicit_output = true;
  }
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    p.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int>(p.inputs.size()) != num_inputs)
    return Status::invalid("Einsum equation '" + eq + "' has " + std::to_string(p.inputs.size()) +
                           " input terms but the node has " + std::to_string(num_inputs) + " inputs");
  return p;
}

// Splits a term into labels, with -1 standing for the "..." position.
Result<std::vector<int>> term_symbols(const std::string& term, const std::string& eq) {
  std::vector<int> out;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      if (term.compare(i, 3, "...") != 0 || seen_ellipsis)
        return Status::invalid("Einsum equation '" + eq + "' has a malformed or repeated ellipsis");
      seen_ellipsis = true;
      out.push_back(-1);
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      out.push_back(letter_id(c));
    } else {
      return Status::invalid("Einsum equation '" + eq + "' has an invalid character '" + std::string(1, c) + "'");
    }
  }
  return out;
}

// Expands an operand's symbols to one label per axis, given its rank.
Result<Term> expand_term(const std::vector<int>& sym, int64_t rank, int64_t& ellipsis_rank, const std::string& eq) {
  const int64_t letters = static_cast<int64_t>(std::count_if(sym.begin(), sym.end(), [](int v) { return v >= 0; }));
  const bool has_ellipsis = letters != static_cast<int64_t>(sym.size());
  const int64_t ell = rank - letters;
  if (ell < 0 || (!has_ellipsis && ell != 0))
    return Status::invalid("Einsum equation '" + eq + "': a term has " + std::to_string(letters) +
                           " labels for an operand of rank " + std::to_string(rank));
  ellipsis_rank = has_ellipsis ? ell : 0;
  Term t;
  for (int v : sym) {
    if (v >= 0) {
      t.labels.push_back(v);
    } else {
      for (int64_t d = 0; d < ell; ++d) t.labels.push_back(kEllipsisBase + static_cast<int>(d));
    }
  }
  return t;
}

template <class T>
void einsum_typed(const std::vector<const Tensor*>& ops, const std::vector<std::vector<int64_t>>& op_strides,
                  const std::vector<int64_t>& loop_sizes, const std::vector<int64_t>& out_strides, Tensor& out) {
  using A = acc_t<T>;
  const size_t nl = loop_sizes.size(), no = ops.size();
  std::vector<A> acc(static_cast<size_t>(out.numel()), A{0});
  int64_t total = 1;
  for (int64_t s : loop_sizes) total *= s;
  if (total > 0) {
    std::vector<int64_t> idx(nl, 0), off(no, 0);
    int64_t out_off = 0;
    for (int64_t it = 0; it < total; ++it) {
      A prod{1};
      for (size_t k = 0; k < no; ++k) {
        const T v = ops[k]->data<T>()[off[k]];
        if constexpr (std::is_same_v<A, double>) prod *= to_double(v);
        else prod = static_cast<A>(static_cast<uint64_t>(prod) * static_cast<uint64_t>(static_cast<A>(v)));
      }
      if constexpr (std::is_same_v<A, double>) acc[out_off] += prod;
      else acc[out_off] = static_cast<A>(static_cast<uint64_t>(acc[out_off]) + static_cast<uint64_t>(prod));
      for (int64_t d = static_cast<int64_t>(nl) - 1; d >= 0; --d) {
        if (++idx[d] < loop_sizes[d]) {
          for (size_t k = 0; k < no; ++k) off[k] += op_strides[k][d];
          out_off += out_strides[d];
          break;
        }
        for (size_t k = 0; k < no; ++k) off[k] -= op_strides[k][d] * (loop_sizes[d] - 1);
        out_off -= out_strides[d] * (loop_sizes[d] - 1);
        idx[d] = 0;
      }
    }
  }
  T* po = out.data<T>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    if constexpr (std::is_same_v<A, double>) po[i] = from_double<T>(acc[i]);
    else po[i] = static_cast<T>(acc[i]);
  }
}

struct EinsumPlan {
  std::vector<int64_t> out_dims;
  std::vector<int64_t> loop_sizes;                // output labels first, then the summed ones
  std::vector<std::vector<int64_t>> op_strides;   // per operand, per loop label
  std::vector<int64_t> out_strides;               // per loop label (0 for summed labels)
};

std::string label_name(int l) { return l >= kEllipsisBase ? std::string("...") : std::string(1, id_letter(l)); }

Result<EinsumPlan> plan_einsum(const std::string& eq, const std::vector<std::vector<int64_t>>& dims) {
  FERRY_ASSIGN_OR_RETURN(ParsedEquation p, parse_equation(eq, static_cast<int>(dims.size())));

  // Expand every term; the ellipsis dims are right-aligned across operands, so an operand with fewer
  // ellipsis dims lacks the outer ones.
  std::vector<Term> terms;
  std::vector<int64_t> ell_ranks;
  int64_t max_ell = 0;
  std::map<int, int> uses;  // letter -> occurrences over all input terms
  for (size_t k = 0; k < dims.size(); ++k) {
    FERRY_ASSIGN_OR_RETURN(std::vector<int> sym, term_symbols(p.inputs[k], eq));
    int64_t ell = 0;
    FERRY_ASSIGN_OR_RETURN(Term t, expand_term(sym, static_cast<int64_t>(dims[k].size()), ell, eq));
    max_ell = std::max(max_ell, ell);
    ell_ranks.push_back(ell);
    terms.push_back(std::move(t));
    for (int v : sym)
      if (v >= 0) ++uses[v];
  }
  std::map<int, int64_t> size_of;  // label -> size (size-1 dims broadcast)
  for (int64_t d = 0; d < max_ell; ++d) size_of.emplace(kEllipsisBase + static_cast<int>(d), 1);
  for (size_t k = 0; k < dims.size(); ++k) {
    for (int& l : terms[k].labels)
      if (l >= kEllipsisBase) l += static_cast<int>(max_ell - ell_ranks[k]);
    for (size_t d = 0; d < dims[k].size(); ++d) {
      const int l = terms[k].labels[d];
      const int64_t n = dims[k][d];
      auto [pos, inserted] = size_of.emplace(l, n);
      if (inserted || pos->second == n || n == 1) continue;
      if (pos->second != 1)
        return Status::invalid("Einsum equation '" + eq + "': label '" + label_name(l) + "' has sizes " +
                               std::to_string(pos->second) + " and " + std::to_string(n));
      pos->second = n;
    }
  }

  std::vector<int> out_labels;
  if (p.explicit_output) {
    FERRY_ASSIGN_OR_RETURN(std::vector<int> sym, term_symbols(p.output, eq));
    bool has_ellipsis = false;
    for (int v : sym) {
      if (v < 0) {
        has_ellipsis = true;
        for (int64_t d = 0; d < max_ell; ++d) out_labels.push_back(kEllipsisBase + static_cast<int>(d));
        continue;
      }
      if (!uses.count(v))
        return Status::invalid("Einsum equation '" + eq + "': output label '" + label_name(v) +
                               "' does not appear in any input");
      if (std::count(out_labels.begin(), out_labels.end(), v))
        return Status::invalid("Einsum equation '" + eq + "': output label '" + label_name(v) + "' is repeated");
      out_labels.push_back(v);
    }
    if (!has_ellipsis && max_ell > 0)
      return Status::invalid("Einsum equation '" + eq + "': the output needs '...' for the broadcast dims");
  } else {
    for (int64_t d = 0; d < max_ell; ++d) out_labels.push_back(kEllipsisBase + static_cast<int>(d));
    for (auto [l, n] : uses)
      if (n == 1) out_labels.push_back(l);  // std::map orders by id, which is ASCII order
  }

  std::vector<int> loop = out_labels;
  for (auto [l, n] : size_of)
    if (!std::count(loop.begin(), loop.end(), l)) loop.push_back(l);
  EinsumPlan plan;
  for (int l : loop) plan.loop_sizes.push_back(size_of[l]);
  for (int l : out_labels) plan.out_dims.push_back(size_of[l]);
  // An operand's stride for a loop label sums over its axes with that label (a repeated label walks the
  // diagonal); it is 0 where the label is absent or the operand's dim is 1 and broadcasts.
  plan.op_strides.assign(dims.size(), std::vector<int64_t>(loop.size(), 0));
  for (size_t k = 0; k < dims.size(); ++k) {
    const std::vector<int64_t> st = strides_of(dims[k]);
    for (size_t d = 0; d < dims[k].size(); ++d) {
      if (dims[k][d] == 1) continue;
      const size_t pos = std::find(loop.begin(), loop.end(), terms[k].labels[d]) - loop.begin();
      plan.op_strides[k][pos] += st[d];
    }
  }
  plan.out_strides.assign(loop.size(), 0);
  const std::vector<int64_t> ost = strides_of(plan.out_dims);
  for (size_t d = 0; d < out_labels.size(); ++d) plan.out_strides[d] = ost[d];
  return plan;
}

Status einsum_kernel(KernelContext& ctx) {
  const std::string eq = ctx.node().attr_string("equation", "");
  if (eq.empty()) return Status::invalid("Einsum needs the equation attribute");
  std::vector<const Tensor*> ops;
  std::vector<std::vector<int64_t>> dims;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return Status::invalid("Einsum input " + std::to_string(i) + " is missing");
    ops.push_back(&ctx.input(i));
    dims.push_back(ops.back()->dims());
    if (ops.back()->dtype() != ops[0]->dtype()) return Status::invalid("Einsum inputs must share one dtype");
  }
  if (ops.empty()) return Status::invalid("Einsum needs at least one input");
  FERRY_ASSIGN_OR_RETURN(EinsumPlan plan, plan_einsum(eq, dims));
  // The loop visits every label combination; refuse counts no reference run could finish.
  if (auto n = checked_numel(plan.loop_sizes, int64_t{1} << 36); !n.ok())
    return Status::invalid("Einsum equation '" + eq + "' needs too many multiply-adds: " + n.status().message());
  FERRY_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, ops[0]->dtype(), plan.out_dims));
  bool handled = dispatch_numeric(ops[0]->dtype(), [&](auto tag) {
    einsum_typed<decltype(tag)>(ops, plan.op_strides, plan.loop_sizes, plan.out_strides, *out);
  });
  if (!handled) return Status::unsupported("Einsum: unsupported dtype " + ops[0]->describe());
  return Status();
}

Status einsum_infer(InferContext& ctx) {
  std::vector<std::vector<int64_t>> dims;
  std::optional<Shape> out;
  bool all_static = true;
  for (int i = 0; i < ctx.node().num_inputs() && all_static; ++i) {
    const std::optional<Shape>* s = ctx.input_shape(i);
    if (!s || !*s || !is_static(**s)) all_static = false;
    else dims.push_back(static_dims(**s));
  }
  if (all_static && !dims.empty()) {
    FERRY_ASSIGN_OR_RETURN(EinsumPlan plan, plan_einsum(ctx.node().attr_string("equation", ""), dims));
    out = to_shape(plan.out_dims);
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status();
}

}  // namespace

void register_einsum(OpRegistry& r) {
  r.add(OpSchema{
      .op_type = "Einsum",
      .since_version = 12,
      .min_inputs = 1,
      .infer = einsum_infer,
      .kernel = einsum_kernel,
  });
}

}  // namespace ferry::ops
