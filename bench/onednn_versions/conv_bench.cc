// conv_bench: times oneDNN fp32 forward-inference convolutions, one per line of a shapes file, the way
// ferry's cpu backend creates them (src/backends/cpu/conv.cc): format_tag::any for source, weights and
// destination, a bias, the inputs reordered into the picked layouts once (not timed). It compiles
// against oneDNN 2.x and 3.x (DNNL_VERSION_MAJOR picks the primitive_desc construction), so the same
// source measures Debian's 2.6 next to a newer one: see run.sh, which builds it twice.
//
//   conv_bench [--iters R] [--warmup W] [--relu] [--winograd] [--act any|nhwc|nChw16c] [--cold] shapes.txt
//
// Shapes file: one convolution per line, whitespace-separated integers
//
//   N IC OC H W KH KW stride pad groups [count]   [# free text]
//
//   N, IC, H, W  the input (NCHW); OC the output channels; KH x KW the kernel; stride and pad the same
//   on both spatial axes (pad on both sides, like torch's padding=p); groups as in torch (IC and OC are
//   the totals, each group sees IC/groups channels); count (default 1) how many times the shape occurs
//   in the model, so that sum(count * ms) estimates the model's convolution time. Everything after '#'
//   is a comment; blank lines and comment lines are skipped. gen_shapes.py writes such files.
//
// Output: '#' lines (versions, ISA, threads, flags), then one tab-separated line per shape:
//
//   shape  count  impl  layout  median_ms  min_ms  gflops  checksum  comment
//
//   shape      the 10 integers of the line, space-separated (the key run.sh joins on)
//   impl       pd.impl_info_str(), e.g. brgconv:avx512_core, jit:avx512_core, jit_1x1:avx512_core
//   layout     the source layout the primitive picked (nchw, nhwc, nChw8c, nChw16c, or "other"; "plain"
//              on 1x1 maps, where nchw and nhwc are the same bytes)
//   median_ms  the median of R timed executions of the primitive alone (execute + stream wait)
//   gflops     2 * N*OC*OH*OW * (IC/groups)*KH*KW / median (bias and post-ops not counted)
//   checksum   the sum of the plain (NCHW) destination: the inputs come from a fixed seed, so both
//              oneDNN versions should print (nearly) the same number
// A shape oneDNN cannot create prints "ERROR" in the impl column and the message in the comment.
//
// Options:
//   --iters R     timed executions per shape (default 100); --warmup W untimed ones before (default 10)
//   --relu        append an eltwise ReLU post-op (ferry fuses BN into the weights and ReLU as a post-op)
//   --winograd    try algorithm::convolution_winograd first and fall back to direct, as ferry does for
//                 the shapes its winograd_suits() admits (shows whether a version still has Winograd)
//   --act L       source/destination layout: any (default, what ferry asks for), nhwc, or nChw16c (what
//                 ferry's --cpu-blocked-1x1 forces on 1x1 convolutions)
//   --cold        overwrite a 64 MiB buffer before every timed execution (not timed), so the inputs
//                 come from memory rather than the caches
// Threads: the OpenMP runtime's (libgomp: OMP_NUM_THREADS).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace {

using dnnl::algorithm;
using dnnl::prop_kind;
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

struct Shape {
  long n = 0, ic = 0, oc = 0, h = 0, w = 0, kh = 0, kw = 0, stride = 1, pad = 0, groups = 1, count = 1;
  std::string comment;
  std::string key() const {
    std::ostringstream o;
    o << n << ' ' << ic << ' ' << oc << ' ' << h << ' ' << w << ' ' << kh << ' ' << kw << ' ' << stride << ' '
      << pad << ' ' << groups;
    return o.str();
  }
  long oh() const { return (h + 2 * pad - kh) / stride + 1; }
  long ow() const { return (w + 2 * pad - kw) / stride + 1; }
  double flop() const { return 2.0 * n * oc * oh() * ow() * (ic / groups) * kh * kw; }
};

struct Options {
  int iters = 100, warmup = 10;
  bool relu = false, winograd = false, cold = false;
  std::string act = "any";
  std::string shapes;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool read_shapes(const std::string& path, std::vector<Shape>& out) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "conv_bench: cannot open %s\n", path.c_str());
    return false;
  }
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    std::string comment;
    size_t hash = line.find('#');
    if (hash != std::string::npos) {
      comment = trim(line.substr(hash + 1));
      line = line.substr(0, hash);
    }
    std::istringstream in(line);
    std::vector<long> v;
    long x;
    while (in >> x) v.push_back(x);
    if (!in.eof()) {
      std::fprintf(stderr, "conv_bench: %s:%d: not an integer list\n", path.c_str(), lineno);
      return false;
    }
    if (v.empty()) continue;
    if (v.size() != 10 && v.size() != 11) {
      std::fprintf(stderr, "conv_bench: %s:%d: want 10 or 11 integers, got %zu\n", path.c_str(), lineno, v.size());
      return false;
    }
    Shape s;
    s.n = v[0], s.ic = v[1], s.oc = v[2], s.h = v[3], s.w = v[4], s.kh = v[5], s.kw = v[6];
    s.stride = v[7], s.pad = v[8], s.groups = v[9], s.count = v.size() == 11 ? v[10] : 1;
    s.comment = comment;
    if (s.groups < 1 || s.ic % s.groups || s.oc % s.groups || s.oh() < 1 || s.ow() < 1) {
      std::fprintf(stderr, "conv_bench: %s:%d: inconsistent shape\n", path.c_str(), lineno);
      return false;
    }
    out.push_back(s);
  }
  return true;
}

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

