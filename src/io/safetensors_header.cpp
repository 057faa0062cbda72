#include "safetensors_header.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "posemb/memory.hpp"
#include "posemb/safetensors.hpp"

static_assert(std::endian::native == std::endian::little,
              "posemb's file readers assume a little-endian host");

namespace posemb::detail {
namespace {

using json = nlohmann::json;

// Bytes of memory parsing may take per header byte, at most (entries, names, shapes, then the
// tensors built from them); checked against the memory budget before parsing.
constexpr std::size_t kParseBytesPerHeaderByte = 8;

// Where the parser is in the header's fixed structure:
//   { "__metadata__": {"k": "v", ...}, "name": {"dtype": "F32", "shape": [..],
//     "data_offsets": [b, e]}, ... }
// Anything else at any place is an error, so nesting never goes deeper than three levels.
enum class Place : std::uint8_t { before, top, metadata, entry, shape, offsets, after };
enum class Field : std::uint8_t { none, dtype, shape, offsets };

class HeaderSax {
 public:
  HeaderSax(std::string_view source, std::uint64_t data_size)
      : source_(source), data_size_(data_size) {
    scratch_shape_.reserve(kSafetensorsMaxRank);
  }

  SafetensorsHeader take() && {
    SafetensorsHeader h;
    h.entries = std::move(entries_);
    h.metadata = std::move(metadata_);
    return h;
  }

  // --- nlohmann SAX interface ---
  bool null() { wrong("null"); }
  bool boolean(bool v) { wrong(v ? "true" : "false"); }
  bool binary(json::binary_t&) { wrong("binary"); }
  bool number_integer(json::number_integer_t v) { wrong(std::to_string(v)); }
  bool number_float(json::number_float_t, const json::string_t& text) {
    wrong(quote_untrusted(text, 40));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (place_ == Place::shape) {
      if (scratch_shape_.size() == kSafetensorsMaxRank) {
        fail(label() + " has a shape of more than " + std::to_string(kSafetensorsMaxRank) +
             " dimensions (the limit)");
      }
      scratch_shape_.push_back(v);
      return true;
    }
    if (place_ == Place::offsets) {
      if (offsets_seen_ == 2) fail(label() + ": data_offsets is not an array [begin, end]");
      (offsets_seen_ == 0 ? entry_.begin : entry_.end) = v;
      ++offsets_seen_;
      return true;
    }
    wrong(std::to_string(v));
  }
  bool string(json::string_t& s) {
    if (place_ == Place::metadata) {
      metadata_bytes_ += s.size();
      check_metadata_size();
      metadata_.emplace(std::move(metadata_key_), std::move(s));
      return true;
    }
    if (place_ == Place::entry && field_ == Field::dtype) {
      const auto d = dtype_from_name(s);
      if (!d) fail(label() + " has the unknown dtype " + quote_untrusted(s, 40));
      entry_.dtype = *d;
      return true;
    }
    wrong("a string");
  }
  bool start_object(std::size_t) {
    if (place_ == Place::before) {
      place_ = Place::top;
    } else if (place_ == Place::top && is_metadata_) {
      place_ = Place::metadata;
    } else if (place_ == Place::top) {
      place_ = Place::entry;
      field_ = Field::none;
      fields_seen_ = 0;
      offsets_seen_ = 0;
      scratch_shape_.clear();
    } else {
      wrong("an object");
    }
    return true;
  }
  bool key(json::string_t& k) {
    switch (place_) {
      case Place::top:
        top_key(k);
        return true;
      case Place::metadata:
        if (metadata_.size() == kSafetensorsMaxMetadataEntries) {
          fail("__metadata__ has more than " + std::to_string(kSafetensorsMaxMetadataEntries) +
               " entries (the limit)");
        }
        if (metadata_.count(k) != 0) {
          fail("__metadata__ has the key " + quote_untrusted(k) + " twice (keys must be unique)");
        }
        metadata_bytes_ += k.size();
        check_metadata_size();
        metadata_key_ = std::move(k);
        return true;
      default:  // Place::entry: the only other place where keys occur
        entry_field(k);
        return true;
    }
  }
  bool end_object() {
    if (place_ == Place::entry) {
      finish_entry();
      place_ = Place::top;
    } else if (place_ == Place::metadata) {
      place_ = Place::top;
    } else {
      place_ = Place::after;
    }
    return true;
  }
  bool start_array(std::size_t) {
    if (place_ == Place::entry && field_ == Field::shape) {
      place_ = Place::shape;
      return true;
    }
    if (place_ == Place::entry && field_ == Field::offsets) {
      place_ = Place::offsets;
      return true;
    }
    wrong("an array");
  }
  bool end_array() {
    if (place_ == Place::offsets && offsets_seen_ != 2) {
      fail(label() + ": data_offsets is not an array [begin, end]");
    }
    place_ = Place::entry;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e) {
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 9:
    // syntax error while parsing value - invalid literal; last read: '...'". The token is
    // shown separately, quoted.
    std::string reason = e.what();
    if (const auto colon = reason.find(": "); colon != std::string::npos) {
      reason.erase(0, colon + 2);
    }
    if (const auto last = reason.find("; last read"); last != std::string::npos) {
      reason.erase(last);
    }
    fail("header is not valid JSON at byte " + std::to_string(position) + ": " +
         quote_untrusted(reason, 160) + " (last read " + quote_untrusted(last_token, 40) + ")");
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw FileFormatError(source_, problem);
  }

