// See rnn_onednn.h.
#include "backends/cpu/rnn_onednn.h"

#include <algorithm>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"

namespace ferry::backends::cpu {

namespace {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

constexpr int64_t kGates = 4;
// oneDNN's gate g is ONNX's gate kOnnxGate[g]: oneDNN [i, f, c, o], ONNX [i, o, f, c].
constexpr int64_t kOnnxGate[kGates] = {0, 2, 3, 1};
// oneDNN's peephole p is ONNX's kOnnxPeephole[p]: oneDNN [i, f, o], ONNX [i, o, f].
constexpr int64_t kOnnxPeephole[3] = {0, 2, 1};

md state_desc(const LstmShape& s) { return md({1, s.dirs, s.batch, s.hidden}, dt::f32, tag::ldnc); }

// ONNX W or R ([dirs, 4 * hidden, k]) copied into ldgoi ([dirs][gate][hidden][k], oneDNN's gate order),
// then reordered into the primitive's layout `to`.
dnnl::memory gate_weights(const float* onnx, int64_t dirs, int64_t hidden, int64_t k, const md& to) {
  std::vector<float> plain(dirs * kGates * hidden * k);
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t g = 0; g < kGates; ++g)
      std::copy_n(onnx + (d * kGates + kOnnxGate[g]) * hidden * k, hidden * k, plain.data() + (d * kGates + g) * hidden * k);
  dnnl::memory src(md({1, dirs, k, kGates, hidden}, dt::f32, tag::ldgoi), engine(), plain.data());
  dnnl::memory dst(to, engine());
  dnnl::reorder(src, dst).execute(stream(), src, dst);
  stream().wait();
  return dst;
}

// An initial state (h0 or c0; null: zeros) into `out` as [dirs][batch][hidden].
void initial_state(const LstmShape& s, const float* onnx, std::vector<float>& out) {
  out.assign(s.dirs * s.batch * s.hidden, 0.0f);
  if (!onnx) return;
  if (!s.batch_first || s.dirs == 1) {  // [dirs, batch, hidden] (with one direction the same bytes)
    std::copy_n(onnx, out.size(), out.data());
    return;
  }
  for (int64_t b = 0; b < s.batch; ++b)  // [batch, dirs, hidden]
    for (int64_t d = 0; d < s.dirs; ++d)
      std::copy_n(onnx + (b * s.dirs + d) * s.hidden, s.hidden, out.data() + (d * s.batch + b) * s.hidden);
}

}  // namespace

std::unique_ptr<OnednnLstm> OnednnLstm::create(const LstmShape& s) {
  if (s.seq < 1 || s.batch < 1 || s.input < 1 || s.hidden < 1 || (s.dirs != 1 && s.dirs != 2)) return nullptr;
  const auto direction = s.dirs == 2 ? dnnl::rnn_direction::bidirectional_concat
                         : s.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                     : dnnl::rnn_direction::unidirectional_left2right;
  try {
    const md src_layer({s.seq, s.batch, s.input}, dt::f32, s.batch_first ? tag::ntc : tag::tnc);
    const md dst_layer({s.seq, s.batch, s.dirs * s.hidden}, dt::f32, tag::tnc);
    const md weights_layer({1, s.dirs, s.input, kGates, s.hidden}, dt::f32, tag::any);
    const md weights_iter({1, s.dirs, s.hidden, kGates, s.hidden}, dt::f32, tag::any);
    const md peephole = s.peepholes ? md({1, s.dirs, 3, s.hidden}, dt::f32, tag::ldgo) : md();
    const md bias({1, s.dirs, kGates, s.hidden}, dt::f32, tag::ldgo);
    dnnl::lstm_forward::desc d(dnnl::prop_kind::forward_inference, direction, src_layer, state_desc(s), state_desc(s),
                               weights_layer, weights_iter, peephole, md(), bias, dst_layer, state_desc(s),
                               state_desc(s));
    dnnl::lstm_forward::primitive_desc pd(d, engine());
    const std::string impl = pd.impl_info_str();
    if (impl.find("brgemm") == std::string::npos) return nullptr;  // oneDNN's ref RNN: rnn.cc's path instead
    std::unique_ptr<OnednnLstm> l(new OnednnLstm());
    l->shape_ = s;
    l->impl_ = impl;
    l->pd_ = pd;
    l->prim_ = dnnl::lstm_forward(pd);
    return l;
  } catch (const dnnl::error&) {
    return nullptr;  // a shape oneDNN does not take: rnn.cc's path
  }
}

