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

// The __metadata__ object as it is read: unique string keys with string values, within the
// limits of posemb/safetensors.hpp.
class MetadataReader {
 public:
  explicit MetadataReader(std::string_view source) : source_(source) {}

  void key(json::string_t& k) {
    if (metadata_.size() == kSafetensorsMaxMetadataEntries) {
      fail("__metadata__ has more than " + std::to_string(kSafetensorsMaxMetadataEntries) +
           " entries (the limit)");
    }
    if (metadata_.count(k) != 0) {
      fail("__metadata__ has the key " + quote_untrusted(k) + " twice (keys must be unique)");
    }
    add_bytes(k.size());
    key_ = std::move(k);
  }
  void value(json::string_t& v) {
    add_bytes(v.size());
    metadata_.emplace(std::move(key_), std::move(v));
  }
  // The key whose value comes next.
  const std::string& key() const { return key_; }
  Metadata take() && { return std::move(metadata_); }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw FileFormatError(source_, problem);
  }
  void add_bytes(std::size_t n) {
    bytes_ += n;
    if (bytes_ > kSafetensorsMaxMetadataBytes) {
      fail("__metadata__ holds more than " + std::to_string(kSafetensorsMaxMetadataBytes) +
           " bytes of keys and values (the limit)");
    }
  }

  std::string_view source_;
  Metadata metadata_;
  std::string key_;
  std::size_t bytes_ = 0;
};

// One tensor's entry as it is read: its fields as they come (each once), then the checks that
// tie them together (the shape's byte count equals its data range, inside the data section).
class EntryReader {
 public:
  EntryReader(std::string_view source, std::uint64_t data_size)
      : source_(source), data_size_(data_size) {
    shape_.reserve(kSafetensorsMaxRank);
  }

  // The tensor's name (the top-level key), before its object starts.
  void name(json::string_t& n) { name_ = std::move(n); }
  std::string label() const { return "tensor " + quote_untrusted(name_); }
  // The object {"dtype": ..., "shape": [...], "data_offsets": [b, e]} starts.
  void start() {
    field_ = Field::none;
    fields_seen_ = 0;
    offsets_seen_ = 0;
    shape_.clear();
  }
  Field field() const { return field_; }
  int offsets_seen() const { return offsets_seen_; }

  void field(const json::string_t& k) {
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
  void dtype(const json::string_t& s) {
    const auto d = dtype_from_name(s);
    if (!d) fail(label() + " has the unknown dtype " + quote_untrusted(s, 40));
    entry_.dtype = *d;
  }
  void dimension(std::uint64_t v) {
    if (shape_.size() == kSafetensorsMaxRank) {
      fail(label() + " has a shape of more than " + std::to_string(kSafetensorsMaxRank) +
           " dimensions (the limit)");
    }
    shape_.push_back(v);
  }
  void offset(std::uint64_t v) {
    if (offsets_seen_ == 2) fail(label() + ": data_offsets is not an array [begin, end]");
    (offsets_seen_ == 0 ? entry_.begin : entry_.end) = v;
    ++offsets_seen_;
  }
  void end_offsets() const {
    if (offsets_seen_ != 2) fail(label() + ": data_offsets is not an array [begin, end]");
  }

  // The object ended: every field present, the shape's bytes the data range's, inside the data.
  SafetensorsEntry finish() {
    check_fields_present();
    SafetensorsEntry e = std::move(entry_);
    entry_ = SafetensorsEntry{};
    e.shape.assign(shape_.begin(), shape_.end());
    const std::uint64_t bytes = byte_count(e);
    const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.begin > e.end) fail(label() + " has data_offsets " + range + " reversed");
    if (e.end > data_size_) {
      fail(label() + " has data_offsets " + range + " outside the " + std::to_string(data_size_) +
           "-byte data section");
    }
    if (e.end - e.begin != bytes) {
      fail(label() + " has shape " + shape_string(e.shape) + " of " +
           std::string(dtype_name(e.dtype)) + ", which needs " + std::to_string(bytes) +
           " bytes, but data_offsets " + range + " span " + std::to_string(e.end - e.begin));
    }
    e.name = std::move(name_);
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw FileFormatError(source_, problem);
  }

  void check_fields_present() const {
    static constexpr unsigned kAll = (1u << 1) | (1u << 2) | (1u << 3);
    if (fields_seen_ == kAll) return;
    std::string missing;
    for (auto [f, name] : {std::pair{Field::dtype, "dtype"}, std::pair{Field::shape, "shape"},
                           std::pair{Field::offsets, "data_offsets"}}) {
      if ((fields_seen_ & (1u << static_cast<unsigned>(f))) == 0) {
        missing += (missing.empty() ? "" : ", ") + std::string(name);
      }
    }
    fail(label() + " lacks " + missing + " (each tensor has dtype, shape, data_offsets)");
  }

  // The bytes e's shape and dtype need, refusing counts that overflow 64 bits.
  std::uint64_t byte_count(const SafetensorsEntry& e) const {
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
    return count * size;
  }

