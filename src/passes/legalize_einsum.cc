// Einsum -> Transpose / Reshape / MatMul (/ ReduceSum). Two operands: letters in both inputs and the
// output are batch dims, in both inputs only are contracted, in one input and the output are free;
// A is laid out [batch, free_a, contracted] and B [batch, contracted, free_b], each flattened to 3-D,
// multiplied, unflattened and transposed into the output's order. One operand: ReduceSum over the
// letters the output drops, then a Transpose. Needs static input shapes; ellipses, a letter repeated
// in one operand (traces, diagonals), letters summed out of only one of two operands and size-1
// broadcasting have no rewrite (the node then goes to the host).
#include <algorithm>
#include <map>

#include "passes/legalize.h"

namespace ferry::passes {

namespace {

struct Equation {
  std::vector<std::string> terms;
  std::string out;
};

std::optional<Equation> parse(const std::string& raw) {
  std::string eq;
  for (char ch : raw)
    if (ch != ' ') eq += ch;
  if (eq.find('.') != std::string::npos) return std::nullopt;
  Equation e;
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    e.terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::map<char, int> count;
  for (const auto& t : e.terms)
    for (char ch : t) {
      if (!std::isalpha(static_cast<unsigned char>(ch))) return std::nullopt;
      if (std::count(t.begin(), t.end(), ch) > 1) return std::nullopt;
      count[ch]++;
    }
  if (arrow != std::string::npos) {
    e.out = eq.substr(arrow + 2);
  } else {
    for (auto& [ch, c] : count)
      if (c == 1) e.out += ch;  // implicit output: letters seen once, alphabetical
  }
  for (char ch : e.out)
    if (!count.count(ch) || std::count(e.out.begin(), e.out.end(), ch) > 1) return std::nullopt;
  return e;
}

bool has(const std::string& s, char ch) { return s.find(ch) != std::string::npos; }

// Letter sizes from static shapes; nullopt on a mismatch (broadcasting) or an unknown shape.
std::optional<std::map<char, int64_t>> sizes(const ir::Node& n, const Equation& e) {
  std::map<char, int64_t> out;
  for (size_t i = 0; i < e.terms.size(); ++i) {
    auto s = n.has_input(static_cast<int>(i)) ? static_shape(n.inputs[i]) : std::nullopt;
    if (!s || s->size() != e.terms[i].size()) return std::nullopt;
    for (size_t k = 0; k < s->size(); ++k) {
      char ch = e.terms[i][k];
      if (out.count(ch) && out[ch] != (*s)[k]) return std::nullopt;
      out[ch] = (*s)[k];
    }
  }
  return out;
}

bool applies(const ir::Node& n) {
  auto e = parse(n.attr_string("equation", ""));
  if (!e || e->terms.size() != static_cast<size_t>(n.num_inputs()) || e->terms.empty() || e->terms.size() > 2) return false;
  if (!sizes(n, *e)) return false;
  if (e->terms.size() == 2)
    for (int i = 0; i < 2; ++i)
      for (char ch : e->terms[i])
        if (!has(e->out, ch) && !has(e->terms[1 - i], ch)) return false;  // summed out of one operand only
  return true;
}

std::vector<int64_t> perm_of(const std::string& from, const std::string& to) {
  std::vector<int64_t> p;
  for (char ch : to) p.push_back(static_cast<int64_t>(from.find(ch)));
  return p;
}

ir::Value* transpose(ir::Graph& g, const ir::Node& n, ir::Value* x, const std::string& from, const std::string& to) {
  if (from == to) return x;
  return emit(g, n, "Transpose", {x}, {{"perm", make_ints(perm_of(from, to))}});
}

ir::Value* reshape(ir::Graph& g, const ir::Node& n, ir::Value* x, std::vector<int64_t> dims) {
  return emit(g, n, "Reshape", {x, int64_constant(g, std::move(dims), n.name + "/shape")});
}

Result<bool> rewrite(ir::Graph& g, ir::Node* n) {
  Equation e = *parse(n->attr_string("equation", ""));
  std::map<char, int64_t> size = *sizes(*n, e);
  if (e.terms.size() == 1) {
    std::string kept;
    std::vector<int64_t> axes;
    for (size_t k = 0; k < e.terms[0].size(); ++k) {
      if (has(e.out, e.terms[0][k])) kept += e.terms[0][k];
      else axes.push_back(static_cast<int64_t>(k));
    }
    ir::Value* x = n->inputs[0];
    if (!axes.empty()) x = emit_reduce(g, *n, "ReduceSum", x, axes, 0);
    x = transpose(g, *n, x, kept, e.out);
    if (x == n->inputs[0]) x = emit(g, *n, "Identity", {x});
    return finish_rewrite(g, n, x);
  }
  const std::string &la = e.terms[0], &lb = e.terms[1];
  std::string batch, contr, afree, bfree;
  for (char ch : e.out)
    if (has(la, ch) && has(lb, ch)) batch += ch;
  for (char ch : la)
    if (has(lb, ch) && !has(e.out, ch)) contr += ch;
  for (char ch : e.out) {
    if (has(la, ch) && !has(lb, ch)) afree += ch;
    if (has(lb, ch) && !has(la, ch)) bfree += ch;
  }
  auto prod = [&](const std::string& s) {
    int64_t p = 1;
    for (char ch : s) p *= size[ch];
    return p;
  };
  ir::Value* a = reshape(g, *n, transpose(g, *n, n->inputs[0], la, batch + afree + contr),
                         {prod(batch), prod(afree), prod(contr)});
  ir::Value* b = reshape(g, *n, transpose(g, *n, n->inputs[1], lb, batch + contr + bfree),
                         {prod(batch), prod(contr), prod(bfree)});
  ir::Value* y = emit(g, *n, "MatMul", {a, b});
  std::string order = batch + afree + bfree;
  std::vector<int64_t> dims;
  for (char ch : order) dims.push_back(size[ch]);
  y = reshape(g, *n, y, dims);
  return finish_rewrite(g, n, transpose(g, *n, y, order, e.out));
}

}  // namespace

LegalizeRule rule_einsum() {
  return {"legalize_einsum", "Einsum", {"Transpose", "Reshape", "MatMul", "ReduceSum"}, applies, rewrite};
}


}  // namespace ferry::passes
