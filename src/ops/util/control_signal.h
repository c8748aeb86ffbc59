// Direct (O(n^2)) discrete Fourier transforms along one axis, shared by DFT and STFT. The reference
// kernels favour obviousness over speed; sizes in models using these ops are small.
#pragma once
#include <complex>
#include <cstdint>
#include <vector>

namespace ferry::ops::signal {

using cd = std::complex<double>;

// Signal viewed as [outer, length, inner] complex values.
struct Lanes {
  int64_t outer = 1, length = 0, inner = 1;
  std::vector<cd> data;
};

// Forward DFT of size n (input zero-padded or truncated to n); keeps the first `keep` bins.
Lanes dft(const Lanes& in, int64_t n, int64_t keep);
// Inverse DFT of size n with 1/n scaling (complex result).
Lanes idft(const Lanes& in, int64_t n);
// Inverse of a one-sided spectrum: rebuilds the Hermitian full spectrum of size n, real result.
Lanes irdft(const Lanes& in, int64_t n);

}  // namespace ferry::ops::signal
