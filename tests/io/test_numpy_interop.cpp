// Interoperability with numpy and torch (Debian's /usr/bin/python3): files they write, posemb
// reads, and the reverse, compared bit for bit; float16 and bfloat16 conversions against their
// conversions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>

#include "file_test_util.hpp"
#include "posemb/npy.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::same_bits;
using test::TempDir;

template <class T>
std::vector<T> raw_as(const std::string& path) {
  const std::string s = test::read_all(path);
  std::vector<T> v(s.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), s.data(), v.size() * sizeof(T));
  return v;
}

// Random bit patterns over every exponent, plus the awkward values.
std::vector<float> awkward_floats(std::size_t n) {
  std::mt19937 rng(12345);
  std::vector<float> v = {0.0f,         -0.0f,           65504.0f,          65519.99f,  65520.0f,
                          -65520.0f,    0x1p-24f,        0x1p-25f,          0x1.8p-25f, 0x1p-14f,
                          0x1.ffcp-15f, 1.0f + 0x1p-11f, 1.0f + 0x1.8p-11f, INFINITY,   -INFINITY,
                          3.0e38f,      1e-45f};
  while (v.size() < n) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (!std::isnan(f)) v.push_back(f);
  }
  return v;
}

TEST(NumpyInterop, PosembReadsWhatNumpyWrites) {
  TempDir dir;
  const int rc = test::run_python(dir, R"(
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
cases = [("a", (33, 17), "<f4", (1, 0)), ("b", (5, 9), "<f8", (2, 0)), ("c", (1024,), "<f4", (3, 0)),
         ("d", (2, 3, 4), "<f8", (1, 0)), ("e", (0, 5), "<f4", (1, 0))]
blobs, header, off = [], {"__metadata__": {"who": "numpy"}}, 0
for name, shape, dt, ver in cases:
    a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 30, size=shape)).astype(dt)
    with open(os.path.join(d, name + ".npy"), "wb") as f:
        np.lib.format.write_array(f, a, version=ver)
    open(os.path.join(d, name + ".bin"), "wb").write(a.tobytes())
    b = a.tobytes()
    header[name] = {"dtype": "F32" if dt == "<f4" else "F64", "shape": list(shape),
                    "data_offsets": [off, off + len(b)]}
    blobs.append(b); off += len(b)
h = json.dumps(header).encode()
open(os.path.join(d, "all.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
)");
  ASSERT_EQ(rc, 0);
  const TensorFile st = read_safetensors(dir.file("all.safetensors"));
  EXPECT_EQ(st.metadata.at("who"), "numpy");
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    const Tensor t = read_npy(dir.file(std::string(name) + ".npy"));
    const std::string bin = dir.file(std::string(name) + ".bin");
    if (t.dtype == DType::F32) {
      EXPECT_TRUE(same_bits(t.values, raw_as<float>(bin))) << name;
      EXPECT_TRUE(same_bits(st.at(name).values, t.values)) << name;
    } else {
      EXPECT_TRUE(same_bits(t.values_f64, raw_as<double>(bin))) << name;
      EXPECT_TRUE(same_bits(st.at(name).values_f64, t.values_f64)) << name;
    }
    EXPECT_EQ(st.at(name).shape, t.shape) << name;
  }
  EXPECT_EQ(read_npy(dir.file("a.npy")).shape, (std::vector<std::uint64_t>{33, 17}));
}

