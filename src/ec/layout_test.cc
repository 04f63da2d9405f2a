#include "ec/layout.h"

#include <gtest/gtest.h>

namespace silo::ec {
namespace {

// Every object byte is in exactly one data cell, in order, and slices are equal.
void expect_covers(const Layout& l) {
  uint64_t next = 0;
  for (uint64_t s = 0; s < l.stripes(); ++s) {
    for (uint32_t j = 0; j < l.k; ++j) {
      const uint64_t start = l.object_offset(s) + j * l.cell_length(s);
      if (l.data_in_cell(s, j) > 0) {
        EXPECT_EQ(start, next) << "stripe " << s << " cell " << j;
      }
      next += l.data_in_cell(s, j);
      EXPECT_LE(l.data_in_cell(s, j), l.cell_length(s));
    }
  }
  EXPECT_EQ(next, l.object_size);
  if (l.stripes() > 0) {
    EXPECT_EQ(l.slice_size(), l.slice_offset(l.stripes() - 1) + l.cell_length(l.stripes() - 1));
    EXPECT_LE(l.slice_size() * l.k - l.object_size, l.k - 1 + 0u) << "padding beyond k - 1 bytes";
  }
}

TEST(EcLayoutTest, CoversEveryByteOnceWithAtMostKMinusOneBytesOfPadding) {
  for (uint32_t k : {1u, 2u, 4u, 10u}) {
    for (uint64_t cell : {1ull, 7ull, 4096ull}) {
      for (uint64_t size :
           {0ull, 1ull, 2ull, 3ull, 4095ull, 4096ull, 4097ull, 65536ull, 100003ull}) {
        expect_covers(Layout{k, cell, size});
      }
    }
  }
}

TEST(EcLayoutTest, FullStripesUseTheCellAndTheLastOneIsSplitEvenly) {
  const Layout l{4, 1024, 10 * 1024 + 10};  // two full stripes (8 KiB), then 2 KiB + 10
  EXPECT_EQ(l.stripes(), 3u);
  EXPECT_EQ(l.cell_length(0), 1024u);
  EXPECT_EQ(l.cell_length(2), (2048u + 10 + 3) / 4);
  EXPECT_EQ(l.slice_size(), 2048u + 515);
  EXPECT_EQ(l.stripe_of(8192), 2u);
  EXPECT_EQ(l.data_in_cell(2, 3), 2048u + 10 - 3 * 515);
}

}  // namespace
}  // namespace silo::ec
