#include "conflux/core/resource_limits.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <new>
#include <vector>

namespace conflux {
namespace {

rlim_t data_soft_limit() {
  rlimit r{};
  getrlimit(RLIMIT_DATA, &r);
  return r.rlim_cur;
}

TEST(ResourceLimits, MemoryBuysAProportionalCpuShare) {
  EXPECT_NEAR((FunctionSize{1769, 1769}.cpu_share()), 1.0, 1e-12);
  EXPECT_NEAR((FunctionSize{3538, 1769}.cpu_share()), 2.0, 1e-12);
  EXPECT_EQ((FunctionSize{1024, 1769}.describe()), "1024 MB (0.58 vCPU)");
}

TEST(ResourceLimits, CapsTheDataSegmentAndRestoresIt) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer maps its shadow memory as data: any RLIMIT_DATA cap breaks it";
#endif
  const rlim_t before = data_soft_limit();
  {
    ResourceLimits limits({.memory_mb = 4096, .mb_per_vcpu = 1769}, std::chrono::milliseconds(20));
    EXPECT_EQ(data_soft_limit(), rlim_t{4096} << 20);
    EXPECT_NEAR(limits.throttle().share(), 4096.0 / 1769, 1e-12);
    // More than the cap cannot be allocated (and committed) any more.
    EXPECT_THROW(
        {
          std::vector<char> big(std::size_t{5} << 30);
          big[big.size() - 1] = 1;
        },
        std::bad_alloc);
    limits.resize({.memory_mb = 8192, .mb_per_vcpu = 1769});
    EXPECT_EQ(data_soft_limit(), rlim_t{8192} << 20);
    EXPECT_NEAR(limits.throttle().share(), 8192.0 / 1769, 1e-12);
  }
  EXPECT_EQ(data_soft_limit(), before);
}

}  // namespace
}  // namespace conflux