TEST(NumpyInterop, NumpyReadsWhatPosembWrites) {
  TempDir dir;
  std::vector<Tensor> ts;
  const std::vector<std::vector<std::uint64_t>> shapes = {{33, 17}, {1024}, {2, 3, 4}, {0, 5}, {}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Tensor t;
    t.name = std::string("t").append(std::to_string(i));
    t.shape = shapes[i];
    t.dtype = i % 2 == 0 ? DType::F32 : DType::F64;
    if (t.dtype == DType::F32) {
      t.values = test::random_values<float>(t.element_count(), i);
      test::write_all(
          dir.file(t.name + ".bin"),
          std::string(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4));
    } else {
      t.values_f64 = test::random_values<double>(t.element_count(), i);
      test::write_all(
          dir.file(t.name + ".bin"),
          std::string(reinterpret_cast<const char*>(t.values_f64.data()), t.values_f64.size() * 8));
    }
    write_npy(dir.file(t.name + ".npy"), t);
    ts.push_back(t);
  }
  write_safetensors(dir.file("all.safetensors"), ts, {{"k", "v"}});
  const int rc = test::run_python(dir, R"(
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
shapes = [(33, 17), (1024,), (2, 3, 4), (0, 5), ()]
raw = open(os.path.join(d, "all.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
assert header["__metadata__"] == {"k": "v"}, header
data = raw[8 + n:]
for i, shape in enumerate(shapes):
    name = "t%d" % i
    a = np.load(os.path.join(d, name + ".npy"))
    dt = "<f4" if i % 2 == 0 else "<f8"
    assert a.dtype == np.dtype(dt), (name, a.dtype)
    assert a.shape == shape, (name, a.shape)
    assert a.flags["C_CONTIGUOUS"]
    b = open(os.path.join(d, name + ".bin"), "rb").read()
    assert a.tobytes() == b, name
    e = header[name]
    assert e["dtype"] == ("F32" if i % 2 == 0 else "F64") and tuple(e["shape"]) == shape, e
    lo, hi = e["data_offsets"]
    assert data[lo:hi] == b, name
print("numpy ok")
)");
  EXPECT_EQ(rc, 0);
}

TEST(NumpyInterop, Float16BothWaysMatchesNumpy) {
  TempDir dir;
  // numpy -> posemb: all 65536 float16 patterns.
  // posemb -> numpy: awkward floats written as F16, compared with numpy's astype(float16).
  const std::vector<float> src = awkward_floats(200000);
  Tensor t;
  t.name = "x";
  t.dtype = DType::F32;
  t.shape = {src.size()};
  t.values = src;
  write_safetensors(dir.file("ours_f16.safetensors"), {t}, {}, DType::F16);
  test::write_all(dir.file("src_f32.bin"),
                  std::string(reinterpret_cast<const char*>(src.data()), src.size() * 4));
  const int rc = test::run_python(dir, R"(
import sys, os, json, struct
import numpy as np
d = sys.argv[1]
bits = np.arange(65536, dtype=np.uint32).astype("<u2")
h = json.dumps({"all": {"dtype": "F16", "shape": [65536], "data_offsets": [0, 131072]}}).encode()
open(os.path.join(d, "all_f16.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + bits.tobytes())
open(os.path.join(d, "all_f16_as_f32.bin"), "wb").write(bits.view("<f2").astype("<f4").tobytes())
raw = open(os.path.join(d, "ours_f16.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
ours = np.frombuffer(raw[8 + n:], dtype="<u2")
src = np.fromfile(os.path.join(d, "src_f32.bin"), dtype="<f4")
with np.errstate(over="ignore"):
    ref = src.astype("<f2").view("<u2")
bad = np.nonzero(ours != ref)[0]
if len(bad):
    print("f16 mismatches:", len(bad), [(float(src[i]), hex(ours[i]), hex(ref[i])) for i in bad[:5]])
    sys.exit(1)
)");
  ASSERT_EQ(rc, 0);
  const Tensor all = read_safetensors(dir.file("all_f16.safetensors")).at("all");
  const std::vector<float> ref = raw_as<float>(dir.file("all_f16_as_f32.bin"));
  ASSERT_EQ(all.values.size(), 65536u);
  for (std::size_t i = 0; i < 65536; ++i) {
    if (std::isnan(ref[i])) {
      EXPECT_TRUE(std::isnan(all.values[i])) << i;
    } else {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(all.values[i]), std::bit_cast<std::uint32_t>(ref[i]))
          << "float16 pattern " << i;
    }
  }
}

TEST(NumpyInterop, BFloat16BothWaysMatchesTorch) {
  TempDir dir;
  const std::vector<float> src = awkward_floats(200000);
  Tensor t;
  t.name = "x";
  t.shape = {src.size()};
  t.values = src;
  write_safetensors(dir.file("ours_bf16.safetensors"), {t}, {}, DType::BF16);
  test::write_all(dir.file("src_f32.bin"),
                  std::string(reinterpret_cast<const char*>(src.data()), src.size() * 4));
  const int rc = test::run_python(dir, R"(
import sys, os, json, struct
import numpy as np
import torch
d = sys.argv[1]
src = torch.from_numpy(np.fromfile(os.path.join(d, "src_f32.bin"), dtype="<f4"))
ref = src.to(torch.bfloat16).view(torch.int16).numpy().view("<u2")
raw = open(os.path.join(d, "ours_bf16.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
ours = np.frombuffer(raw[8 + n:], dtype="<u2")
bad = np.nonzero(ours != ref)[0]
if len(bad):
    print("bf16 mismatches:", len(bad), [(float(src[i]), hex(ours[i]), hex(ref[i])) for i in bad[:5]])
    sys.exit(1)
# torch -> posemb: every bfloat16 pattern except NaNs, and torch's float32 of each.
bits = torch.arange(65536, dtype=torch.int32).to(torch.int16)
b = bits.view(torch.bfloat16)
keep = ~torch.isnan(b)
b = b[keep]
h = json.dumps({"all": {"dtype": "BF16", "shape": [b.numel()], "data_offsets": [0, 2 * b.numel()]}}).encode()
open(os.path.join(d, "all_bf16.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + b.view(torch.int16).numpy().tobytes())
open(os.path.join(d, "all_bf16_as_f32.bin"), "wb").write(b.to(torch.float32).numpy().tobytes())
)");
  ASSERT_EQ(rc, 0);
  const Tensor all = read_safetensors(dir.file("all_bf16.safetensors")).at("all");
  const std::vector<float> ref = raw_as<float>(dir.file("all_bf16_as_f32.bin"));
  ASSERT_EQ(all.values.size(), ref.size());
  ASSERT_GT(ref.size(), 65000u);
  EXPECT_TRUE(same_bits(all.values, ref));
}

}  // namespace
}  // namespace posemb