dnnl::convolution_forward::primitive_desc make_pd(const dnnl::engine& eng, algorithm alg, const md& src, const md& wei,
                                                  const md& bias, const md& dst, const dims& strides,
                                                  const dims& dil, const dims& pad_l, const dims& pad_r,
                                                  const dnnl::primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::convolution_forward::primitive_desc(eng, prop_kind::forward_inference, alg, src, wei, bias, dst,
                                                   strides, dil, pad_l, pad_r, attr);
#else
  dnnl::convolution_forward::desc d(prop_kind::forward_inference, alg, src, wei, bias, dst, strides, dil, pad_l,
                                    pad_r);
  return dnnl::convolution_forward::primitive_desc(d, attr, eng);
#endif
}

void append_relu(dnnl::post_ops& po) {
#if DNNL_VERSION_MAJOR >= 3
  po.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
#else
  po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
#endif
}

void fill(dnnl::memory& m, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  float* p = static_cast<float*>(m.get_data_handle());
  const size_t n = m.get_desc().get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = u(rng);
}

// Reorders `plain` into a new memory of `want` (or returns it when the layouts already agree).
dnnl::memory to_layout(const dnnl::engine& eng, dnnl::stream& s, dnnl::memory& plain, const md& want) {
  if (plain.get_desc() == want) return plain;
  dnnl::memory m(want, eng);
  dnnl::reorder(plain, m).execute(s, plain, m);
  s.wait();
  return m;
}

// The activation layout of `m` among the plain and blocked ones oneDNN picks for 4D fp32 tensors.
const char* layout_name(const md& m, const dims& d) {
  const std::pair<tag, const char*> known[] = {
      {tag::nchw, "nchw"}, {tag::nhwc, "nhwc"}, {tag::nChw8c, "nChw8c"}, {tag::nChw16c, "nChw16c"}};
  for (const auto& k : known)
    if (m == md(d, dt::f32, k.first)) return d[2] * d[3] == 1 && k.first == tag::nchw ? "plain" : k.second;
  return "other";
}

struct Result {
  std::string impl, layout;
  double median_ms = 0, min_ms = 0, checksum = 0;
  std::string error;
};

Result bench_one(const dnnl::engine& eng, dnnl::stream& strm, const Shape& sh, const Options& o,
                 std::vector<char>& flush_buf) {
  Result r;
  const long g = sh.groups;
  const dims src_dims = {sh.n, sh.ic, sh.h, sh.w};
  const dims dst_dims = {sh.n, sh.oc, sh.oh(), sh.ow()};
  const dims w_dims = g > 1 ? dims{g, sh.oc / g, sh.ic / g, sh.kh, sh.kw} : dims{sh.oc, sh.ic, sh.kh, sh.kw};
  const tag w_plain = g > 1 ? tag::goihw : tag::oihw;
  const tag act = o.act == "nhwc" ? tag::nhwc : o.act == "nChw16c" ? tag::nChw16c : tag::any;

  const md src_md(src_dims, dt::f32, act), dst_md(dst_dims, dt::f32, act), w_md(w_dims, dt::f32, tag::any);
  const md bias_md({sh.oc}, dt::f32, tag::x);
  dnnl::primitive_attr attr;
  if (o.relu) {
    dnnl::post_ops po;
    append_relu(po);
    attr.set_post_ops(po);
  }
  const dims strides = {sh.stride, sh.stride}, dil = {0, 0}, pad = {sh.pad, sh.pad};

  dnnl::convolution_forward::primitive_desc pd;
  bool made = false;
  if (o.winograd) {
    try {
      pd = make_pd(eng, algorithm::convolution_winograd, src_md, w_md, bias_md, dst_md, strides, dil, pad, pad, attr);
      made = true;
    } catch (const dnnl::error&) {
      // No Winograd kernel for this shape (or in this version): the direct one below.
    }
  }
  try {
    if (!made)
      pd = make_pd(eng, algorithm::convolution_direct, src_md, w_md, bias_md, dst_md, strides, dil, pad, pad, attr);
  } catch (const dnnl::error& e) {
    r.impl = "ERROR";
    r.error = e.what();
    return r;
  }
  r.impl = pd.impl_info_str();
  r.layout = layout_name(pd.src_desc(), src_dims);
  dnnl::convolution_forward prim(pd);

  // Plain inputs from a fixed seed, reordered once into the primitive's layouts.
  std::mt19937 rng(12345);
  dnnl::memory src_plain(md(src_dims, dt::f32, tag::nchw), eng), w_plain_m(md(w_dims, dt::f32, w_plain), eng);
  dnnl::memory bias_m(pd.bias_desc(), eng);
  fill(src_plain, rng, -1.f, 1.f);
  fill(w_plain_m, rng, -0.1f, 0.1f);
  fill(bias_m, rng, -0.1f, 0.1f);
  dnnl::memory src_m = to_layout(eng, strm, src_plain, pd.src_desc());
  dnnl::memory w_m = to_layout(eng, strm, w_plain_m, pd.weights_desc());
  dnnl::memory dst_m(pd.dst_desc(), eng);

  const std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_BIAS, bias_m}, {DNNL_ARG_DST, dst_m}};
  for (int i = 0; i < o.warmup; ++i) prim.execute(strm, args);
  strm.wait();
  std::vector<double> ms;
  ms.reserve(o.iters);
  unsigned char fill_byte = 0;
  for (int i = 0; i < o.iters; ++i) {
    if (o.cold) std::memset(flush_buf.data(), ++fill_byte, flush_buf.size());
    const auto t0 = std::chrono::steady_clock::now();
    prim.execute(strm, args);
    strm.wait();
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const size_t k = ms.size();
  r.median_ms = k % 2 ? ms[k / 2] : 0.5 * (ms[k / 2 - 1] + ms[k / 2]);
  r.min_ms = ms.front();

  dnnl::memory dst_plain(md(dst_dims, dt::f32, tag::nchw), eng);
  dnnl::reorder(dst_m, dst_plain).execute(strm, dst_m, dst_plain);
  strm.wait();
  const float* p = static_cast<const float*>(dst_plain.get_data_handle());
  double sum = 0;
  for (size_t i = 0, n = dst_plain.get_desc().get_size() / sizeof(float); i < n; ++i) sum += p[i];
  r.checksum = sum;
  return r;
}

