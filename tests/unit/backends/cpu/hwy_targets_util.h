// Runs a check under every Highway target this CPU runs and the build generated (AVX-512, AVX2, SSE4,
// ...), each forced in turn and named in failures, so an AVX-512 machine tests the narrower paths too.
#pragma once
#include <gtest/gtest.h>
#include <hwy/targets.h>

namespace ferry::backends::cpu::testing {

template <class Check>
void for_every_hwy_target(Check check) {
  int targets = 0;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    ++targets;
    SCOPED_TRACE(hwy::TargetName(target));
    check();
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GE(targets, 2);
}

}  // namespace ferry::backends::cpu::testing
