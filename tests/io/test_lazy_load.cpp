// load_position_table touches only the table's bytes: its peak memory on a 164 MB GPT-2-like
// checkpoint is bounded by a few times the 3 MiB table, not by the file. Measured as the
// ru_maxrss of a child process (tests/io/load_table_probe.cpp), against the same child loading
// a file holding the table alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "file_test_util.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

struct Probe {
  std::size_t rows = 0, cols = 0;
  double sum = 0;
  long maxrss_kib = 0;
};

Probe run_probe(const std::string& path) {
  const std::string cmd = std::string(POSEMB_LOAD_TABLE_PROBE) + " '" + path + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  Probe r;
  if (p == nullptr) return r;
  EXPECT_EQ(std::fscanf(p, "%zu %zu %lg %ld", &r.rows, &r.cols, &r.sum, &r.maxrss_kib), 4);
  EXPECT_EQ(::pclose(p), 0);
  return r;
}

// A safetensors file written in streaming fashion (no tensor is held in memory): GPT-2 small's
// token table and position table, then `layers` blocks of a matrix and small vectors.
// The position table is values i * 1e-6; the rest is a byte pattern.
std::uint64_t write_gpt2_like(const std::string& path, std::size_t layers) {
  struct Spec {
    std::string name;
    std::uint64_t rows, cols;
  };
  std::vector<Spec> specs = {{"wte.weight", 50257, 768}, {"wpe.weight", 1024, 768}};
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    for (const char* v : {"ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias"}) {
      specs.push_back({h + v, 1, 768});
    }
    specs.push_back({h + "attn.c_attn.bias", 1, 2304});
    specs.push_back({h + "attn.c_proj.weight", 192, 768});
  }
  std::string header = "{";
  std::uint64_t offset = 0;
  for (const Spec& s : specs) {
    const std::uint64_t n = s.rows * s.cols * 4;
    header += (header.size() > 1 ? ",\"" : "\"") + s.name + "\":{\"dtype\":\"F32\",\"shape\":[" +
              std::to_string(s.rows) + "," + std::to_string(s.cols) + "],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + n) + "]}";
    offset += n;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  write_file_atomically(path, "test", [&](FileSink& sink) {
    const std::uint64_t hn = header.size();
    sink.write(&hn, 8);
    sink.write(header.data(), header.size());
    std::vector<float> row(2304);
    for (const Spec& s : specs) {
      for (std::uint64_t r = 0; r < s.rows; ++r) {
        for (std::uint64_t c = 0; c < s.cols; ++c) {
          row[c] = s.name == "wpe.weight" ? static_cast<float>(r * s.cols + c) * 1e-6f
                                          : static_cast<float>((r + c) % 7) - 3.0f;
        }
        sink.write(row.data(), s.cols * 4);
      }
    }
  });
  return 8 + header.size() + offset;
}

TEST(LazyLoad, LoadingATableTouchesOnlyItsBytes) {
  test::TempDir dir;
  const std::string big = dir.file("gpt2_like.safetensors");
  const std::uint64_t size = write_gpt2_like(big, 12);
  ASSERT_GT(size, 160'000'000u);
  // The same table alone: the baseline (program, libraries, the table and its matrix).
  Matrix<float> wpe(1024, 768);
  for (std::size_t i = 0; i < wpe.size(); ++i) wpe.flat()[i] = static_cast<float>(i) * 1e-6f;
  write_safetensors(dir.file("alone.safetensors"), {Tensor::from_matrix("wpe.weight", wpe)});
  const Probe alone = run_probe(dir.file("alone.safetensors"));
  const Probe load = run_probe(big);
  EXPECT_EQ(load.rows, 1024u);
  EXPECT_EQ(load.cols, 768u);
  EXPECT_EQ(load.sum, alone.sum) << "the same table";
  // Bound: the baseline plus the table's bytes twice again (mapped pages and the matrix) plus
  // 16 MiB for the header, fault-around and allocator slack. Decoding every tensor, as the
  // reader once did, costs about twice the file (320 MB).
  const long table_kib = 1024 * 768 * 4 / 1024;
  std::printf("peak RSS: table alone %ld KiB, table from the %llu-byte file %ld KiB\n",
              alone.maxrss_kib, static_cast<unsigned long long>(size), load.maxrss_kib);
  EXPECT_LT(load.maxrss_kib, alone.maxrss_kib + 2 * table_kib + 16 * 1024);
  EXPECT_LT(load.maxrss_kib * 1024, static_cast<long>(size / 4));
}

}  // namespace
}  // namespace posemb
