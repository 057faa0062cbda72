// Hostile input to the readers: the header limits (tensor count, rank, name length, metadata),
// duplicate keys at every level, files that are not regular files, untrusted bytes in messages,
// the memory budget.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "file_test_util.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"
#include "posemb/npy.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::TempDir;

// A safetensors file: the header text as given, then data_bytes zero bytes.
std::string st_file(const std::string& header, std::size_t data_bytes = 0) {
  std::string s(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(s.data(), &n, 8);
  return s + header + std::string(data_bytes, '\0');
}

// n one-byte U8 tensors "t0", "t1", ... as a header.
std::string many_tensors_header(std::size_t n) {
  std::string h = "{";
  for (std::size_t i = 0; i < n; ++i) {
    if (i != 0) h += ',';
    h += "\"t" + std::to_string(i) + "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" +
         std::to_string(i) + "," + std::to_string(i + 1) + "]}";
  }
  return h + "}";
}

std::string entry(const std::string& name, const std::string& shape, std::uint64_t bytes,
                  const std::string& dtype = "U8") {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[0," + std::to_string(bytes) + "]}";
}

std::string error_of(const std::string& bytes) {
  try {
    (void)read_safetensors_bytes(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()),
        "hostile.safetensors");
  } catch (const FileFormatError& e) {
    return e.what();
  }
  return "(read without error)";
}

// A message fit for a terminal: one line, no control byte, bounded.
void expect_clean_message(const std::string& m) {
  EXPECT_LT(m.size(), 1000u) << m.substr(0, 300);
  for (char c : m) {
    const auto u = static_cast<unsigned char>(c);
    ASSERT_TRUE(u >= 0x20 && u != 0x7f) << "control byte " << int(u) << " in: " << m;
  }
}

TEST(HostileHeaders, HundredThousandTensorsParse) {
  const std::size_t n = 100'000;
  const std::string file = st_file(many_tensors_header(n), n);
  const TensorFile f = read_safetensors_bytes(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(file.data()), file.size()),
      "many");
  ASSERT_EQ(f.tensors.size(), n);
  EXPECT_EQ(f.tensors[99'999].name(), "t99999");  // in data order
  EXPECT_EQ(f.tensors[12'345].shape(), (std::vector<std::uint64_t>{1}));
}

TEST(HostileHeaders, TensorCountRankNameAndMetadataLimits) {
  // One tensor over the count limit.
  const std::size_t n = kSafetensorsMaxTensors + 1;
  std::string m = error_of(st_file(many_tensors_header(n), n));
  EXPECT_NE(m.find("more than 262144 tensors"), std::string::npos) << m.substr(0, 300);
  expect_clean_message(m);

  // Rank: 64 dimensions read, 65 refused.
  std::string dims64 = "[1";
  for (int i = 1; i < 64; ++i) dims64 += ",1";
  EXPECT_EQ(error_of(st_file("{" + entry("a", dims64 + "]", 1) + "}", 1)), "(read without error)");
  m = error_of(st_file("{" + entry("a", dims64 + ",1]", 1) + "}", 1));
  EXPECT_NE(m.find("more than 64 dimensions"), std::string::npos) << m;

  // A 10-million-entry shape (a 20 MB header) is refused at its 65th entry, in one short line.
  std::string huge = "[1";
  huge.reserve(20'000'001);
  for (int i = 1; i < 10'000'000; ++i) huge += ",1";
  m = error_of(st_file("{" + entry("a", huge + "]", 1) + "}", 1));
  EXPECT_NE(m.find("more than 64 dimensions"), std::string::npos) << m.substr(0, 300);
  expect_clean_message(m);

  // Names: 1024 bytes read, 1025 refused with a shortened quote.
  const std::string name1024(kSafetensorsMaxNameBytes, 'n');
  EXPECT_EQ(error_of(st_file("{" + entry(name1024, "[1]", 1) + "}", 1)), "(read without error)");
  m = error_of(st_file("{" + entry(name1024 + "n", "[1]", 1) + "}", 1));
  EXPECT_NE(m.find("longer than the limit of 1024 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("... (1025 bytes)"), std::string::npos) << m;
  expect_clean_message(m);

  // Metadata: entries and bytes.
  std::string meta = "{\"__metadata__\":{";
  for (std::size_t i = 0; i <= kSafetensorsMaxMetadataEntries; ++i) {
    meta += (i != 0 ? ",\"k" : "\"k") + std::to_string(i) + "\":\"v\"";
  }
  m = error_of(st_file(meta + "}}"));
  EXPECT_NE(m.find("more than 65536 entries"), std::string::npos) << m;
  m = error_of(st_file("{\"__metadata__\":{\"k\":\"" +
                       std::string(kSafetensorsMaxMetadataBytes, 'v') + "\"}}"));
  EXPECT_NE(m.find("more than 16777216 bytes"), std::string::npos) << m.substr(0, 300);
  expect_clean_message(m);
}

TEST(HostileHeaders, DuplicateKeysAtEveryLevel) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{" + entry("a", "[1]", 1) + "," + entry("a", "[1]", 1) + "}", "tensor name 'a' twice"},
      {R"({"__metadata__":{},"__metadata__":{}})", "'__metadata__' twice"},
      {R"({"__metadata__":{"k":"1","k":"2"}})", "key 'k' twice"},
      {R"({"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
       "field 'dtype' twice"},
      {R"({"a":{"dtype":"U8","shape":[1],"shape":[1],"data_offsets":[0,1]}})",
       "field 'shape' twice"}};
  for (const auto& [header, phrase] : cases) {
    const std::string m = error_of(st_file(header, 2));
    EXPECT_NE(m.find(phrase), std::string::npos) << header << " -> " << m;
  }
}

// Bytes from the file are escaped in every message: control bytes, NUL, invalid UTF-8,
// bidi overrides, in names, dtypes, metadata and JSON errors.
TEST(HostileHeaders, UntrustedBytesAreEscapedInMessages) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{" + entry("evil\\u001b[2J\\u0000name\\u202e", "[3]", 1) + "}",
       "'evil\\x1b[2J\\x00name\\u202e'"},
      {"{" + entry("a", "[1]", 1, "F32\\u0007") + "}", "unknown dtype 'F32\\x07'"},
      {R"({"__metadata__":{"k\u000b":5}})", "'k\\x0b'"},
      {"{\"a\xff\":1}", "not valid JSON"},
      {"{\"a\":\x01}", "not valid JSON"},
      {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\x1b\":1}}",
       "not valid JSON"},
      {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\\u001b\":1}}",
       "unknown field 'x\\x1b'"}};
  for (const auto& [header, phrase] : cases) {
    const std::string m = error_of(st_file(header, 1));
    EXPECT_NE(m.find(phrase), std::string::npos) << m;
    expect_clean_message(m);
  }
  // .npy: the header is quoted, not echoed.
  std::string npy("\x93NUMPY\x01\x00", 8);
  const std::string dict = "{'descr': '<f4\x1b[31m', 'fortran_order': False, 'shape': (1,), }\n";
  npy += static_cast<char>(dict.size());
  npy += '\0';
  npy += dict + std::string(4, '\0');
  try {
    (void)read_npy_bytes(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(npy.data()), npy.size()),
        "evil\n.npy");
    FAIL();
  } catch (const FileFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("'<f4\\x1b[31m'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'evil\\x0a.npy'"), std::string::npos) << e.what();
    expect_clean_message(e.what());
    EXPECT_EQ(e.path(), "evil\n.npy");
  }
}

