// matmul_bench: times oneDNN Linear-layer matmuls (A [M,K] x constant B [K,N], plus a bias) the way ferry's
// cpu backend creates them (src/backends/cpu/matmul.cc): dense A, B in format `any` reordered once (not
// timed), an fp32 destination. It compiles against oneDNN 2.x and 3.x (DNNL_VERSION_MAJOR picks the
// primitive_desc construction), so the same source measures Debian's 2.6 next to a newer one: see
// matmul.sh, which builds it twice.
//
//   matmul_bench [--iters R] [--warmup W] [--bf16] [--cold] M,K,N [M,K,N ...]
//
//   --bf16   A and B in bf16 (AMX or avx512_bf16 kernels), as `--precision bf16` runs them; else fp32
//   --cold   overwrite a 256 MiB buffer before every timed execution (not timed), so B comes from memory
//            as it does in a model whose weights do not fit the cache (vit_b_16's are 172 MB in bf16)
//
// Output: '#' lines (version, threads, flags), then one tab-separated line per shape:
//   M,K,N  impl  median_ms  gflops
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <omp.h>

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

int main(int argc, char** argv) {
  int iters = 100, warmup = 10;
  bool bf16 = false, cold = false;
  std::vector<std::vector<long>> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = std::atoi(argv[++i]);
    else if (a == "--bf16") bf16 = true;
    else if (a == "--cold") cold = true;
    else {
      long m = 0, k = 0, n = 0;
      if (std::sscanf(a.c_str(), "%ld,%ld,%ld", &m, &k, &n) != 3 || m <= 0 || k <= 0 || n <= 0) {
        std::fprintf(stderr, "matmul_bench: expected M,K,N, got '%s'\n", a.c_str());
        return 2;
      }
      shapes.push_back({m, k, n});
    }
  }
  const dnnl_version_t* v = dnnl_version();
  std::printf("# oneDNN %d.%d.%d, %d threads, %s%s\n", v->major, v->minor, v->patch, omp_get_max_threads(),
              bf16 ? "bf16" : "fp32", cold ? ", cold weights" : "");
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  std::vector<char> junk(cold ? (size_t{256} << 20) : 0, 1);
  const dt in = bf16 ? dt::bf16 : dt::f32;
  for (const auto& sh : shapes) {
    const long M = sh[0], K = sh[1], N = sh[2];
    memory::desc a({M, K}, in, tag::ab), b_any({K, N}, in, tag::any), bias({1, N}, dt::f32, tag::ab),
        c({M, N}, dt::f32, tag::ab), b_plain({K, N}, dt::f32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
    matmul::primitive_desc pd(eng, a, b_any, bias, c);
#else
    matmul::primitive_desc pd(matmul::desc(a, b_any, bias, c), eng);
#endif
    memory A(a, eng), B(pd.weights_desc(), eng), Bias(bias, eng), C(c, eng), Bp(b_plain, eng);
    std::fill_n(static_cast<float*>(Bp.get_data_handle()), K * N, 0.01f);
    std::memset(A.get_data_handle(), 0, a.get_size());
    std::memset(Bias.get_data_handle(), 0, bias.get_size());
    reorder(Bp, B).execute(s, Bp, B);
    s.wait();
    matmul prim(pd);
    std::vector<double> ms;
    for (int i = 0; i < warmup + iters; ++i) {
      if (cold)
        for (size_t j = 0; j < junk.size(); j += 64) junk[j]++;
      const auto t0 = std::chrono::steady_clock::now();
      prim.execute(s, {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, B}, {DNNL_ARG_BIAS, Bias}, {DNNL_ARG_DST, C}});
      s.wait();
      if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    std::printf("%ld,%ld,%ld\t%s\t%.4f\t%.0f\n", M, K, N, pd.impl_info_str(), med, 2.0 * M * K * N / med / 1e6);
  }
  return 0;
}
