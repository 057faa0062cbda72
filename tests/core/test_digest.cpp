// SHA-256 (posemb/digest.hpp) against the standard's example vectors, against `sha256sum` on
// files of awkward sizes, and split into pieces every way.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "posemb/digest.hpp"
#include "posemb/random.hpp"
#include "temp_dir.hpp"

namespace posemb {
namespace {

// Random bytes from a seed (not text: every byte value occurs).
std::string random_bytes(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng.next() & 0xff);
  return s;
}

// The example vectors of FIPS 180-4 (NIST's "SHA256.pdf", "SHA2_Additional.pdf") and the empty
// message.
TEST(Sha256, StandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnop"
                       "jklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256_hex(std::string(1, '\xbd')),
            "68325720aabd7c82f30f554b313d0570c95accbb7dc4b5aae11204c08ffe732b");
  EXPECT_EQ(sha256_hex(std::string("\xc9\x8c\x8e\x55", 4)),
            "7abc22c0ae5af26ce93dbb94433a0e0b2e119d014f8e7f65bd56c61ccccd9504");
  EXPECT_EQ(sha256_hex(std::string(55, '\0')),  // the longest message padded in one block
            "02779466cdec163811d078815c633f21901413081449002f24aa3e80f0b88ef7");
  EXPECT_EQ(sha256_hex(std::string(56, '\0')),  // the shortest that needs a second block
            "d4817aa5497628e7c77e6b606107042bbba3130888c5f47a375e6179be789fbb");
  EXPECT_EQ(sha256_hex(std::string(57, '\0')),
            "65a16cb7861335d5ace3c60718b5052e44660726da4cd13bb745381b235a1785");
  EXPECT_EQ(sha256_hex(std::string(64, '\0')),
            "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b");
  EXPECT_EQ(sha256_hex(std::string(1000, '\0')),
            "541b3e9daa09b20bf85fa273e5cbd3e80185aa4ec298e765db87742b70138a53");
  EXPECT_EQ(sha256_hex(std::string(1000, 'A')),
            "c2e686823489ced2017f6059b8b239318b6364f6dcd835d0a519105a1eadd6e4");
  EXPECT_EQ(sha256_hex(std::string(1005, 'U')),
            "f4d62ddec0f3dd90ea1380fa16a5ff8dc4c54b21740650f24afc4120903552b0");
}

// Whatever the pieces, the digest of their concatenation.
TEST(Sha256, PiecesGiveTheWholeMessagesDigest) {
  for (std::size_t n : {0, 1, 55, 56, 63, 64, 65, 127, 128, 129, 1000, 4099}) {
    const std::string msg = random_bytes(n, 17 + n);
    const std::string whole = sha256_hex(msg);
    for (std::size_t piece : {1, 3, 7, 63, 64, 65, 200}) {
      Sha256 h;
      for (std::size_t at = 0; at < n; at += piece) {
        h.update(std::string_view(msg).substr(at, piece));
      }
      h.update(std::string_view());  // an empty piece changes nothing
      EXPECT_EQ(digest_hex(h.finish()), whole) << n << " bytes in pieces of " << piece;
    }
  }
}

// The digest sha256sum prints for a file holding the bytes: every length 0..200 and a few large.
TEST(Sha256, EqualsSha256sum) {
  test::TempDir dir;
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 200; ++n) sizes.push_back(n);
  for (std::size_t n : {4095, 4096, 65537, 1'000'003}) sizes.push_back(n);
  std::string list;  // every path, for a single sha256sum call
  std::vector<std::string> ours;
  for (std::size_t n : sizes) {
    const std::string path = dir.file(std::string("m").append(std::to_string(n)));
    const std::string msg = random_bytes(n, n * 31 + 5);
    std::ofstream(path, std::ios::binary) << msg;
    list.append(" ").append(path);
    ours.push_back(sha256_hex(msg));
  }
  FILE* p = ::popen(("sha256sum" + list).c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[4096];
  std::size_t i = 0;
  while (std::fgets(line, sizeof line, p) != nullptr) {
    ASSERT_LT(i, ours.size());
    EXPECT_EQ(std::string(line, 64), ours[i]) << sizes[i] << " bytes";
    ++i;
  }
  ASSERT_EQ(::pclose(p), 0);
  EXPECT_EQ(i, sizes.size());
}

TEST(Sha256, FinishOnce) {
  Sha256 h;
  h.update("abc");
  EXPECT_EQ(digest_hex(h.finish()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(h.update("d"), std::logic_error);
  EXPECT_THROW((void)h.finish(), std::logic_error);
}

}  // namespace
}  // namespace posemb