TEST(QuoteUntrusted, EscapesWhatATerminalWouldActOnAndCapsTheLength) {
  using namespace std::string_literals;
  EXPECT_EQ(quote_untrusted("wpe.weight"), "'wpe.weight'");
  EXPECT_EQ(quote_untrusted("a\x1b[2Jb"), "'a\\x1b[2Jb'");
  EXPECT_EQ(quote_untrusted("a\0b"s), "'a\\x00b'");
  EXPECT_EQ(quote_untrusted("it's a\\b"), "'it\\'s a\\\\b'");
  EXPECT_EQ(quote_untrusted("\x7f\xff\xc3"), "'\\x7f\\xff\\xc3'");
  EXPECT_EQ(quote_untrusted("\xc2\x9b"), "'\\xc2\\x9b'");           // C1 CSI
  EXPECT_EQ(quote_untrusted("é ü 中"), "'é ü 中'");                 // UTF-8 kept
  EXPECT_EQ(quote_untrusted("x\u202ey"), "'x\\u202ey'");            // bidi override
  EXPECT_EQ(quote_untrusted("\xed\xa0\x80"), "'\\xed\\xa0\\x80'");  // a UTF-16 surrogate
  EXPECT_EQ(quote_untrusted("\xc0\xaf"), "'\\xc0\\xaf'");           // overlong '/'
  EXPECT_EQ(quote_untrusted(std::string(10, 'a'), 4), "'aaaa'... (10 bytes)");
  EXPECT_EQ(quote_untrusted("ab中", 3), "'ab'... (5 bytes)");  // never cuts a character
  EXPECT_EQ(quote_untrusted(""), "''");
}

// Inputs are opened only if they are regular files, without blocking: a FIFO with no writer
// would make a plain open(2) wait forever.
TEST(HostileFiles, FifosAndDevicesAreRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.file("pipe.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  alarm(60);  // a hang kills the test (SIGALRM) instead of blocking the suite
  const std::vector<std::function<void(const std::string&)>> readers = {
      [](const std::string& p) { (void)read_safetensors(p); },
      [](const std::string& p) { (void)read_npy(p); },
      [](const std::string& p) { (void)read_tensor_file(p); },
      [](const std::string& p) { (void)load_position_table(p); }};
  for (const auto& read : readers) {
    for (const auto& [path, type] :
         {std::pair{fifo, "a FIFO"}, std::pair{std::string("/dev/null"), "a character device"},
          std::pair{dir.path().string(), "a directory"}}) {
      try {
        read(path);
        ADD_FAILURE() << path << " read";
      } catch (const FileFormatError& e) {
        EXPECT_NE(std::string(e.what()).find(std::string("not a regular file (") + type + ")"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  alarm(0);
}

// The memory budget is checked before parsing a large header and before converting.
TEST(HostileFiles, LargeHeadersAndConversionsAreCheckedAgainstTheBudget) {
  const std::size_t n = 20'000;
  const std::string file = st_file(many_tensors_header(n), n);  // a ~1.2 MB header
  set_memory_limit(1u << 20);
  EXPECT_THROW(
      (void)read_safetensors_bytes(
          std::span<const std::byte>(reinterpret_cast<const std::byte*>(file.data()), file.size()),
          "many"),
      MemoryLimitExceeded);
  set_memory_limit(0);
  set_memory_limit(0);
  const Tensor h =
      Tensor::from_bytes("h", DType::F16, {1024, 1024}, std::vector<std::byte>(2u << 20));
  set_memory_limit(3u << 20);  // the 2 MiB tensor exists; 4 MiB of floats would not fit
  EXPECT_THROW((void)h.to_matrix<float>(), MemoryLimitExceeded);
  EXPECT_THROW((void)h.astype(DType::F32), MemoryLimitExceeded);
  EXPECT_NO_THROW((void)h.to_matrix<float16>());
  set_memory_limit(0);
}

}  // namespace
}  // namespace posemb
