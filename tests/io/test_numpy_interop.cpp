// Interoperability with numpy and torch (Debian's /usr/bin/python3): files they write, posemb
// reads, and the reverse, compared bit for bit; float16 and bfloat16 conversions against their
// conversions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <sstream>
#include <string>

#include "file_test_util.hpp"
#include "posemb/memory.hpp"
#include "posemb/npy.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

using test::same_bits;
using test::TempDir;

std::string bytes_of(const Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.bytes().data()), t.bytes().size());
}

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

// The values of v that stay finite in a 16-bit float whose rounding reaches infinity at
// `overflow` (its largest finite value plus half an ulp): posemb refuses the others
// (std::range_error; tests/io/test_hostile_numbers.cpp), where numpy and torch would store
// infinity.
std::vector<float> finite_in(std::vector<float> v, float overflow) {
  std::erase_if(v, [&](float f) { return std::isfinite(f) && std::fabs(f) >= overflow; });
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
    const std::string bin = test::read_all(dir.file(std::string(name) + ".bin"));
    EXPECT_EQ(bytes_of(t), bin) << name;
    EXPECT_EQ(bytes_of(st.at(name)), bin) << name;
    EXPECT_EQ(st.at(name).shape(), t.shape()) << name;
  }
  EXPECT_EQ(read_npy(dir.file("a.npy")).shape(), (std::vector<std::uint64_t>{33, 17}));
}

