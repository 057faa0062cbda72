#include "posemb/table_provenance.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "json_depth.hpp"
#include "posemb/errors.hpp"

namespace posemb {
namespace {

using json = nlohmann::json;

// The longest posemb.resizes value read (a resize takes about 250 bytes).
constexpr std::size_t kMaxResizesJsonBytes = 1u << 20;

std::string fmt_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// ---- posemb.resizes (JSON) ----

// Reads one object of the array; `bad` throws naming the field.
class ResizeReader {
 public:
  ResizeReader(const json& object, const std::string& path, std::size_t index)
      : o_(object), path_(path), index_(index) {}

  TableResize read() const {
    if (!o_.is_object()) bad("", "is not a JSON object");
    TableResize r;
    r.operation = text("operation", true);
    r.method = text("method", true);
    r.from_positions = count("from_positions", true).value_or(0);
    r.to_positions = count("to_positions", true).value_or(0);
    r.reserved_rows = count("reserved_rows", false).value_or(0);
    r.source_file = text("source_file", false);
    r.source_tensor = text("source_tensor", false);
    r.initializer = text("initializer", false);
    r.stddev = number("stddev");
    r.seed = count("seed", false);
    r.scale = number("scale");
    return r;
  }

 private:
  [[noreturn]] void bad(const std::string& field, const std::string& problem) const {
    throw FileFormatError(path_, "metadata " + std::string(kResizesKey) + "[" +
                                     std::to_string(index_) + "]" +
                                     (field.empty() ? "" : "." + field) + " " + problem);
  }
  const json* field(const char* name, bool required) const {
    const auto it = o_.find(name);
    if (it == o_.end()) {
      if (required) bad(name, "is missing");
      return nullptr;
    }
    return &*it;
  }
  std::string text(const char* name, bool required) const {
    const json* v = field(name, required);
    if (v == nullptr) return {};
    if (!v->is_string()) bad(name, "is not a string");
    return v->get<std::string>();
  }
  std::optional<std::uint64_t> count(const char* name, bool required) const {
    const json* v = field(name, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_unsigned()) bad(name, "is not a whole number");
    return v->get<std::uint64_t>();
  }
  std::optional<double> number(const char* name) const {
    const json* v = field(name, false);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) bad(name, "is not a number");
    return v->get<double>();
  }