void OnednnLstm::prepare_weights(const LstmTensors& t) {
  const LstmShape& s = shape_;
  const int64_t D = s.dirs, H = s.hidden;
  weights_layer_ = gate_weights(t.w, D, H, s.input, pd_.weights_layer_desc());
  weights_iter_ = gate_weights(t.r, D, H, H, pd_.weights_iter_desc());
  bias_ = dnnl::memory(md({1, D, kGates, H}, dt::f32, tag::ldgo), engine());
  float* b = static_cast<float*>(bias_.get_data_handle());
  for (int64_t d = 0; d < D; ++d)
    for (int64_t g = 0; g < kGates; ++g)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t at = kOnnxGate[g] * H + h;  // ONNX B[d] = [Wb (4H), Rb (4H)]
        b[(d * kGates + g) * H + h] = t.b ? t.b[d * 2 * kGates * H + at] + t.b[d * 2 * kGates * H + kGates * H + at] : 0.0f;
      }
  if (s.peepholes) {
    peephole_ = dnnl::memory(md({1, D, 3, H}, dt::f32, tag::ldgo), engine());
    float* p = static_cast<float*>(peephole_.get_data_handle());
    for (int64_t d = 0; d < D; ++d)
      for (int64_t g = 0; g < 3; ++g) std::copy_n(t.p + (d * 3 + kOnnxPeephole[g]) * H, H, p + (d * 3 + g) * H);
  }
}

void OnednnLstm::run(const LstmTensors& t) {
  const LstmShape& s = shape_;
  initial_state(s, t.h0, h0_);
  initial_state(s, t.c0, c0_);
  // One direction: dst_layer [seq][batch][hidden] is y's layout. Two: [seq][batch][2][hidden], copied after.
  float* layer = t.y;
  if (s.dirs == 2) {
    layer_out_.resize(s.seq * s.batch * 2 * s.hidden);
    layer = layer_out_.data();
  }
  const dnnl::engine& e = engine();
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC_LAYER, dnnl::memory(pd_.src_layer_desc(), e, const_cast<float*>(t.x))},
      {DNNL_ARG_SRC_ITER, dnnl::memory(state_desc(s), e, h0_.data())},
      {DNNL_ARG_SRC_ITER_C, dnnl::memory(state_desc(s), e, c0_.data())},
      {DNNL_ARG_WEIGHTS_LAYER, weights_layer_},
      {DNNL_ARG_WEIGHTS_ITER, weights_iter_},
      {DNNL_ARG_BIAS, bias_},
      {DNNL_ARG_DST_LAYER, dnnl::memory(pd_.dst_layer_desc(), e, layer)},
      {DNNL_ARG_DST_ITER, dnnl::memory(state_desc(s), e, t.yh)},
      {DNNL_ARG_DST_ITER_C, dnnl::memory(state_desc(s), e, t.yc)}};
  if (s.peepholes) args.emplace(DNNL_ARG_WEIGHTS_PEEPHOLE, peephole_);
  prim_.execute(stream(), args);
  stream().wait();
  if (s.dirs == 2)
    for (int64_t ts = 0; ts < s.seq; ++ts)
      for (int64_t d = 0; d < 2; ++d)
        for (int64_t b = 0; b < s.batch; ++b)
          std::copy_n(layer + ((ts * s.batch + b) * 2 + d) * s.hidden, s.hidden, t.y + ((ts * 2 + d) * s.batch + b) * s.hidden);
}

}  // namespace ferry::backends::cpu