  std::string label() const { return "tensor " + quote_untrusted(key_); }

  // A value of the wrong kind at the current place; `what` describes it ("an array", "-1").
  [[noreturn]] void wrong(const std::string& what) const {
    switch (place_) {
      case Place::before:
      case Place::after:
        fail("header must be a single JSON object");
      case Place::top:
        if (is_metadata_) fail("__metadata__ is not a JSON object (it is " + what + ")");
        fail(label() + " is not a JSON object (it is " + what + ")");
      case Place::metadata:
        fail("__metadata__ value of " + quote_untrusted(metadata_key_) + " is " + what +
             ", not a string");
      case Place::shape:
        fail(label() + ": a shape entry is " + what + ", not a non-negative integer");
      case Place::offsets:
        fail(label() + ": data_offsets[" + std::to_string(offsets_seen_) + "] is " + what +
             ", not a non-negative integer");
      case Place::entry:
        break;
    }
    switch (field_) {
      case Field::dtype:
        fail(label() + ": dtype is " + what + ", not a string");
      case Field::shape:
        fail(label() + ": shape is " + what + ", not an array");
      default:
        fail(label() + ": data_offsets is not an array [begin, end] (it is " + what + ")");
    }
  }

  void top_key(json::string_t& k) {
    is_metadata_ = k == "__metadata__";
    if (is_metadata_) {
      if (seen_metadata_) fail("header has the key '__metadata__' twice (keys must be unique)");
      seen_metadata_ = true;
      key_ = std::move(k);
      return;
    }
    if (entries_.size() == kSafetensorsMaxTensors) {
      fail("header has more than " + std::to_string(kSafetensorsMaxTensors) +
           " tensors (the limit)");
    }
    if (k.size() > kSafetensorsMaxNameBytes) {
      fail("tensor name " + quote_untrusted(k, 60) + " is longer than the limit of " +
           std::to_string(kSafetensorsMaxNameBytes) + " bytes");
    }
    key_ = std::move(k);
  }

  void entry_field(const json::string_t& k) {
    Field f = Field::none;
    if (k == "dtype") {
      f = Field::dtype;
    } else if (k == "shape") {
      f = Field::shape;
    } else if (k == "data_offsets") {
      f = Field::offsets;
    } else {
      fail(label() + " has the unknown field " + quote_untrusted(k, 60) +
           " (expected dtype, shape, data_offsets)");
    }
    const auto bit = static_cast<unsigned>(1u << static_cast<unsigned>(f));
    if ((fields_seen_ & bit) != 0) fail(label() + " has the field '" + k + "' twice");
    fields_seen_ |= bit;
    field_ = f;
  }

  void check_metadata_size() const {
    if (metadata_bytes_ > kSafetensorsMaxMetadataBytes) {
      fail("__metadata__ holds more than " + std::to_string(kSafetensorsMaxMetadataBytes) +
           " bytes of keys and values (the limit)");
    }
  }

  void finish_entry() {
    static constexpr unsigned kAll = (1u << 1) | (1u << 2) | (1u << 3);
    if (fields_seen_ != kAll) {
      std::string missing;
      for (auto [f, name] : {std::pair{Field::dtype, "dtype"}, std::pair{Field::shape, "shape"},
                             std::pair{Field::offsets, "data_offsets"}}) {
        if ((fields_seen_ & (1u << static_cast<unsigned>(f))) == 0) {
          missing += (missing.empty() ? "" : ", ") + std::string(name);
        }
      }
      fail(label() + " lacks " + missing + " (each tensor has dtype, shape, data_offsets)");
    }
    SafetensorsEntry& e = entry_;
    e.shape.assign(scratch_shape_.begin(), scratch_shape_.end());
    std::uint64_t count = 1;
    for (std::uint64_t dim : e.shape) {
      if (dim != 0 && count > std::numeric_limits<std::uint64_t>::max() / dim) {
        fail(label() + " has shape " + shape_string(e.shape) +
             ", whose element count overflows 64 bits");
      }
      count *= dim;
    }
    const std::uint64_t size = dtype_size(e.dtype);
    if (count > std::numeric_limits<std::uint64_t>::max() / size) {
      fail(label() + " has shape " + shape_string(e.shape) +
           ", whose byte count overflows 64 bits");
    }
    const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.begin > e.end) fail(label() + " has data_offsets " + range + " reversed");
    if (e.end > data_size_) {
      fail(label() + " has data_offsets " + range + " outside the " + std::to_string(data_size_) +
           "-byte data section");
    }
    if (e.end - e.begin != count * size) {
      fail(label() + " has shape " + shape_string(e.shape) + " of " +
           std::string(dtype_name(e.dtype)) + ", which needs " + std::to_string(count * size) +
           " bytes, but data_offsets " + range + " span " + std::to_string(e.end - e.begin));
    }
    e.name = std::move(key_);
    entries_.push_back(std::move(e));
    entry_ = SafetensorsEntry{};
  }