  const json& o_;
  const std::string& path_;
  std::size_t index_;
};

std::vector<TableResize> parse_resizes_json(const std::string& text, const std::string& path) {
  const std::string key(kResizesKey);
  if (text.size() > kMaxResizesJsonBytes) {
    throw FileFormatError(path, "metadata " + key + " holds " + std::to_string(text.size()) +
                                    " bytes, more than the " +
                                    std::to_string(kMaxResizesJsonBytes) + " posemb reads");
  }
  // An array of objects (whose fields may be arrays): deeper nesting is refused unparsed.
  const json doc =
      detail::json_nesting_depth(text) <= 3 ? json::parse(text, nullptr, false) : json();
  if (!doc.is_array()) {
    throw FileFormatError(path, "metadata " + key + " = " + quote_untrusted(text, 60) +
                                    " is not a JSON array of resizes");
  }
  std::vector<TableResize> out;
  out.reserve(doc.size());
  for (std::size_t i = 0; i < doc.size(); ++i) out.push_back(ResizeReader(doc[i], path, i).read());
  return out;
}

// ---- posemb.provenance text of files written before posemb.resizes ----

// Reads a whole number at the front of s, advancing s.
std::optional<std::size_t> take_count(std::string_view& s) {
  std::size_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return v;
}

bool take(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

std::optional<double> leading_double(std::string_view s) {
  const std::string text(s.substr(0, 40));
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return std::nullopt;
  return v;
}

// The optional parts after "METHOD A -> B positions": ", new rows ...", ", K reserved rows
// kept", ", from 'FILE' tensor 'TENSOR'", in that order.
void read_legacy_details(std::string_view rest, TableResize& r) {
  constexpr std::string_view kFrom = ", from '", kTensor = "' tensor '";
  if (const auto from = rest.find(kFrom); from != std::string_view::npos) {
    std::string_view src = rest.substr(from + kFrom.size());
    rest = rest.substr(0, from);
    const auto t = src.rfind(kTensor);
    if (t != std::string_view::npos) {
      r.source_file = std::string(src.substr(0, t));
      std::string_view tensor = src.substr(t + kTensor.size());
      if (tensor.ends_with('\'')) tensor.remove_suffix(1);
      r.source_tensor = std::string(tensor);
    }
  }
  if (const auto kept = rest.rfind(" reserved rows kept"); kept != std::string_view::npos) {
    const auto comma = rest.rfind(", ", kept);
    std::string_view k = rest.substr(comma == std::string_view::npos ? 0 : comma + 2);
    if (const auto n = take_count(k)) r.reserved_rows = *n;
  }
  constexpr std::string_view kSinusoidal = " x ", kStd = "(std=", kSeed = ", seed=";
  if (r.method == "random") {
    const auto rows = rest.find(", new rows "), std = rest.find(kStd);
    if (rows != std::string_view::npos && std != std::string_view::npos && std > rows) {
      r.initializer = std::string(rest.substr(rows + 11, std - rows - 11));
      r.stddev = leading_double(rest.substr(std + kStd.size()));
      if (const auto seed = rest.find(kSeed, std); seed != std::string_view::npos) {
        std::string_view s = rest.substr(seed + kSeed.size());
        r.seed = take_count(s);
      }
    }
  } else if (r.method == "sinusoidal") {
    if (const auto x = rest.find(kSinusoidal); x != std::string_view::npos) {
      r.scale = leading_double(rest.substr(x + kSinusoidal.size()));
    }
  }
}

// "resize: METHOD A -> B positions[, details]" (up to the next "; "), or nullopt.
std::optional<TableResize> read_legacy_resize(std::string_view s) {
  TableResize r;
  if (!take(s, "resize: ")) return std::nullopt;
  const auto space = s.find(' ');
  if (space == std::string_view::npos || space == 0) return std::nullopt;
  r.method = std::string(s.substr(0, space));
  s.remove_prefix(space + 1);
  const auto from = take_count(s);
  if (!from || !take(s, " -> ")) return std::nullopt;
  const auto to = take_count(s);
  if (!to || !take(s, " positions")) return std::nullopt;
  r.from_positions = *from;
  r.to_positions = *to;
  read_legacy_details(s.substr(0, s.find("; ")), r);
  return r;
}

std::vector<TableResize> parse_legacy_provenance(std::string_view text) {
  std::vector<TableResize> out;
  for (std::size_t at = text.find("resize: "); at != std::string_view::npos;
       at = text.find("resize: ", at + 1)) {
    // A resize starts the text or follows "; " (or "(" / ": " where the lab quoted it).
    const bool starts =
        at == 0 || text.substr(at - 1, 1) == "(" ||
        (at >= 2 && (text.substr(at - 2, 2) == "; " || text.substr(at - 2, 2) == ": "));
    if (!starts) continue;
    if (auto r = read_legacy_resize(text.substr(at))) out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace

std::string describe_resize(const TableResize& r) {
  std::string how = "resize: " + r.method + " " + std::to_string(r.from_positions) + " -> " +
                    std::to_string(r.to_positions) + " positions";
  if (r.stddev || r.seed) {
    how += ", new rows " + r.initializer + "(std=" + fmt_double(r.stddev.value_or(0.0)) +
           ", seed=" + std::to_string(r.seed.value_or(0)) + ")";
  }
  if (r.scale) {
    how += ", new rows the sinusoidal encoding (interleaved, base 10000) x " +
           fmt_double(*r.scale) + " (the old positions' mean row norm)";
  }
  if (r.reserved_rows != 0) how += ", " + std::to_string(r.reserved_rows) + " reserved rows kept";
  if (!r.source_file.empty()) {
    how += ", from '" + r.source_file + "' tensor '" + r.source_tensor + "'";
  }
  return how;
}

std::string resizes_json(const std::vector<TableResize>& resizes) {
  json a = json::array();
  for (const TableResize& r : resizes) {
    json o = {{"operation", r.operation},           {"method", r.method},
              {"from_positions", r.from_positions}, {"to_positions", r.to_positions},
              {"reserved_rows", r.reserved_rows},   {"source_file", r.source_file},
              {"source_tensor", r.source_tensor}};
    if (!r.initializer.empty()) o["initializer"] = r.initializer;
    if (r.stddev) o["stddev"] = *r.stddev;
    if (r.seed) o["seed"] = *r.seed;
    if (r.scale) o["scale"] = *r.scale;
    a.push_back(std::move(o));
  }
  // Names come from files and users: bytes that are not UTF-8 are replaced, never thrown on.
  return a.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<TableResize> recorded_resizes(const Metadata& metadata, const std::string& path) {
  if (const auto it = metadata.find(std::string(kResizesKey)); it != metadata.end()) {
    return parse_resizes_json(it->second, path);
  }
  if (const auto it = metadata.find(std::string(kProvenanceKey)); it != metadata.end()) {
    return parse_legacy_provenance(it->second);
  }
  return {};
}

}  // namespace posemb
