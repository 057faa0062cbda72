#include "posemb/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "element_convert.hpp"
#include "mapped_file.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/memory.hpp"
#include "readers.hpp"
#include "safetensors_header.hpp"

namespace posemb {
namespace {

// s as a JSON string literal; throws std::invalid_argument when s is not valid UTF-8.
std::string json_string(const std::string& s, const std::string& op, std::string_view what) {
  try {
    return nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(op + std::string(what) + " " + quote_untrusted(s) +
                                " is not valid UTF-8");
  }
}

// Writes n elements of float dtype `from` at src to the sink as Dst, converted in chunks.
// A finite value that would become infinity is refused (site names the tensor, row and column).
template <class Dst>
void write_converted(FileSink& sink, DType from, const std::byte* src, std::size_t n,
                     detail::ConvertSite site) {
  constexpr std::size_t kChunk = 16384;
  std::vector<Dst> buf(std::min(n, kChunk));
  const std::size_t src_size = dtype_size(from);
  for (std::size_t i = 0; i < n; i += kChunk) {
    const std::size_t m = std::min(kChunk, n - i);
    site.first = i;
    detail::convert_floats(from, src + i * src_size, buf.data(), m, site);
    sink.write(buf.data(), m * sizeof(Dst));
  }
}

void write_tensor(FileSink& sink, const Tensor& t, DType out) {
  if (out == t.dtype()) {
    sink.write(t.bytes().data(), t.bytes().size());
    return;
  }
  const auto n = static_cast<std::size_t>(t.element_count());
  const std::string what = "write_safetensors: tensor " + quote_untrusted(t.name());
  const detail::ConvertSite site{
      what, 0, t.shape().size() >= 2 ? static_cast<std::size_t>(t.shape().back()) : 0, true};
  switch (out) {
    case DType::F16:
      write_converted<float16>(sink, t.dtype(), t.bytes().data(), n, site);
      break;
    case DType::BF16:
      write_converted<bfloat16>(sink, t.dtype(), t.bytes().data(), n, site);
      break;
    case DType::F32:
      write_converted<float>(sink, t.dtype(), t.bytes().data(), n, site);
      break;
    default:
      write_converted<double>(sink, t.dtype(), t.bytes().data(), n, site);
      break;
  }
}

}  // namespace

namespace detail {

TensorFile parse_safetensors(std::span<const std::byte> bytes, std::string_view source,
                             const std::shared_ptr<const void>& owner) {
  SafetensorsHeader h = parse_safetensors_header(bytes, source);
  if (!owner) {
    check_allocation("read_safetensors_bytes", bytes.size() - h.data_start);
  }
  TensorFile file;
  file.metadata = std::move(h.metadata);
  file.tensors.reserve(h.entries.size());
  const std::byte* data = bytes.data() + h.data_start;
  for (SafetensorsEntry& e : h.entries) {
    const std::span<const std::byte> range(data + e.begin,
                                           static_cast<std::size_t>(e.end - e.begin));
    file.tensors.push_back(
        file_tensor(std::move(e.name), e.dtype, std::move(e.shape), range, owner));
  }
  return file;
}

}  // namespace detail

TensorFile read_safetensors_bytes(std::span<const std::byte> bytes, std::string_view source) {
  return detail::parse_safetensors(bytes, source, nullptr);
}

TensorFile read_safetensors(const std::string& path) {
  const auto file = detail::MappedFile::open(path, "read_safetensors");
  return detail::parse_safetensors(file->bytes(), path, file);
}

void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors,
                       const Metadata& metadata, std::optional<DType> dtype) {
  detail::check_path(path, "write_safetensors");
  const std::string op = "write_safetensors: " + quote_untrusted(path) + ": ";
  if (dtype && !dtype_is_float(*dtype)) {
    throw std::invalid_argument(op + "cannot convert to dtype " + std::string(dtype_name(*dtype)) +
                                " (F16, BF16, F32, F64 only)");
  }
  if (tensors.size() > kSafetensorsMaxTensors) {
    throw std::invalid_argument(op + std::to_string(tensors.size()) +
                                " tensors, over the limit of " +
                                std::to_string(kSafetensorsMaxTensors));
  }
  if (metadata.size() > kSafetensorsMaxMetadataEntries) {
    throw std::invalid_argument(op + std::to_string(metadata.size()) +
                                " metadata entries, over the limit of " +
                                std::to_string(kSafetensorsMaxMetadataEntries));
  }
  std::size_t metadata_bytes = 0;
  for (const auto& [k, v] : metadata) metadata_bytes += k.size() + v.size();
  if (metadata_bytes > kSafetensorsMaxMetadataBytes) {
    throw std::invalid_argument(op + "metadata of " + std::to_string(metadata_bytes) +
                                " bytes, over the limit of " +
                                std::to_string(kSafetensorsMaxMetadataBytes));
  }
  // Names: non-empty, within the limit, not the metadata key, unique (sorted: O(n log n)).
  std::vector<std::string_view> names;
  names.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    const std::string& name = t.name();
    if (name.empty() || name == "__metadata__" || name.size() > kSafetensorsMaxNameBytes) {
      throw std::invalid_argument(op + "a tensor cannot be called " + quote_untrusted(name) +
                                  " (names are 1 to " + std::to_string(kSafetensorsMaxNameBytes) +
                                  " bytes, not '__metadata__')");
    }
    if (t.shape().size() > kSafetensorsMaxRank) {
      throw std::invalid_argument(
          op + "tensor " + quote_untrusted(name) + " has " + std::to_string(t.shape().size()) +
          " dimensions, over the limit of " + std::to_string(kSafetensorsMaxRank));
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  if (const auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end()) {
    throw std::invalid_argument(op + "tensor " + quote_untrusted(*dup) + " appears twice");
  }

  // The header, built as text (linear in the number of tensors).
  std::string text = "{";
  if (!metadata.empty()) {
    text += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) text += ',';
      first = false;
      text += json_string(k, op, "metadata key");
      text += ':';
      text += json_string(v, op, "metadata value");
    }
    text += '}';
  }
  std::uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    const DType out = dtype && dtype_is_float(t.dtype()) ? *dtype : t.dtype();
    const std::uint64_t nbytes = t.element_count() * dtype_size(out);  // the count fits memory
    if (nbytes > std::numeric_limits<std::uint64_t>::max() - offset) {
      throw std::invalid_argument(op + "the tensors hold more than 2^64 bytes");
    }
    if (text.size() > 1) text += ',';
    text += json_string(t.name(), op, "tensor name");
    text += ":{\"dtype\":\"";
    text += dtype_name(out);
    text += "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape().size(); ++i) {
      if (i != 0) text += ',';
      text += std::to_string(t.shape()[i]);
    }
    text += "],\"data_offsets\":[" + std::to_string(offset) + "," +
            std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
    if (text.size() > kSafetensorsMaxHeaderBytes) break;  // refused below
  }
  text += '}';
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  if (text.size() > kSafetensorsMaxHeaderBytes) {
    throw std::invalid_argument(op + "the header would be over the " +
                                std::to_string(kSafetensorsMaxHeaderBytes) + "-byte limit");
  }
  write_file_atomically(path, "write_safetensors", [&](FileSink& sink) {
    const std::uint64_t n = text.size();
    sink.write(&n, 8);
    sink.write(text.data(), text.size());
    for (const Tensor& t : tensors) {
      write_tensor(sink, t, dtype && dtype_is_float(t.dtype()) ? *dtype : t.dtype());
    }
  });
}

}  // namespace posemb
