#include "hf_config.hpp"

#include <stdexcept>
#include <string_view>

#include "config_json.hpp"
#include "grid_math.hpp"
#include "posemb/errors.hpp"
#include "posemb/memory.hpp"

namespace posemb {
namespace {

using Json = detail::ConfigJson;

// A length key: its path in the config, and what it holds.
struct LengthRule {
  std::vector<std::string> path;
  bool image = false;      // image_size = grid x patch_size (else rows - offset)
  std::size_t offset = 0;  // rows that are not counted (BART's 2)
  bool optional = false;   // only updated when present (GPT-2's n_ctx)
};

struct Family {
  std::string name;
  std::vector<LengthRule> rules;
  std::vector<std::string> patch_path;  // for image rules
};

// Strictly, as `posemb rope` reads a config: a key twice in one object is refused.
Json parse_config(const std::string& text, const std::string& source) {
  return detail::parse_config_json(text, source);
}

std::string model_type(const Json& c) {
  const auto it = c.find("model_type");
  return it != c.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool has_object(const Json& c, const char* key) {
  const auto it = c.find(key);
  return it != c.end() && it->is_object();
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The value at path, or nullptr.
const Json* at_path(const Json& c, const std::vector<std::string>& path) {
  const Json* cur = &c;
  for (const auto& p : path) {
    if (!cur->is_object()) return nullptr;
    const auto it = cur->find(p);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

// Every key a loader reads for the length is a rule: the family's own key, and the other names
// that transformers reads for it too (GPT2Config's attribute_map makes max_position_embeddings
// set n_positions, and it is applied last; CLIPConfig applies text_config_dict and
// vision_config_dict over text_config and vision_config). Optional keys are checked and written
// when present.
Family family_of(const Json& c, const TableClass& kind, std::string_view name) {
  const std::string mt = model_type(c);
  if (kind.kind == TableKind::vision) {
    if (has_object(c, "vision_config") || has_object(c, "vision_config_dict")) {
      const bool dict = has_object(c, "vision_config_dict");
      const bool plain = has_object(c, "vision_config");
      std::vector<LengthRule> rules;
      if (plain) rules.push_back({{"vision_config", "image_size"}, true});
      if (dict) rules.push_back({{"vision_config_dict", "image_size"}, true, 0, plain});
      // The patch size the loader ends with: the _dict's when it has one.
      const bool dict_patch = dict && at_path(c, {"vision_config_dict", "patch_size"}) != nullptr;
      return {"CLIP vision",
              rules,
              {dict_patch ? "vision_config_dict" : "vision_config", "patch_size"}};
    }
    return {mt.empty() ? kind.family : mt, {{{"image_size"}, true}}, {"patch_size"}};
  }
  if ((has_object(c, "text_config") || has_object(c, "text_config_dict")) &&
      contains(name, "text_model.")) {
    const bool plain = has_object(c, "text_config");
    std::vector<LengthRule> rules;
    if (plain) rules.push_back({{"text_config", "max_position_embeddings"}});
    if (has_object(c, "text_config_dict")) {
      rules.push_back({{"text_config_dict", "max_position_embeddings"}, false, 0, plain});
    }
    return {"CLIP text", rules, {}};
  }
  if (c.contains("n_positions")) {
    return {"GPT-2",
            {{{"n_positions"}},
             {{"n_ctx"}, false, 0, true},
             {{"max_position_embeddings"}, false, 0, true}},
            {}};
  }
  if (c.contains("max_source_positions") || c.contains("max_target_positions")) {
    const bool dec = contains(name, "decoder");
    return {"Whisper", {{{dec ? "max_target_positions" : "max_source_positions"}}}, {}};
  }
  for (const char* t : {"bart", "mbart", "opt", "plbart", "mvp"}) {
    if (mt == t) return {mt + " (2 offset rows)", {{{"max_position_embeddings"}, false, 2}}, {}};
  }
  // BERT, RoBERTa and others; a config without the key is left alone.
  return {
      mt.empty() ? "unknown model_type" : mt, {{{"max_position_embeddings"}, false, 0, true}}, {}};
}

std::string key_text(const std::vector<std::string>& path) {
  std::string s;
  for (const auto& p : path) s += (s.empty() ? "" : ".") + p;
  return s;
}

// (height, width) of an int-or-pair value of positive integers.
std::optional<std::pair<std::size_t, std::size_t>> pair_of(const Json* v) {
  auto one = [](const Json& x) -> std::optional<std::size_t> {
    if (!x.is_number_unsigned() || x.get<std::uint64_t>() == 0) return std::nullopt;
    return static_cast<std::size_t>(x.get<std::uint64_t>());
  };
  if (v == nullptr) return std::nullopt;
  if (const auto s = one(*v)) return std::pair{*s, *s};
  if (v->is_array() && v->size() == 2) {
    const auto h = one((*v)[0]), w = one((*v)[1]);
    if (h && w) return std::pair{*h, *w};
  }
  return std::nullopt;
}

// image_size for grid g of patches of patch pixels: [height * patch, width * patch], or one
// number for a square image when the config wrote one. Throws std::invalid_argument naming
// source when a side passes 2^53 (JSON readers take numbers as doubles: transformers would read
// another value) or 2^64 (the product would wrap around: a patch_size of 2^62 made image_size 0).
Json image_value(const std::string& source, GridShape g, std::pair<std::size_t, std::size_t> patch,
                 bool was_int) {
  constexpr std::size_t kMaxExact = std::size_t{1} << 53;
  std::size_t side[2] = {0, 0};
  const std::size_t cells[2] = {g.height, g.width}, pixels[2] = {patch.first, patch.second};
  for (int i = 0; i < 2; ++i) {
    if (__builtin_mul_overflow(cells[i], pixels[i], &side[i]) || side[i] > kMaxExact) {
      throw std::invalid_argument(source + ": cannot set image_size: the grid's " +
                                  (i == 0 ? "height " : "width ") + std::to_string(cells[i]) +
                                  " x patch_size " + std::to_string(pixels[i]) +
                                  " pixels is past 2^53, more than a JSON number holds exactly");
    }
  }
  if (was_int && side[0] == side[1]) return Json(side[0]);
  return Json::array({side[0], side[1]});
}

// The new grid must be the table's: its prefix tokens (by the tensor's name, as the model's
// loader counts them) and the grid's cells make the table's rows. A 24x24 grid written for a
// 3x3 table would give image_size 384 to a folder whose table has 10 rows.
void check_grid_rows(const std::string& source, const TableClass& kind, GridShape grid,
                     std::size_t rows) {
  std::size_t cells = 0;
  const bool wraps = __builtin_mul_overflow(grid.height, grid.width, &cells);
  if (!wraps && rows >= kind.prefix_tokens && cells == rows - kind.prefix_tokens) return;
  throw std::invalid_argument(
      source + ": cannot set image_size for a " + std::to_string(grid.height) + "x" +
      std::to_string(grid.width) + " grid: with the " + std::to_string(kind.prefix_tokens) +
      " prefix token(s) of a " + kind.family + " table it makes " +
      (wraps ? std::string("more rows than a 64-bit size holds")
             : std::to_string(saturating_add(cells, kind.prefix_tokens)) + " rows") +
      ", but the table written has " + std::to_string(rows) +
      " (give the grid the table was resized to)");
}

}  // namespace

bool ConfigCheck::agrees() const {
  if (!note.empty() || lengths.empty()) return false;
  for (const auto& l : lengths) {
    if (!l.agrees()) return false;
  }
  return true;
}

ConfigCheck check_checkpoint_config(const std::string& config_text, const std::string& source,
                                    const TensorFile& file, const std::string& tensor_name,
                                    std::size_t rows, std::optional<std::size_t> prefix) {
  const Json c = parse_config(config_text, source);
  const TableClass kind = classify_table(file, tensor_name);
  const Family f = family_of(c, kind, tensor_name);
  const std::size_t prefix_tokens = prefix.value_or(kind.prefix_tokens);
  ConfigCheck out;
  out.family = f.name;
  for (const LengthRule& r : f.rules) {
    const Json* v = at_path(c, r.path);
    if (v == nullptr && r.optional) continue;
    ConfigLength l{key_text(r.path), v == nullptr ? "(absent)" : v->dump(), ""};
    if (!r.image) {
      l.expected = rows >= r.offset ? std::to_string(rows - r.offset) : "(none)";
    } else if (const auto patch = pair_of(at_path(c, f.patch_path)); !patch) {
      out.note = "config has no usable " + key_text(f.patch_path);
      l.expected = "(unknown)";
    } else {
      const auto img = pair_of(v);
      const bool fits = img && img->first % patch->first == 0 && img->second % patch->second == 0;
      std::size_t cells = 0;
      const bool agrees =
          fits && rows >= prefix_tokens &&
          !__builtin_mul_overflow(img->first / patch->first, img->second / patch->second, &cells) &&
          cells == rows - prefix_tokens;
      if (agrees) {
        l.expected = l.value;
      } else {
        // The square grid the rows make, if any, and the image it needs (if a JSON number holds
        // it exactly).
        const std::size_t s = rows > prefix_tokens ? detail::floor_sqrt(rows - prefix_tokens) : 0;
        l.expected = "(no square grid fits " + std::to_string(rows) + " rows)";
        if (s != 0 && s * s == rows - prefix_tokens) {
          try {
            l.expected = image_value(source, {s, s}, *patch, !v || !v->is_array()).dump();
          } catch (const std::invalid_argument&) {
            l.expected = "(a " + std::to_string(s) + "x" + std::to_string(s) +
                         " grid of patch_size " + key_text(f.patch_path) +
                         " makes an image_size past 2^53)";
          }
        }
      }
    }
    out.lengths.push_back(std::move(l));
  }
  if (out.lengths.empty()) {
    out.note = "config.json has no length key posemb knows for " + f.name;
  }
  return out;
}

namespace detail {

void check_config_json(const std::string& text, const std::string& source) {
  (void)parse_config(text, source);
}

std::string updated_config(const std::string& config_text, const std::string& source,
                           const TensorFile& file, const std::string& tensor_name,
                           std::size_t new_rows, std::optional<GridShape> new_grid,
                           std::vector<ConfigLength>& changes) {
  const Json c = parse_config(config_text, source);
  const TableClass kind = classify_table(file, tensor_name);
  const Family f = family_of(c, kind, tensor_name);
  std::vector<ConfigValueEdit> edits;
  for (const LengthRule& r : f.rules) {
    const Json* old = at_path(c, r.path);
    if (old == nullptr && r.optional) continue;
    Json value;
    if (r.image) {
      const auto patch = pair_of(at_path(c, f.patch_path));
      if (!patch || !new_grid) {
        throw std::invalid_argument(source + ": cannot set " + key_text(r.path) + ": " +
                                    (!patch ? "no usable " + key_text(f.patch_path)
                                            : std::string("the new grid is not known")));
      }
      check_grid_rows(source, kind, *new_grid, new_rows);
      value = image_value(source, *new_grid, *patch, old == nullptr || !old->is_array());
    } else {
      value = Json(new_rows >= r.offset ? new_rows - r.offset : 0);
    }
    // The old value as the file writes it; only the changed values are rewritten.
    const auto written = config_value_text(config_text, r.path);
    const bool one_line = written && written->find('\n') == std::string_view::npos;
    changes.push_back({key_text(r.path),
                       !written   ? "(absent)"
                       : one_line ? std::string(*written)
                                  : old->dump(),
                       value.dump()});
    edits.push_back({r.path, value.dump()});
  }
  return edit_config_text(config_text, edits);
}

}  // namespace detail
}  // namespace posemb
