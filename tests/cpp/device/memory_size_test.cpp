// The memory sizes users write for memoryPerIpu, in Python and C++ alike.
#include "device/memory_size.h"

#include <gtest/gtest.h>

namespace popsim::device {
namespace {

TEST(MemorySize, ReadsANumberAndAUnitInAnyCase) {
  EXPECT_EQ(parseMemorySize("64MiB"), 64u << 20);
  EXPECT_EQ(parseMemorySize(" 512 KB "), 512000u);
  EXPECT_EQ(parseMemorySize("1.5GiB"), 1610612736u);
  EXPECT_EQ(parseMemorySize(".5 kb"), 500u);
  EXPECT_EQ(parseMemorySize("\t64mib\n"), 64u << 20);
  EXPECT_EQ(parseMemorySize("900"), 900u);
  EXPECT_EQ(parseMemorySize("7 b"), 7u);
  EXPECT_EQ(parseMemorySize("1.0000001 B"), 1u); // whole bytes, rounded down
}

TEST(MemorySize, RefusesWhatIsNoSize) {
  for (const char* text : {"", " ", "5.", ".", "abc", "64 XB", "64 Mi B", "1.2.3MB", "-64MiB",
                           "0.5", "0", "64MiB extra", "99999999999999999999GiB"}) {
    EXPECT_FALSE(parseMemorySize(text).has_value()) << "'" << text << "'";
  }
}

} // namespace
} // namespace popsim::device
