#include "compare/align/alignment.hpp"

#include <algorithm>
#include <bit>
#include <unordered_map>
#include <utility>

namespace ophook::cli {

namespace {

using Symbols = std::span<const std::uint32_t>;
using Match = std::pair<std::size_t, std::size_t>;

/// Problems at most this large (cells) are solved with a plain dynamic-programming table.
constexpr std::size_t kTableCells = std::size_t{1} << 20;

/// row[j] = LCS(a, b[0..j)) for j = 0..|b|, computed with Hyyrö's bit-vector recurrence: bit j
/// of V is 0 exactly where row[j+1] = row[j] + 1.
std::vector<std::uint32_t> lcs_row(Symbols a, Symbols b) {
  const std::size_t words = (b.size() + 63) / 64;
  std::unordered_map<std::uint32_t, std::size_t> slot_of;
  for (std::uint32_t s : b) slot_of.emplace(s, slot_of.size());
  std::vector<std::uint64_t> masks(slot_of.size() * words, 0);
  for (std::size_t j = 0; j < b.size(); ++j) {
    masks[slot_of[b[j]] * words + j / 64] |= std::uint64_t{1} << (j % 64);
  }
  std::vector<std::uint64_t> v(words, ~std::uint64_t{0});
  for (std::uint32_t s : a) {
    auto it = slot_of.find(s);
    if (it == slot_of.end()) continue;
    const std::uint64_t* mask = masks.data() + it->second * words;
    std::uint64_t carry = 0;
    for (std::size_t w = 0; w < words; ++w) {
      const std::uint64_t u = v[w] & mask[w];
      const std::uint64_t sum = v[w] + u;
      const std::uint64_t with_carry = sum + carry;
      carry = (sum < v[w] || with_carry < sum) ? 1 : 0;
      v[w] = with_carry | (v[w] & ~mask[w]);
    }
  }
  std::vector<std::uint32_t> row(b.size() + 1, 0);
  std::uint32_t count = 0;
  for (std::size_t j = 0; j < b.size(); ++j) {
    if (((v[j / 64] >> (j % 64)) & 1) == 0) ++count;
    row[j + 1] = count;
  }
  return row;
}

void solve_with_table(Symbols a, Symbols b, std::size_t ao, std::size_t bo,
                      std::vector<Match>& out) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::uint32_t> table((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return table[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = m; j-- > 0;) {
      at(i, j) = a[i] == b[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  std::size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] == b[j]) {
      out.emplace_back(ao + i++, bo + j++);
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
}

/// Hirschberg: split `a` in half, find where the optimal path crosses the middle from the
/// forward row of the top half and the backward row of the bottom half, recurse on both sides.
void solve(Symbols a, Symbols b, std::size_t ao, std::size_t bo, std::vector<Match>& out) {
  std::size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) {
    out.emplace_back(ao + prefix, bo + prefix);
    ++prefix;
  }
  a = a.subspan(prefix);
  b = b.subspan(prefix);
  ao += prefix;
  bo += prefix;
  std::size_t suffix = 0;
  while (suffix < a.size() && suffix < b.size() &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  const Symbols a_mid = a.first(a.size() - suffix), b_mid = b.first(b.size() - suffix);
  if (!a_mid.empty() && !b_mid.empty()) {
    if (a_mid.size() == 1) {
      auto hit = std::find(b_mid.begin(), b_mid.end(), a_mid[0]);
      if (hit != b_mid.end())
        out.emplace_back(ao, bo + static_cast<std::size_t>(hit - b_mid.begin()));
    } else if (a_mid.size() * b_mid.size() <= kTableCells) {
      solve_with_table(a_mid, b_mid, ao, bo, out);
    } else {
      const std::size_t half = a_mid.size() / 2;
      const std::vector<std::uint32_t> forward = lcs_row(a_mid.first(half), b_mid);
      std::vector<std::uint32_t> a_rev(a_mid.begin() + half, a_mid.end());
      std::vector<std::uint32_t> b_rev(b_mid.begin(), b_mid.end());
      std::reverse(a_rev.begin(), a_rev.end());
      std::reverse(b_rev.begin(), b_rev.end());
      const std::vector<std::uint32_t> backward = lcs_row(a_rev, b_rev);
      const std::size_t m = b_mid.size();
      std::size_t split = 0;
      std::uint32_t best = 0;
      for (std::size_t k = 0; k <= m; ++k) {
        const std::uint32_t total = forward[k] + backward[m - k];
        if (total > best || k == 0) {
          best = total;
          split = k;
        }
      }
      solve(a_mid.first(half), b_mid.first(split), ao, bo, out);
      solve(a_mid.subspan(half), b_mid.subspan(split), ao + half, bo + split, out);
    }
  }
  for (std::size_t k = suffix; k-- > 0;) {
    out.emplace_back(ao + a.size() - 1 - k, bo + b.size() - 1 - k);
  }
}

}  // namespace

std::size_t lcs_length(Symbols a, Symbols b) {
  if (a.empty() || b.empty()) return 0;
  return lcs_row(a, b).back();
}

std::vector<AlignStep> align_sequences(Symbols base, Symbols other) {
  std::vector<Match> matches;
  solve(base, other, 0, 0, matches);
  std::vector<AlignStep> steps;
  steps.reserve(base.size() + other.size() - matches.size());
  std::size_t i = 0, j = 0;
  auto flush_until = [&](std::size_t bi, std::size_t oj) {
    for (; i < bi; ++i) steps.push_back({static_cast<std::int64_t>(i), -1});
    for (; j < oj; ++j) steps.push_back({-1, static_cast<std::int64_t>(j)});
  };
  for (const auto& [bi, oj] : matches) {
    flush_until(bi, oj);
    steps.push_back({static_cast<std::int64_t>(i++), static_cast<std::int64_t>(j++)});
  }
  flush_until(base.size(), other.size());
  return steps;
}

}  // namespace ophook::cli
