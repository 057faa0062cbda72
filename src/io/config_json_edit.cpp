// Editing a config.json's text in place (config_json.hpp): the byte ranges of the values to
// change are found by a scan of the already validated text, and only they are rewritten, so that
// numbers a JSON parser would round (1e-400, a 30-digit integer), spacing and key order stay as
// the file has them.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "config_json.hpp"

namespace posemb::detail {
namespace {

// One member of an object: byte offsets into the text.
struct ConfigMember {
  std::string key;          // decoded
  std::size_t key_begin;    // the key's opening quote
  std::size_t value_begin;  // the value's first byte
  std::size_t value_end;    // one past its last byte
};

// A scanner over JSON text that parse_config_json accepted (so no syntax checks here).
class ConfigScanner {
 public:
  explicit ConfigScanner(std::string_view text) : t_(text) {}

  // The offset of the top-level object's '{'.
  std::size_t top() {
    i_ = t_.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte order mark, as nlohmann skips
    space();
    return i_;
  }

  // The members of the object whose '{' is at `open`; *close gets the offset of its '}'.
  std::vector<ConfigMember> members(std::size_t open, std::size_t* close) {
    std::vector<ConfigMember> out;
    i_ = open + 1;
    space();
    while (t_[i_] != '}') {
      ConfigMember m;
      m.key_begin = i_;
      skip_string();
      m.key = ConfigJson::parse(t_.substr(m.key_begin, i_ - m.key_begin)).get<std::string>();
      space();
      ++i_;  // ':'
      space();
      m.value_begin = i_;
      skip_value();
      m.value_end = i_;
      out.push_back(std::move(m));
      space();
      if (t_[i_] == ',') {
        ++i_;
        space();
      }
    }
    *close = i_;
    return out;
  }

 private:
  void space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r'))
      ++i_;
  }
  void skip_string() {  // at the opening quote
    for (++i_; t_[i_] != '"'; ++i_) {
      if (t_[i_] == '\\') ++i_;
    }
    ++i_;
  }
  void skip_value() {
    if (t_[i_] == '"') return skip_string();
    if (t_[i_] == '{' || t_[i_] == '[') {
      std::size_t depth = 0;
      do {
        if (t_[i_] == '"') {
          skip_string();
          continue;
        }
        if (t_[i_] == '{' || t_[i_] == '[') ++depth;
        if (t_[i_] == '}' || t_[i_] == ']') --depth;
        ++i_;
      } while (depth > 0);
      return;
    }
    while (i_ < t_.size() && std::string_view(",]} \t\n\r").find(t_[i_]) == std::string_view::npos)
      ++i_;
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

// What a path leads to: the member, or (its last key absent) the object that lacks it.
struct ConfigPlace {
  std::optional<ConfigMember> member;
  std::vector<ConfigMember> siblings;  // the members of the object holding the last key
  std::size_t object_close = 0;        // that object's '}'
};

ConfigPlace find_place(std::string_view text, const std::vector<std::string>& path) {
  ConfigScanner s(text);
  std::size_t open = s.top();
  ConfigPlace place;
  for (std::size_t k = 0; k < path.size(); ++k) {
    place.siblings = s.members(open, &place.object_close);
    const auto it = std::find_if(place.siblings.begin(), place.siblings.end(),
                                 [&](const ConfigMember& m) { return m.key == path[k]; });
    if (k + 1 == path.size()) {
      if (it != place.siblings.end()) place.member = *it;
      return place;
    }
    if (it == place.siblings.end() || text[it->value_begin] != '{') {
      std::string where;
      for (std::size_t j = 0; j <= k; ++j) where += (j == 0 ? "" : ".") + path[j];
      throw std::invalid_argument("edit_config_text: " + where + " is " +
                                  (it == place.siblings.end() ? "absent" : "not an object"));
    }
    open = it->value_begin;
  }
  return place;
}

// The spaces and tabs that open the line of byte `at`, when nothing else precedes it there.
std::optional<std::string> line_indent(std::string_view text, std::size_t at) {
  const std::size_t nl = text.rfind('\n', at == 0 ? 0 : at - 1);
  const std::size_t start = nl == std::string_view::npos || at == 0 ? 0 : nl + 1;
  const std::string_view lead = text.substr(start, at - start);
  if (lead.find_first_not_of(" \t") != std::string_view::npos) return std::nullopt;
  return std::string(lead);
}

// json with every line after the first indented by `indent` more.
std::string indented(std::string_view json, const std::string& indent) {
  std::string out;
  for (const char c : json) {
    out += c;
    if (c == '\n') out += indent;
  }
  return out;
}

}  // namespace

std::optional<std::string_view> config_value_text(std::string_view text,
                                                  const std::vector<std::string>& path) {
  try {
    const ConfigPlace p = find_place(text, path);
    if (!p.member) return std::nullopt;
    return text.substr(p.member->value_begin, p.member->value_end - p.member->value_begin);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::string edit_config_text(std::string_view text, const std::vector<ConfigValueEdit>& edits) {
  struct Splice {
    std::size_t begin, end;
    std::string with;
  };
  std::vector<Splice> splices;
  for (const ConfigValueEdit& e : edits) {
    const ConfigPlace p = find_place(text, e.path);
    if (p.member) {
      const std::string indent = line_indent(text, p.member->key_begin).value_or("");
      splices.push_back({p.member->value_begin, p.member->value_end, indented(e.json, indent)});
      continue;
    }
    const std::string key = ConfigJson(e.path.back()).dump();
    if (p.siblings.empty()) {
      splices.push_back({p.object_close, p.object_close, key + ": " + e.json});
      continue;
    }
    const ConfigMember& last = p.siblings.back();
    const std::optional<std::string> indent = line_indent(text, last.key_begin);
    const std::string lead = indent ? ",\n" + *indent : std::string(", ");
    splices.push_back({last.value_end, last.value_end,
                       lead + key + ": " + indented(e.json, indent.value_or(""))});
  }
  // From the end, so that earlier offsets stay valid; several additions at one place keep the
  // edits' order.
  std::stable_sort(splices.begin(), splices.end(),
                   [](const Splice& a, const Splice& b) { return a.begin > b.begin; });
  std::string out(text);
  for (std::size_t i = 0; i < splices.size();) {
    std::size_t j = i;
    std::string with;
    while (j < splices.size() && splices[j].begin == splices[i].begin) with += splices[j++].with;
    out.replace(splices[i].begin, splices[i].end - splices[i].begin, with);
    i = j;
  }
  return out;
}

std::string config_object_text(const std::vector<std::pair<std::string, std::string>>& members) {
  if (members.empty()) return "{}";
  std::string out = "{";
  for (std::size_t i = 0; i < members.size(); ++i) {
    out += (i == 0 ? "\n  " : ",\n  ") + ConfigJson(members[i].first).dump() + ": " +
           indented(members[i].second, "  ");
  }
  return out + "\n}";
}

}  // namespace posemb::detail
