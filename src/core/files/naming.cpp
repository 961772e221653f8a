// File names of the .npy dumps (docs/outputs.md, ".npy files").
#include "ophook/files/naming.hpp"

#include <fmt/format.h>

#define XXH_INLINE_ALL  // header-only: libophook_core.so must not depend on libxxhash.so
#include <xxhash.h>

namespace ophook::core {
namespace {

// A file name may hold 255 bytes; "op_" + "_output<k>_<seq>.npy" needs at most 45 of them.
constexpr std::size_t kMaxStem = 200;
constexpr std::size_t kHashDigits = 16;

}  // namespace

std::string sanitize_op_name(std::string_view op) {
  std::string out;
  out.reserve(op.size());
  for (const char ch : op) {
    const auto c = static_cast<unsigned char>(ch);
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (allowed) {
      out.push_back(ch);
    } else if ((c & 0xC0) != 0x80) {
      // The contract replaces every *character*: a UTF-8 sequence becomes one '_', so the name
      // matches what Python's re.sub over the str gives. Continuation bytes are dropped.
      out.push_back('_');
    }
  }
  if (out == "." || out == "..") out.assign(out.size(), '_');
  if (out.size() > kMaxStem) {
    // Too long for a file name: keep the start and make the end the hash of the full name, so
    // that distinct long names still get distinct files.
    out.resize(kMaxStem - kHashDigits - 1);
    out += fmt::format("-{:016x}", XXH64(op.data(), op.size(), 0));
  }
  return out;
}

std::string input_file_name(std::string_view sanitized_op, unsigned k, std::uint64_t seq) {
  return fmt::format("op_{}_input{}_{:06d}.npy", sanitized_op, k, seq);
}

std::string output_file_name(std::string_view sanitized_op, unsigned k, std::uint64_t seq) {
  if (k == 0) return fmt::format("op_{}_output_{:06d}.npy", sanitized_op, seq);
  return fmt::format("op_{}_output{}_{:06d}.npy", sanitized_op, k, seq);
}

}  // namespace ophook::core