int usage() {
  std::fprintf(stderr,
               "usage: conv_bench [--iters R] [--warmup W] [--relu] [--winograd] [--act any|nhwc|nChw16c] [--cold] "
               "shapes.txt\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--iters" || a == "--warmup") {
      const char* v = next();
      if (!v) return usage();
      (a == "--iters" ? o.iters : o.warmup) = std::atoi(v);
    } else if (a == "--act") {
      const char* v = next();
      if (!v) return usage();
      o.act = v;
      if (o.act != "any" && o.act != "nhwc" && o.act != "nChw16c") return usage();
    } else if (a == "--relu") {
      o.relu = true;
    } else if (a == "--winograd") {
      o.winograd = true;
    } else if (a == "--cold") {
      o.cold = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage();
    } else {
      o.shapes = a;
    }
  }
  if (o.shapes.empty() || o.iters < 1 || o.warmup < 0) return usage();
  std::vector<Shape> shapes;
  if (!read_shapes(o.shapes, shapes)) return 1;

  const dnnl_version_t* v = dnnl_version();
  std::printf("# oneDNN runtime %d.%d.%d (%s), headers %d.%d.%d\n", v->major, v->minor, v->patch, v->hash,
              DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH);
  if (v->major != DNNL_VERSION_MAJOR || v->minor != DNNL_VERSION_MINOR) {
    std::fprintf(stderr, "conv_bench: built against oneDNN %d.%d headers but runs libdnnl %d.%d\n",
                 DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, v->major, v->minor);
    return 1;
  }
  std::printf("# isa %s, omp threads %d, iters %d, warmup %d, relu %d, winograd %d, act %s, cold %d\n",
              isa_name(dnnl::get_effective_cpu_isa()), omp_get_max_threads(), o.iters, o.warmup, o.relu, o.winograd,
              o.act.c_str(), o.cold);
  std::printf("# shape\tcount\timpl\tlayout\tmedian_ms\tmin_ms\tgflops\tchecksum\tcomment\n");
  std::fflush(stdout);

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::vector<char> flush_buf(o.cold ? size_t{64} << 20 : 0);
  int errors = 0;
  for (const Shape& sh : shapes) {
    const Result r = bench_one(eng, strm, sh, o, flush_buf);
    if (!r.error.empty()) {
      ++errors;
      std::printf("%s\t%ld\tERROR\t-\tnan\tnan\tnan\tnan\t%s\n", sh.key().c_str(), sh.count, r.error.c_str());
    } else {
      std::printf("%s\t%ld\t%s\t%s\t%.6f\t%.6f\t%.2f\t%.6e\t%s\n", sh.key().c_str(), sh.count, r.impl.c_str(),
                  r.layout.c_str(),
                  r.median_ms, r.min_ms, sh.flop() / (r.median_ms * 1e6), r.checksum, sh.comment.c_str());
    }
    std::fflush(stdout);
  }
  return errors ? 1 : 0;
}
