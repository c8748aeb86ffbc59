// A zero Pad of the spatial dims read only by a Conv or an AveragePool becomes that op's own padding:
// Conv pads += the Pad's; AveragePool pads += the Pad's with count_include_pad=1 (the padded zeros were
// averaged in). torch exports `avg_pool2d(padding=1)` inside inception_v3's blocks and TensorFlow
// converters SAME padding this way; the Pad ran as its own copy (inception_v3: 17% of the time).
// Only constant mode with value 0, constant non-negative pads that leave N and C alone, explicit
// (NOTSET) auto_pad, and for AveragePool no ceil_mode and no own padding counted the other way.
#include "passes/passes.h"

namespace ferry::passes {

namespace {

// The Pad's begin/end pads per spatial dim ([b0, b1, ..., e0, e1, ...] over the spatial dims only), or
// nullopt when it is not a zero pad of the spatial dims.
std::optional<std::vector<int64_t>> spatial_zero_pads(const ir::Node& pad) {
  if (pad.attr_string("mode", "constant") != "constant") return std::nullopt;
  std::vector<int64_t> pads;
  if (pad.opset < 11) {
    pads = pad.attr_ints("pads");
    if (pad.attr_float("value", 0.f) != 0.f) return std::nullopt;
  } else {
    if (!pad.has_input(1) || pad.num_inputs() > 3) return std::nullopt;  // opset 18's axes: not here
    const Tensor* p = constant_of(pad.inputs[1]);
    if (!p || !p->is_plain()) return std::nullopt;
    for (int64_t i = 0; i < p->numel(); ++i) pads.push_back(static_cast<int64_t>(p->as_double(i)));
    if (pad.has_input(2)) {
      auto v = scalar_of(pad.inputs[2]);
      if (!v || *v != 0.0) return std::nullopt;
    }
  }
  const int64_t r = static_cast<int64_t>(pads.size()) / 2;
  if (r < 3 || static_cast<int64_t>(pads.size()) != 2 * r) return std::nullopt;
  std::vector<int64_t> begin, end;
  for (int64_t i = 0; i < r; ++i) {
    if (pads[i] < 0 || pads[r + i] < 0) return std::nullopt;
    if (i < 2) {
      if (pads[i] != 0 || pads[r + i] != 0) return std::nullopt;  // N or C padded
      continue;
    }
    begin.push_back(pads[i]);
    end.push_back(pads[r + i]);
  }
  begin.insert(begin.end(), end.begin(), end.end());
  return begin;
}

bool takes_pads(const ir::Node& n, size_t spatial) {
  if (!n.domain.empty() || n.attr_string("auto_pad", "NOTSET") != "NOTSET") return false;
  std::vector<int64_t> own = n.attr_ints("pads");
  if (!own.empty() && own.size() != 2 * spatial) return false;
  if (n.op_type == "Conv") return true;
  if (n.op_type != "AveragePool" || n.attr_int("ceil_mode", 0) != 0) return false;
  // Its own padding excluded from the count would now be counted: only when it has none.
  if (n.attr_int("count_include_pad", 0) == 0)
    for (int64_t p : own)
      if (p != 0) return false;
  return true;
}

}  // namespace

Result<int> fold_pad(ir::Graph& g, const PassContext&) {
  return rewrite_until_fixed(g, [&](ir::Node& pad, const Uses& uses) -> Result<bool> {
    if (pad.op_type != "Pad" || !pad.domain.empty() || !pad.has_input(0) || !pad.has_output(0)) return false;
    ir::Value* y = pad.outputs[0];
    if (!uses.single_use(y) || uses.users(y).size() != 1) return false;
    ir::Node* reader = uses.users(y)[0];
    if (reader->inputs.empty() || reader->inputs[0] != y) return false;
    std::optional<std::vector<int64_t>> add = spatial_zero_pads(pad);
    if (!add || !takes_pads(*reader, add->size() / 2)) return false;
    std::vector<int64_t> pads = reader->attr_ints("pads");
    if (pads.empty()) pads.assign(add->size(), 0);
    for (size_t i = 0; i < pads.size(); ++i) pads[i] += (*add)[i];
    reader->attrs["pads"] = make_ints(pads);
    if (reader->op_type == "AveragePool") reader->attrs["count_include_pad"] = make_int(1);
    reader->inputs[0] = pad.inputs[0];
    // The Pad came first: its names go first (provenance is in graph order).
    reader->provenance.insert(reader->provenance.begin(), pad.provenance.begin(), pad.provenance.end());
    remove_node(g, &pad);
    return true;
  });
}

}  // namespace ferry::passes
