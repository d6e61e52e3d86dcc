//===- MemrefCopyTest.cpp - memrefCopy and the strided copy
//----------------===//

#include "loom/runtime/Strided.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace {
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};
} // namespace

extern "C" void memrefCopy(int64_t elemSize, UnrankedMemRef *src,
                           UnrankedMemRef *dst);

namespace {

/// A descriptor {allocated, aligned, offset, sizes[r], strides[r]}.
template <typename T>
std::vector<int64_t> desc(T *base, int64_t offset, std::vector<int64_t> sizes,
                          std::vector<int64_t> strides) {
  std::vector<int64_t> d(3 + 2 * sizes.size());
  d[0] = int64_t(reinterpret_cast<intptr_t>(base));
  d[1] = int64_t(reinterpret_cast<intptr_t>(base));
  d[2] = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    d[3 + i] = sizes[i];
    d[3 + sizes.size() + i] = strides[i];
  }
  return d;
}

TEST(MemrefCopy, Rank0) {
  double src[3] = {1, 2, 3}, dst[2] = {0, 0};
  auto s = desc(src, 2, {}, {});
  auto d = desc(dst, 1, {}, {});
  UnrankedMemRef us{0, s.data()}, ud{0, d.data()};
  memrefCopy(sizeof(double), &us, &ud);
  EXPECT_EQ(dst[0], 0);
  EXPECT_EQ(dst[1], 3);
}

TEST(MemrefCopy, Contiguous2D) {
  std::vector<float> src(12), dst(12, -1);
  std::iota(src.begin(), src.end(), 0.f);
  auto s = desc(src.data(), 0, {3, 4}, {4, 1});
  auto d = desc(dst.data(), 0, {3, 4}, {4, 1});
  UnrankedMemRef us{2, s.data()}, ud{2, d.data()};
  memrefCopy(sizeof(float), &us, &ud);
  EXPECT_EQ(src, dst);
}

TEST(MemrefCopy, TransposedSourceWithOffset) {
  // src is a 4x3 row-major buffer at offset 5; view it transposed as 3x4.
  std::vector<int32_t> src(5 + 12), dst(12, -1);
  std::iota(src.begin(), src.end(), 0);
  auto s = desc(src.data(), 5, {3, 4}, {1, 3});
  auto d = desc(dst.data(), 0, {3, 4}, {4, 1});
  UnrankedMemRef us{2, s.data()}, ud{2, d.data()};
  memrefCopy(sizeof(int32_t), &us, &ud);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(dst[i * 4 + j], src[5 + j * 3 + i]) << i << "," << j;
}

TEST(MemrefCopy, StridedDestinationSubview3D) {
  // Copy a contiguous 2x2x3 block into the [1:3, 0:2, 1:4] window of a
  // 3x2x5 destination (dst offset 1*10 + 0*5 + 1).
  std::vector<int16_t> src(12), dst(30, 0);
  std::iota(src.begin(), src.end(), int16_t(1));
  auto s = desc(src.data(), 0, {2, 2, 3}, {6, 3, 1});
  auto d = desc(dst.data(), 11, {2, 2, 3}, {10, 5, 1});
  UnrankedMemRef us{3, s.data()}, ud{3, d.data()};
  memrefCopy(sizeof(int16_t), &us, &ud);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 5; ++c) {
        bool inside = a >= 1 && c >= 1 && c < 4;
        int16_t want = inside ? src[(a - 1) * 6 + b * 3 + (c - 1)] : int16_t(0);
        EXPECT_EQ(dst[a * 10 + b * 5 + c], want) << a << b << c;
      }
}

TEST(MemrefCopy, EmptyCopiesNothing) {
  float src[4] = {1, 2, 3, 4}, dst[4] = {0, 0, 0, 0};
  auto s = desc(src, 0, {0, 4}, {4, 1});
  auto d = desc(dst, 0, {0, 4}, {4, 1});
  UnrankedMemRef us{2, s.data()}, ud{2, d.data()};
  memrefCopy(sizeof(float), &us, &ud);
  for (float v : dst)
    EXPECT_EQ(v, 0);
}

TEST(MemrefCopy, BroadcastZeroStrideAndNegativeStride) {
  // Source row broadcast with stride 0 along dim 0, reversed along dim 1.
  int64_t src[3] = {10, 20, 30};
  std::vector<int64_t> dst(6, 0);
  auto s = desc(src, 2, {2, 3}, {0, -1});
  auto d = desc(dst.data(), 0, {2, 3}, {3, 1});
  UnrankedMemRef us{2, s.data()}, ud{2, d.data()};
  memrefCopy(sizeof(int64_t), &us, &ud);
  EXPECT_EQ(dst, (std::vector<int64_t>{30, 20, 10, 30, 20, 10}));
}

