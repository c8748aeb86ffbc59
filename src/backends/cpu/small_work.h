// Runs a oneDNN primitive on one thread when its work is too small to be worth an OpenMP fork/join:
// CNN tails and squeeze-excite blocks have hundreds of such primitives (7x7 and 1x1 spatial sizes),
// where waking the second thread costs more than the work, and far more when the machine is busy
// (a barrier then waits for a descheduled thread). oneDNN reads omp_get_max_threads() at execution.
#pragma once
#include <cstdint>

#include <omp.h>

namespace ferry::backends::cpu {

// Below this many output elements (elementwise work) or multiply-adds (convolutions), one thread.
inline constexpr int64_t kSmallElementwise = int64_t{1} << 15;
inline constexpr int64_t kSmallMacs = int64_t{1} << 21;

class SerialIfSmall {
 public:
  explicit SerialIfSmall(bool small) : saved_(small ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SerialIfSmall() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  SerialIfSmall(const SerialIfSmall&) = delete;
  SerialIfSmall& operator=(const SerialIfSmall&) = delete;

 private:
  int saved_;
};

}  // namespace ferry::backends::cpu
