#include "ophook/capture/strided_copy.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ophook::core {
namespace {

std::vector<int> copy_view(const int* base, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  std::vector<int> out(n);
  strided_copy(reinterpret_cast<std::byte*>(out.data()), reinterpret_cast<const std::byte*>(base), shape, strides,
               sizeof(int));
  return out;
}

TEST(StridedCopy, ContiguousTransposedNegativeAndBroadcast) {
  const int m[6] = {0, 1, 2, 3, 4, 5};  // 2x3 C order
  EXPECT_EQ(copy_view(m, {2, 3}, {12, 4}), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(copy_view(m, {3, 2}, {4, 12}), (std::vector<int>{0, 3, 1, 4, 2, 5}));          // transpose
  EXPECT_EQ(copy_view(m + 5, {2, 3}, {-12, -4}), (std::vector<int>{5, 4, 3, 2, 1, 0}));    // [::-1, ::-1]
  EXPECT_EQ(copy_view(m, {2, 3}, {0, 4}), (std::vector<int>{0, 1, 2, 0, 1, 2}));            // broadcast rows
  EXPECT_EQ(copy_view(m, {2, 2}, {12, 8}), (std::vector<int>{0, 2, 3, 5}));                 // [:, ::2]
  EXPECT_EQ(copy_view(m, {}, {}), (std::vector<int>{0}));                                    // 0-d
  EXPECT_TRUE(copy_view(m, {0, 3}, {12, 4}).empty());                                        // empty
  const int cube[8] = {0, 1, 2, 3, 4, 5, 6, 7};  // 2x2x2
  EXPECT_EQ(copy_view(cube, {2, 2, 2}, {4, 16, 8}), (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
}

/// Every element of `shape` gathered from `base` one at a time: what any copy must give.
template <typename T>
std::vector<T> gathered(const T* base, const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  std::vector<T> out;
  for (std::size_t flat = 0; flat < n; ++flat) {
    std::size_t rest = flat;
    std::int64_t offset = 0;
    for (std::size_t d = shape.size(); d-- > 0;) {
      offset += static_cast<std::int64_t>(rest % static_cast<std::size_t>(shape[d])) * strides[d];
      rest /= static_cast<std::size_t>(shape[d]);
    }
    T value;
    std::memcpy(&value, reinterpret_cast<const std::byte*>(base) + offset, sizeof(T));
    out.push_back(value);
  }
  return out;
}

template <typename T>
void expect_tiled_transposes_right() {
  // 3 x 37 x 45 in C order, viewed with its last two dimensions swapped (sizes off the tiles),
  // then the same reversed along the middle dimension and with its batch dimension last.
  std::vector<T> data(3 * 37 * 45);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<T>(i % 251);
  const auto item = static_cast<std::int64_t>(sizeof(T));
  const std::vector<std::vector<std::int64_t>> shapes{{3, 45, 37}, {3, 45, 37}, {45, 37, 3}};
  const std::vector<std::vector<std::int64_t>> strides{
      {item * 37 * 45, item, 45 * item}, {item * 37 * 45, -item, 45 * item}, {item, 45 * item, item * 37 * 45}};
  const std::vector<const T*> bases{data.data(), data.data() + 44, data.data()};
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    std::vector<T> out(data.size());
    strided_copy(reinterpret_cast<std::byte*>(out.data()), reinterpret_cast<const std::byte*>(bases[k]), shapes[k],
                 strides[k], sizeof(T));
    EXPECT_EQ(out, gathered(bases[k], shapes[k], strides[k])) << "view " << k << ", " << sizeof(T) << "-byte items";
  }
}

TEST(StridedCopy, TiledTransposesOfEveryItemSize) {
  expect_tiled_transposes_right<std::uint8_t>();
  expect_tiled_transposes_right<std::uint16_t>();
  expect_tiled_transposes_right<float>();
  expect_tiled_transposes_right<double>();
}

}  // namespace
}  // namespace ophook::core

namespace ophook::core {
namespace {

TEST(OneBlockElements, AnyOrderOfDenseDimensionsAndBroadcastsButNoGapOrNegativeStride) {
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(one_block_elements(V{4, 3}, V{3, 1}), 12u);          // C order
  EXPECT_EQ(one_block_elements(V{4, 3}, V{1, 4}), 12u);          // transposed
  EXPECT_EQ(one_block_elements(V{2, 3, 4}, V{4, 8, 1}), 24u);    // permuted
  EXPECT_EQ(one_block_elements(V{1, 5, 1}, V{99, 1, -7}), 5u);   // size-1 dimensions never stepped
  EXPECT_EQ(one_block_elements(V{128, 512}, V{0, 0}), 1u);       // one value broadcast
  EXPECT_EQ(one_block_elements(V{4, 3}, V{0, 1}), 3u);           // one row broadcast
  EXPECT_EQ(one_block_elements(V{}, V{}), 1u);                   // 0-d
  EXPECT_EQ(one_block_elements(V{0, 3}, V{3, 1}), 0u);           // empty
  EXPECT_EQ(one_block_elements(V{4, 3}, V{6, 2}), std::nullopt);  // every second element
  EXPECT_EQ(one_block_elements(V{4, 3}, V{4, 1}), std::nullopt);  // a gap after each row
  EXPECT_EQ(one_block_elements(V{4, 3}, V{3, -1}), std::nullopt); // reversed rows
  EXPECT_EQ(one_block_elements(V{2, 2}, V{1, 1}), std::nullopt);  // overlapping
}

}  // namespace
}  // namespace ophook::core