  std::string_view source_;
  std::uint64_t data_size_;
  std::string name_;  // the top-level key: the tensor's name
  Field field_ = Field::none;
  unsigned fields_seen_ = 0;
  int offsets_seen_ = 0;
  SafetensorsEntry entry_;
  std::vector<std::uint64_t> shape_;
};

// nlohmann's SAX interface over the header: follows the Place of each event, hands metadata to
// a MetadataReader and tensors to an EntryReader, and refuses anything out of place naming it.
class HeaderSax {
 public:
  HeaderSax(std::string_view source, std::uint64_t data_size)
      : source_(source), metadata_(source), entry_(source, data_size) {}

  SafetensorsHeader take() && {
    SafetensorsHeader h;
    h.entries = std::move(entries_);
    h.metadata = std::move(metadata_).take();
    return h;
  }

  // --- nlohmann SAX interface ---
  bool null() { wrong("null"); }
  bool boolean(bool v) { wrong(v ? "true" : "false"); }
  bool binary(json::binary_t&) { wrong("binary"); }
  bool number_integer(json::number_integer_t v) {
    // Only a number written with a minus sign comes here: -0 is zero, and yet signed.
    if (v == 0 && (place_ == Place::shape || place_ == Place::offsets)) {
      fail(entry_.label() + ": " +
           (place_ == Place::shape
                ? std::string("a shape entry")
                : "data_offsets[" + std::to_string(entry_.offsets_seen()) + "]") +
           " is written -0: sizes and offsets are written without a sign (0)");
    }
    wrong(std::to_string(v));
  }
  bool number_float(json::number_float_t, const json::string_t& text) {
    wrong(quote_untrusted(text, 40));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (place_ == Place::shape) {
      entry_.dimension(v);
    } else if (place_ == Place::offsets) {
      entry_.offset(v);
    } else {
      wrong(std::to_string(v));
    }
    return true;
  }
  bool string(json::string_t& s) {
    if (place_ == Place::metadata) {
      metadata_.value(s);
    } else if (place_ == Place::entry && entry_.field() == Field::dtype) {
      entry_.dtype(s);
    } else {
      wrong("a string");
    }
    return true;
  }
  bool start_object(std::size_t) {
    if (place_ == Place::before) {
      place_ = Place::top;
    } else if (place_ == Place::top && is_metadata_) {
      place_ = Place::metadata;
    } else if (place_ == Place::top) {
      place_ = Place::entry;
      entry_.start();
    } else {
      wrong("an object");
    }
    return true;
  }
  bool key(json::string_t& k) {
    if (place_ == Place::top) {
      top_key(k);
    } else if (place_ == Place::metadata) {
      metadata_.key(k);
    } else {  // Place::entry: the only other place where keys occur
      entry_.field(k);
    }
    return true;
  }
  bool end_object() {
    if (place_ == Place::entry) {
      entries_.push_back(entry_.finish());
      place_ = Place::top;
    } else if (place_ == Place::metadata) {
      place_ = Place::top;
    } else {
      place_ = Place::after;
    }
    return true;
  }
  bool start_array(std::size_t) {
    if (place_ == Place::entry && entry_.field() == Field::shape) {
      place_ = Place::shape;
    } else if (place_ == Place::entry && entry_.field() == Field::offsets) {
      place_ = Place::offsets;
    } else {
      wrong("an array");
    }
    return true;
  }
  bool end_array() {
    if (place_ == Place::offsets) entry_.end_offsets();
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

  // A value of the wrong kind at the current place; `what` describes it ("an array", "-1").
  [[noreturn]] void wrong(const std::string& what) const {
    switch (place_) {
      case Place::before:
      case Place::after:
        fail("header must be a single JSON object");
      case Place::top:
        if (is_metadata_) fail("__metadata__ is not a JSON object (it is " + what + ")");
        fail(entry_.label() + " is not a JSON object (it is " + what + ")");
      case Place::metadata:
        fail("__metadata__ value of " + quote_untrusted(metadata_.key()) + " is " + what +
             ", not a string");
      case Place::shape:
        fail(entry_.label() + ": a shape entry is " + what + ", not a non-negative integer");
      case Place::offsets:
        fail(entry_.label() + ": data_offsets[" + std::to_string(entry_.offsets_seen()) + "] is " +
             what + ", not a non-negative integer");
      case Place::entry:
        break;
    }
    switch (entry_.field()) {
      case Field::dtype:
        fail(entry_.label() + ": dtype is " + what + ", not a string");
      case Field::shape:
        fail(entry_.label() + ": shape is " + what + ", not an array");
      default:
        fail(entry_.label() + ": data_offsets is not an array [begin, end] (it is " + what + ")");
    }
  }

  void top_key(json::string_t& k) {
    is_metadata_ = k == "__metadata__";
    if (is_metadata_) {
      if (seen_metadata_) fail("header has the key '__metadata__' twice (keys must be unique)");
      seen_metadata_ = true;
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
    entry_.name(k);
  }

  std::string_view source_;
  Place place_ = Place::before;
  bool is_metadata_ = false;
  bool seen_metadata_ = false;
  MetadataReader metadata_;
  EntryReader entry_;
  std::vector<SafetensorsEntry> entries_;
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
