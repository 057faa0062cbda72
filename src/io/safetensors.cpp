#include "posemb/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "mapped_file.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/half.hpp"

static_assert(std::endian::native == std::endian::little,
              "posemb's file readers assume a little-endian host");

namespace posemb {
namespace {

using nlohmann::json;
constexpr int kMaxJsonDepth = 16;

// A header entry, validated but not yet decoded.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin;
  std::uint64_t end;
};

// Parses the JSON header, refusing duplicate keys at any level and deep nesting.
json parse_header(std::string_view text, std::string_view source) {
  std::vector<std::set<std::string>> keys;  // the keys seen in each open object
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxJsonDepth) {
      throw FileFormatError(
          source, "header JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second) {
        throw FileFormatError(source,
                              "header has the key '" + k + "' twice (names must be unique)");
      }
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    throw FileFormatError(source, std::string("header is not valid JSON: ") + e.what());
  }
}

std::uint64_t get_u64(const json& v, std::string_view source, const std::string& what) {
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0)) {
    throw FileFormatError(source, what + " is " + v.dump() + ", not a non-negative integer");
  }
  return v.get<std::uint64_t>();
}

Entry parse_entry(const std::string& name, const json& v, std::uint64_t data_size,
                  std::string_view source) {
  const std::string what = "tensor '" + name + "'";
  if (!v.is_object()) throw FileFormatError(source, what + " is not a JSON object");
  for (const auto& [k, _] : v.items()) {
    if (k != "dtype" && k != "shape" && k != "data_offsets") {
      throw FileFormatError(source, what + " has the unknown field '" + k + "'");
    }
  }
  if (!v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
    throw FileFormatError(source, what + " lacks one of dtype, shape, data_offsets");
  }
  Entry e{name, DType::F32, {}, 0, 0};
  const json& dt = v["dtype"];
  if (!dt.is_string()) throw FileFormatError(source, what + ": dtype is not a string");
  const auto d = dtype_from_name(dt.get_ref<const std::string&>());
  if (!d) {
    throw FileFormatError(
        source, what + " has the unknown dtype '" + dt.get_ref<const std::string&>() + "'");
  }
  e.dtype = *d;
  const json& sh = v["shape"];
  if (!sh.is_array()) throw FileFormatError(source, what + ": shape is not an array");
  for (const json& dim : sh) e.shape.push_back(get_u64(dim, source, what + ": a shape entry"));
  std::uint64_t count = 1;
  for (std::uint64_t dim : e.shape) {
    if (dim != 0 && count > std::numeric_limits<std::uint64_t>::max() / dim) {
      throw FileFormatError(source, what + " has shape " + shape_string(e.shape) +
                                        ", whose element count overflows 64 bits");
    }
    count *= dim;
  }
  const std::uint64_t size = dtype_size(e.dtype);
  if (count > std::numeric_limits<std::uint64_t>::max() / size) {
    throw FileFormatError(source, what + " has shape " + shape_string(e.shape) +
                                      ", whose byte count overflows 64 bits");
  }
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2) {
    throw FileFormatError(source, what + ": data_offsets is not an array [begin, end]");
  }
  e.begin = get_u64(off[0], source, what + ": data_offsets[0]");
  e.end = get_u64(off[1], source, what + ": data_offsets[1]");
  const std::string range =
      std::string("[") + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  if (e.begin > e.end)
    throw FileFormatError(source, what + " has data_offsets " + range + " reversed");
  if (e.end > data_size) {
    throw FileFormatError(source, what + " has data_offsets " + range + " outside the " +
                                      std::to_string(data_size) + "-byte data section");
  }
  if (e.end - e.begin != count * size) {
    throw FileFormatError(source, what + " has shape " + shape_string(e.shape) + " of " +
                                      std::string(dtype_name(e.dtype)) + ", which needs " +
                                      std::to_string(count * size) + " bytes, but data_offsets " +
                                      range + " span " + std::to_string(e.end - e.begin));
  }
  return e;
}

Tensor decode(const Entry& e, const std::byte* data) {
  Tensor t;
  t.name = e.name;
  t.dtype = e.dtype;
  t.shape = e.shape;
  const std::byte* p = data + e.begin;
  const auto n = static_cast<std::size_t>((e.end - e.begin) / dtype_size(e.dtype));
  switch (e.dtype) {
    case DType::F32:
      t.values.resize(n);
      if (n != 0) std::memcpy(t.values.data(), p, n * 4);
      break;
    case DType::F64:
      t.values_f64.resize(n);
      if (n != 0) std::memcpy(t.values_f64.data(), p, n * 8);
      break;
    case DType::F16:
    case DType::BF16:
      t.values.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        t.values[i] = e.dtype == DType::F16 ? detail::f16_to_f32(h) : detail::bf16_to_f32(h);
      }
      break;
    default:
      break;  // known but not decoded
  }
  return t;
}