TEST(NumpyInterop, NumpyReadsWhatPosembWrites) {
  TempDir dir;
  std::vector<Tensor> ts;
  const std::vector<std::vector<std::uint64_t>> shapes = {{33, 17}, {1024}, {2, 3, 4}, {0, 5}, {}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = std::string("t").append(std::to_string(i));
    const Tensor t = i % 2 == 0 ? test::random_tensor<float>(name, shapes[i], i)
                                : test::random_tensor<double>(name, shapes[i], i);
    test::write_all(dir.file(name + ".bin"), bytes_of(t));
    write_npy(dir.file(name + ".npy"), t);
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
  const std::vector<float> src = finite_in(awkward_floats(200000), 65520.0f);
  const Tensor t = test::tensor_of<float>("x", {src.size()}, src);
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
  const std::vector<float> got = test::values_of<float>(all.astype(DType::F32));
  ASSERT_EQ(got.size(), 65536u);
  for (std::size_t i = 0; i < 65536; ++i) {
    if (std::isnan(ref[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(ref[i]))
          << "float16 pattern " << i;
    }
  }
}

TEST(NumpyInterop, BFloat16BothWaysMatchesTorch) {
  TempDir dir;
  const std::vector<float> src = finite_in(awkward_floats(200000), 0x1.ffp127f);
  const Tensor t = test::tensor_of<float>("x", {src.size()}, src);
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
  const std::vector<float> got = test::values_of<float>(all.astype(DType::F32));
  ASSERT_EQ(got.size(), ref.size());
  ASSERT_GT(ref.size(), 65000u);
  EXPECT_TRUE(same_bits(got, ref));
}

// Every dtype .npy holds besides f4/f8: numpy writes, posemb reads the same bytes; posemb
// writes, numpy loads the same array.
TEST(NumpyInterop, IntegerBoolAndFloat16NpyBothWays) {
  TempDir dir;
  const int rc = test::run_python(dir, R"(
import sys, os
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(3)
for dt in ["<f2", "|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"]:
    a = np.frombuffer(rng.bytes(7 * 5 * np.dtype(dt).itemsize), dtype=dt).reshape(7, 5).copy()
    if dt == "|b1":
        a = rng.integers(0, 2, size=(7, 5)).astype(dt)
    name = dt[1:]
    np.save(os.path.join(d, "np_" + name + ".npy"), a)
    open(os.path.join(d, "np_" + name + ".bin"), "wb").write(a.tobytes())
)");
  ASSERT_EQ(rc, 0);
  const std::vector<std::pair<std::string, DType>> types = {
      {"f2", DType::F16}, {"b1", DType::BOOL}, {"i1", DType::I8},  {"u1", DType::U8},
      {"i2", DType::I16}, {"u2", DType::U16},  {"i4", DType::I32}, {"u4", DType::U32},
      {"i8", DType::I64}, {"u8", DType::U64}};
  for (const auto& [name, dtype] : types) {
    const Tensor t = read_npy(dir.file("np_" + name + ".npy"));
    EXPECT_EQ(t.dtype(), dtype) << name;
    EXPECT_EQ(t.shape(), (std::vector<std::uint64_t>{7, 5})) << name;
    EXPECT_EQ(bytes_of(t), test::read_all(dir.file("np_" + name + ".bin"))) << name;
    write_npy(dir.file("ours_" + name + ".npy"), t);
  }
  const int back = test::run_python(dir, R"(
import sys, os
import numpy as np
d = sys.argv[1]
for dt in ["<f2", "|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"]:
    name = dt[1:]
    a = np.load(os.path.join(d, "ours_" + name + ".npy"))
    b = np.load(os.path.join(d, "np_" + name + ".npy"))
    assert a.dtype == b.dtype and a.shape == b.shape, (name, a.dtype, a.shape)
    assert a.tobytes() == b.tobytes(), name
print("numpy reads posemb's integer, bool and float16 .npy files")
)");
  EXPECT_EQ(back, 0);
}

// numpy writes Fortran order for a column-major array (np.save(path, a.T) of a C array) and '>'
// dtypes for a big-endian one; np.load reads both, and so does posemb, into C order and
// little-endian: the same bytes as np.ascontiguousarray(a).astype(little-endian dtype).
TEST(NumpyInterop, FortranOrderAndBigEndianReadAsNumpyLoadsThem) {
  TempDir dir;
  const int rc = test::run_python(dir, R"(
import sys, os
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(11)
shapes = [(37, 70), (1, 9), (9, 1), (5,), (3, 4, 5), (2, 1, 3, 4), (0, 6), (33, 17, 1)]
names = []
for dt in ["<f4", "<f8", "<f2", "<i2", "<u4", "<i8", "|u1", "|b1"]:
    for si, shape in enumerate(shapes):
        n = int(np.prod(shape))
        a = np.frombuffer(rng.bytes(n * np.dtype(dt).itemsize), dtype=dt).reshape(shape)
        if dt == "|b1":
            a = rng.integers(0, 2, size=shape).astype(dt)
        for order in ["F", "C"]:
            for endian in ["<", ">"]:
                b = np.asarray(a, order=order)
                if endian == ">":
                    b = b.astype(b.dtype.newbyteorder(">"))
                name = "%s_%d_%s%s" % (dt[1:], si, order, "be" if endian == ">" else "le")
                np.save(os.path.join(d, name + ".npy"), b)
                expect = np.ascontiguousarray(b).astype(a.dtype.newbyteorder("<"))
                open(os.path.join(d, name + ".bin"), "wb").write(expect.tobytes())
                names.append(name)
# The files really are Fortran order and big-endian where the name says so.
with open(os.path.join(d, "f4_0_Fbe.npy"), "rb") as f:
    head = f.read(128).decode("latin1")
assert "'fortran_order': True" in head and "'>f4'" in head, head
open(os.path.join(d, "names.txt"), "w").write("\n".join(names))
)");
  ASSERT_EQ(rc, 0);
  std::istringstream names(test::read_all(dir.file("names.txt")));
  std::size_t checked = 0;
  for (std::string name; std::getline(names, name);) {
    const Tensor t = read_npy(dir.file(name + ".npy"));
    const Tensor c = read_npy(dir.file(name.substr(0, name.size() - 3) + "Cle.npy"));
    ASSERT_EQ(bytes_of(t), test::read_all(dir.file(name + ".bin"))) << name;
    EXPECT_EQ(t.shape(), c.shape()) << name;
    EXPECT_EQ(t.dtype(), c.dtype()) << name;
    EXPECT_EQ(bytes_of(t), bytes_of(c)) << name;
    // A file in posemb's own layout stays a view of the mapping; a decoded one owns its bytes.
    const bool plain = name.ends_with("Cle");
    if (t.element_count() > 0 && plain) {
      EXPECT_TRUE(t.is_view()) << name;
    }
    if (t.element_count() > 0 && name.ends_with("be") && dtype_size(t.dtype()) > 1) {
      EXPECT_FALSE(t.is_view()) << name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 8u * 8u * 4u);
  // The 37 x 70 F32 table read from Fortran order is the table: row r is a.T's column r.
  const Matrix<float> m = read_npy(dir.file("f4_0_Fle.npy")).to_matrix<float>();
  EXPECT_EQ(m.rows(), 37u);
  EXPECT_EQ(m.cols(), 70u);
  // The decoded copy is an allocation like any other: over the budget it is refused, while the
  // same table in C order, mapped, needs none.
  set_memory_limit(4096);
  EXPECT_THROW(read_npy(dir.file("f4_0_Fle.npy")), MemoryLimitExceeded);
  EXPECT_THROW(read_npy(dir.file("f4_0_Cbe.npy")), MemoryLimitExceeded);
  EXPECT_NO_THROW(read_npy(dir.file("f4_0_Cle.npy")));
  set_memory_limit(0);
}

// float64 -> float16 in one rounding, as numpy's astype does (never through float32 first).
TEST(NumpyInterop, Float64ToFloat16MatchesNumpy) {
  TempDir dir;
  std::mt19937_64 rng(5);
  std::vector<double> v;
  while (v.size() < 100000) {
    const double base = std::ldexp(1.0 + static_cast<double>(rng() % 1024) / 1024.0,
                                   static_cast<int>(rng() % 50) - 30);
    const double mid = base + std::ldexp(1.0, std::ilogb(base) - 11);  // a float16 midpoint
    v.push_back(std::nextafter(mid, rng() % 2 ? 0.0 : 1e308) * (rng() % 2 ? 1 : -1));
    v.push_back(std::bit_cast<double>(rng()));
  }
  const Tensor t = test::tensor_of<double>("x", {v.size()}, v);
  test::write_all(dir.file("src_f64.bin"), bytes_of(t));
  test::write_all(dir.file("ours_f16.bin"), bytes_of(t.astype(DType::F16)));
  const int rc = test::run_python(dir, R"(
import sys, os
import numpy as np
d = sys.argv[1]
src = np.fromfile(os.path.join(d, "src_f64.bin"), dtype="<f8")
ours = np.fromfile(os.path.join(d, "ours_f16.bin"), dtype="<u2")
with np.errstate(over="ignore", invalid="ignore"):
    ref = src.astype("<f2").view("<u2")
nan = np.isnan(src)
bad = np.nonzero((ours != ref) & ~nan)[0]
assert np.isnan(ours[nan].view("<f2")).all()
if len(bad):
    print("f64 -> f16 mismatches:", len(bad), [(float(src[i]), hex(ours[i]), hex(ref[i])) for i in bad[:5]])
    sys.exit(1)
)");
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace posemb
