#include "ops/util/control_signal.h"

#include <cmath>

namespace ferry::ops::signal {
namespace {

cd at(const Lanes& in, int64_t o, int64_t k, int64_t i) {
  return k < in.length ? in.data[(o * in.length + k) * in.inner + i] : cd(0, 0);
}

// out[m] = scale * sum_k x[k] * exp(sign * 2*pi*i*k*m/n) for m < keep, using k < min(n, length).
Lanes transform(const Lanes& in, int64_t n, int64_t keep, double sign, double scale,
                const std::vector<cd>* full_override = nullptr) {
  Lanes out;
  out.outer = in.outer;
  out.inner = in.inner;
  out.length = keep;
  out.data.assign(out.outer * keep * out.inner, cd(0, 0));
  const double two_pi = 2 * M_PI;
  for (int64_t o = 0; o < in.outer; ++o)
    for (int64_t i = 0; i < in.inner; ++i)
      for (int64_t m = 0; m < keep; ++m) {
        cd acc(0, 0);
        for (int64_t k = 0; k < n; ++k) {
          const cd x = full_override ? (*full_override)[(o * n + k) * in.inner + i] : at(in, o, k, i);
          if (x == cd(0, 0)) continue;
          // Reduce k*m mod n first so large products keep full angle precision.
          const double angle = sign * two_pi * static_cast<double>((k * m) % n) / static_cast<double>(n);
          acc += x * cd(std::cos(angle), std::sin(angle));
        }
        out.data[(o * keep + m) * out.inner + i] = acc * scale;
      }
  return out;
}

}  // namespace

Lanes dft(const Lanes& in, int64_t n, int64_t keep) { return transform(in, n, keep, -1.0, 1.0); }

Lanes idft(const Lanes& in, int64_t n) { return transform(in, n, n, 1.0, 1.0 / static_cast<double>(n)); }

Lanes irdft(const Lanes& in, int64_t n) {
  // Bins 0..n/2 come from the input (zero past its end); the rest mirror them conjugated.
  std::vector<cd> full(in.outer * n * in.inner);
  for (int64_t o = 0; o < in.outer; ++o)
    for (int64_t i = 0; i < in.inner; ++i)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t src = k <= n / 2 ? k : n - k;
        cd v = at(in, o, src, i);
        if (k > n / 2) v = std::conj(v);
        full[(o * n + k) * in.inner + i] = v;
      }
  Lanes out = transform(in, n, n, 1.0, 1.0 / static_cast<double>(n), &full);
  for (cd& v : out.data) v = cd(v.real(), 0);
  return out;
}

}  // namespace ferry::ops::signal