  std::string_view source_;
  std::uint64_t data_size_;
  Place place_ = Place::before;
  Field field_ = Field::none;
  bool is_metadata_ = false;
  bool seen_metadata_ = false;
  unsigned fields_seen_ = 0;
  int offsets_seen_ = 0;
  std::string key_;           // the current top-level key (tensor name)
  std::string metadata_key_;  // the current __metadata__ key
  std::size_t metadata_bytes_ = 0;
  SafetensorsEntry entry_;
  std::vector<std::uint64_t> scratch_shape_;
  std::vector<SafetensorsEntry> entries_;
  Metadata metadata_;
};

// Names must be unique: sorted, equal neighbours are duplicates (O(n log n) for any input).
void check_unique_names(const std::vector<SafetensorsEntry>& entries, std::string_view source) {
  std::vector<std::string_view> names(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) names[i] = entries[i].name;
  std::sort(names.begin(), names.end());
  const auto dup = std::adjacent_find(names.begin(), names.end());
  if (dup != names.end()) {
    throw FileFormatError(source, "header has the tensor name " + quote_untrusted(*dup) +
                                      " twice (names must be unique)");
  }
}

// Sorts entries by range and checks that the ranges tile the data section exactly.
void check_tiling(std::vector<SafetensorsEntry>& entries, std::uint64_t data_size,
                  std::string_view source) {
  std::sort(entries.begin(), entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  std::uint64_t expected = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const SafetensorsEntry& e : entries) {
    if (e.begin < expected) {
      throw FileFormatError(source, "tensors " + quote_untrusted(prev->name) + " and " +
                                        quote_untrusted(e.name) + " overlap (bytes " +
                                        std::to_string(e.begin) + " to " +
                                        std::to_string(expected) + ")");
    }
    if (e.begin > expected) {
      throw FileFormatError(source, "bytes " + std::to_string(expected) + " to " +
                                        std::to_string(e.begin) +
                                        " of the data section belong to no tensor (a hole before " +
                                        quote_untrusted(e.name) + ")");
    }
    expected = e.end;
    prev = &e;
  }
  if (expected != data_size) {
    throw FileFormatError(source, "the last " + std::to_string(data_size - expected) +
                                      " bytes of the data section belong to no tensor");
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file,
                                           std::string_view source) {
  if (file.size() < 8) {
    throw FileFormatError(source, "the file has " + std::to_string(file.size()) +
                                      " bytes, fewer than the 8-byte header length of safetensors");
  }
  std::uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  if (n > kSafetensorsMaxHeaderBytes) {
    throw FileFormatError(source, "header length " + std::to_string(n) + " exceeds the " +
                                      std::to_string(kSafetensorsMaxHeaderBytes) +
                                      "-byte limit (not a safetensors file, or corrupt)");
  }
  if (n > file.size() - 8) {
    throw FileFormatError(source, "header length " + std::to_string(n) + " but only " +
                                      std::to_string(file.size() - 8) +
                                      " bytes follow (truncated file?)");
  }
  const char* text = reinterpret_cast<const char*>(file.data()) + 8;
  if (n == 0 || text[0] != '{') {
    throw FileFormatError(source, "header does not start with '{': it must be a JSON object");
  }
  // JSON text holds no NUL byte (strings escape it as \u0000), and the JSON parser would take one
  // for the end of the input, ignoring whatever follows it.
  if (const void* nul = std::memchr(text, 0, static_cast<std::size_t>(n)); nul != nullptr) {
    throw FileFormatError(source, "header holds a NUL byte at byte " +
                                      std::to_string(static_cast<const char*>(nul) - text) +
                                      " (JSON text cannot; padding is spaces)");
  }
  check_allocation("read_safetensors: parsing a header of " + std::to_string(n) + " bytes",
                   saturating_mul(static_cast<std::size_t>(n), kParseBytesPerHeaderByte));
  const std::uint64_t data_size = file.size() - 8 - n;
  HeaderSax sax(source, data_size);
  json::sax_parse(text, text + n, &sax);  // errors throw from the handler
  SafetensorsHeader h = std::move(sax).take();
  check_unique_names(h.entries, source);
  check_tiling(h.entries, data_size, source);
  h.data_start = static_cast<std::size_t>(8 + n);
  return h;
}

}  // namespace posemb::detail
