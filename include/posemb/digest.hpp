// posemb/digest.hpp: the one digest of posemb, SHA-256 (FIPS 180-4), for naming data by its
// content in a way anyone can check with `sha256sum`: a training corpus recorded in a
// checkpoint, a file compared with the one a run was made from.
//
//   std::string hex = posemb::sha256_hex(bytes);      // 64 lowercase hex digits, as sha256sum
//
//   posemb::Sha256 h;                                 // the same over pieces
//   h.update(first_part);
//   h.update(second_part);
//   std::array<std::uint8_t, 32> d = h.finish();      // the 32 bytes; digest_hex(d) = sha256_hex
//
// Contract: the digest of the concatenation of every update's bytes, whatever the pieces
// (sizes 0, 1, 55, 56, 63, 64, 65 and the rest are all the same stream). finish() may be called
// once; update() or finish() after it throws std::logic_error. A message of 2^61 bytes or more
// (whose bit length does not fit 64 bits) throws std::length_error. No allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace posemb {

class Sha256 {
 public:
  Sha256() noexcept;
  void update(std::span<const std::byte> bytes);
  void update(std::string_view bytes) { update(std::as_bytes(std::span(bytes))); }
  // The digest of every byte given to update(). Call once.
  std::array<std::uint8_t, 32> finish();

 private:
  void compress(const std::uint8_t* block) noexcept;  // one 64-byte block
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;  // bytes in buffer_ (< 64)
  std::uint64_t length_ = 0;  // bytes given so far
  bool finished_ = false;
};

// 64 lowercase hex digits of a digest.
std::string digest_hex(const std::array<std::uint8_t, 32>& digest);

// The SHA-256 of bytes as 64 lowercase hex digits: what `sha256sum` prints for a file holding
// them.
std::string sha256_hex(std::span<const std::byte> bytes);
inline std::string sha256_hex(std::string_view bytes) {
  return sha256_hex(std::as_bytes(std::span(bytes)));
}

}  // namespace posemb