// Writes n values of src converted to dtype.
template <class T>
void write_values(FileSink& sink, const T* src, std::size_t n, DType dtype) {
  constexpr std::size_t kChunk = 4096;
  alignas(8) unsigned char buf[kChunk * 8];
  for (std::size_t i = 0; i < n; i += kChunk) {
    const std::size_t m = std::min(kChunk, n - i);
    for (std::size_t j = 0; j < m; ++j) {
      const T v = src[i + j];
      switch (dtype) {
        case DType::F32: {
          const auto f = static_cast<float>(v);
          std::memcpy(buf + 4 * j, &f, 4);
          break;
        }
        case DType::F64: {
          const auto d = static_cast<double>(v);
          std::memcpy(buf + 8 * j, &d, 8);
          break;
        }
        case DType::F16: {
          const std::uint16_t h = detail::f32_to_f16(static_cast<float>(v));
          std::memcpy(buf + 2 * j, &h, 2);
          break;
        }
        default: {
          const std::uint16_t h = detail::f32_to_bf16(static_cast<float>(v));
          std::memcpy(buf + 2 * j, &h, 2);
          break;
        }
      }
    }
    sink.write(buf, m * dtype_size(dtype));
  }
}

}  // namespace

TensorFile read_safetensors_bytes(std::span<const std::byte> bytes, std::string_view source) {
  if (bytes.size() < 8) {
    throw FileFormatError(source, "the file has " + std::to_string(bytes.size()) +
                                      " bytes, fewer than the 8-byte header length of safetensors");
  }
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kSafetensorsMaxHeaderBytes) {
    throw FileFormatError(source, "header length " + std::to_string(n) + " exceeds the " +
                                      std::to_string(kSafetensorsMaxHeaderBytes) +
                                      "-byte limit (not a safetensors file, or corrupt)");
  }
  if (n > bytes.size() - 8) {
    throw FileFormatError(source, "header length " + std::to_string(n) + " but only " +
                                      std::to_string(bytes.size() - 8) +
                                      " bytes follow (truncated file?)");
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8,
                              static_cast<std::size_t>(n));
  if (text.empty() || text.front() != '{') {
    throw FileFormatError(source, "header does not start with '{': it must be a JSON object");
  }
  const json header = parse_header(text, source);
  if (!header.is_object()) throw FileFormatError(source, "header is not a JSON object");

  const std::byte* data = bytes.data() + 8 + n;
  const std::uint64_t data_size = bytes.size() - 8 - n;
  TensorFile file;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw FileFormatError(source, "__metadata__ is not a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          throw FileFormatError(
              source, "__metadata__ value of '" + mk + "' is " + mv.dump() + ", not a string");
        }
        file.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    entries.push_back(parse_entry(key, value, data_size, source));
  }
  // The ranges, in file order, must tile the data section exactly.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t expected = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < expected) {
      throw FileFormatError(source, "tensors '" + prev->name + "' and '" + e.name +
                                        "' overlap (bytes " + std::to_string(e.begin) + " to " +
                                        std::to_string(expected) + ")");
    }
    if (e.begin > expected) {
      throw FileFormatError(
          source, "bytes " + std::to_string(expected) + " to " + std::to_string(e.begin) +
                      " of the data section belong to no tensor (a hole before '" + e.name + "')");
    }
    expected = e.end;
    prev = &e;
  }
  if (expected != data_size) {
    throw FileFormatError(source, "the last " + std::to_string(data_size - expected) +
                                      " bytes of the data section belong to no tensor");
  }
  file.tensors.reserve(entries.size());
  for (const Entry& e : entries) file.tensors.push_back(decode(e, data));
  return file;
}

TensorFile read_safetensors(const std::string& path) {
  const detail::MappedFile f(path, "read_safetensors");
  return read_safetensors_bytes(f.bytes(), path);
}

void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors,
                       const Metadata& metadata, std::optional<DType> dtype) {
  const std::string op = "write_safetensors: '" + path + "': ";
  if (dtype && !dtype_is_float(*dtype)) {
    throw std::invalid_argument(op + "cannot write dtype " + std::string(dtype_name(*dtype)));
  }
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    const std::string what = "tensor '" + t.name + "'";
    if (t.name.empty() || t.name == "__metadata__") {
      throw std::invalid_argument(op + "a tensor cannot be called '" + t.name + "'");
    }
    if (!names.insert(t.name).second) throw std::invalid_argument(op + what + " appears twice");
    const DType out = dtype.value_or(t.dtype);
    if (!dtype_is_float(t.dtype) || !dtype_is_float(out)) {
      throw std::invalid_argument(op + what + ": only F16, BF16, F32 and F64 can be written");
    }
    const std::uint64_t count = t.element_count();
    const std::size_t have = t.dtype == DType::F64 ? t.values_f64.size() : t.values.size();
    if (have != count) {
      throw std::invalid_argument(op + what + " has shape " + shape_string(t.shape) + " (" +
                                  std::to_string(count) + " elements) but holds " +
                                  std::to_string(have) + " values");
    }
    const std::uint64_t nbytes = count * dtype_size(out);
    header[t.name] = {{"dtype", std::string(dtype_name(out))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(op + "names and metadata must be valid UTF-8: " + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  if (text.size() > kSafetensorsMaxHeaderBytes) {
    throw std::invalid_argument(op + "the header would be " + std::to_string(text.size()) +
                                " bytes, over the 100 MB limit");
  }
  write_file_atomically(path, "write_safetensors", [&](FileSink& sink) {
    const std::uint64_t n = text.size();
    sink.write(&n, 8);
    sink.write(text.data(), text.size());
    for (const Tensor& t : tensors) {
      const DType out = dtype.value_or(t.dtype);
      if (t.dtype == DType::F64) {
        write_values(sink, t.values_f64.data(), t.values_f64.size(), out);
      } else {
        write_values(sink, t.values.data(), t.values.size(), out);
      }
    }
  });
}

}  // namespace posemb