TEST(MemrefCopy, HighRank) {
  // 20-d with all sizes 1 but two: exercises the heap odometer.
  std::vector<int64_t> sizes(20, 1), sstr(20, 1), dstr(20, 1);
  sizes[3] = 3;
  sizes[19] = 2;
  sstr[3] = 1; // transposed: dim 3 innermost in src
  sstr[19] = 3;
  dstr[3] = 2;
  dstr[19] = 1;
  std::vector<uint8_t> src = {1, 2, 3, 4, 5, 6}, dst(6, 0);
  auto s = desc(src.data(), 0, sizes, sstr);
  auto d = desc(dst.data(), 0, sizes, dstr);
  UnrankedMemRef us{20, s.data()}, ud{20, d.data()};
  memrefCopy(1, &us, &ud);
  EXPECT_EQ(dst, (std::vector<uint8_t>{1, 4, 2, 5, 3, 6}));
}

TEST(Strided, RowMajorStrides) {
  int64_t sizes[3] = {2, 3, 4}, strides[3];
  loom::run::rowMajorStrides(3, sizes, strides);
  EXPECT_EQ(strides[0], 12);
  EXPECT_EQ(strides[1], 4);
  EXPECT_EQ(strides[2], 1);
}

} // namespace

namespace {

using loom::run::RowInterleave;

/// The interleaved layout by its definition (docs/QUANTIZE.md), byte by
/// byte: byte b of block c of row n = g * rows + j of a full group lands in
/// the group's block position c (rows * bb bytes at g * rows * R +
/// c * rows * bb): a header byte of field f at f * rows * fb + j * fb +
/// (b - f * fb), a value byte of unit u at rows * head + u * rows * ub +
/// j * ub + (b - head - u * ub). The other rows stay in place.
std::vector<char> interleavedByDefinition(const std::vector<char> &m, int64_t n,
                                          int64_t r, const RowInterleave &il) {
  std::vector<char> out(m.size());
  const int64_t head = il.fields * il.fieldBytes;
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < r; ++col) {
      int64_t g = row / il.rows, j = row % il.rows;
      int64_t c = col / il.blockBytes, b = col % il.blockBytes;
      int64_t to = row * r + col;
      if (g < n / il.rows) {
        int64_t in;
        if (b < head) {
          int64_t f = b / il.fieldBytes;
          in = f * il.rows * il.fieldBytes + j * il.fieldBytes +
               b % il.fieldBytes;
        } else {
          int64_t u = (b - head) / il.unitBytes;
          in = il.rows * head + u * il.rows * il.unitBytes + j * il.unitBytes +
               (b - head) % il.unitBytes;
        }
        to = g * il.rows * r + c * il.rows * il.blockBytes + in;
      }
      out[size_t(to)] = m[size_t(row * r + col)];
    }
  return out;
}

std::vector<char> pattern(size_t n) {
  std::vector<char> m(n);
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = char(i * 7 + i / 251);
  return m;
}

TEST(InterleaveRows, GroupsThenRemainingRows) {
  // 19 rows of 4 Q4_0 blocks (2-byte scale, 16 value bytes): 2 groups of
  // 8, then 3 rows as they are.
  const int64_t n = 19, r = 72;
  RowInterleave il{8, 18, 1, 2, 4};
  std::vector<char> m = pattern(size_t(n * r)), got(m.size(), 0);
  loom::run::interleaveRows(m.data(), {n, r}, {r, 1}, il, got.data());
  EXPECT_EQ(got, interleavedByDefinition(m, n, r, il));
}

TEST(InterleaveRows, TwoHeaderFieldsAndWideUnits) {
  // Blocks with a scale and a min of 4 bytes each, 32 value bytes in units
  // of 8; 16 rows: two whole groups.
  const int64_t n = 16, r = 80;
  RowInterleave il{8, 40, 2, 4, 8};
  std::vector<char> m = pattern(size_t(n * r)), got(m.size(), 0);
  loom::run::interleaveRows(m.data(), {n, r}, {r, 1}, il, got.data());
  EXPECT_EQ(got, interleavedByDefinition(m, n, r, il));
}

TEST(InterleaveRows, FewerRowsThanAGroup) {
  std::vector<char> m = pattern(5 * 36), got(m.size(), 0);
  loom::run::interleaveRows(m.data(), {5, 36}, {36, 1}, {8, 18, 1, 2, 4},
                            got.data());
  EXPECT_EQ(got, m);
}

TEST(InterleaveRows, FromStridedBlocks) {
  // A column split: this rank's [16, 36] block of a [16, 72] weight starts
  // at byte 36 of each row; and the same block seen with an inner stride.
  const int64_t n = 16, full = 72, r = 36;
  RowInterleave il{8, 18, 1, 2, 4};
  std::vector<char> m = pattern(size_t(n * full));
  std::vector<char> block(size_t(n * r));
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < r; ++col)
      block[size_t(row * r + col)] = m[size_t(row * full + 36 + col)];
  std::vector<char> got(block.size(), 0);
  loom::run::interleaveRows(m.data() + 36, {n, r}, {full, 1}, il, got.data());
  EXPECT_EQ(got, interleavedByDefinition(block, n, r, il));
  // Column-major storage of the same block (inner stride n).
  std::vector<char> colMajor(block.size());
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < r; ++col)
      colMajor[size_t(col * n + row)] = block[size_t(row * r + col)];
  std::vector<char> got2(block.size(), 0);
  loom::run::interleaveRows(colMajor.data(), {n, r}, {1, n}, il, got2.data());
  EXPECT_EQ(got2, interleavedByDefinition(block, n, r, il));
}

} // namespace
