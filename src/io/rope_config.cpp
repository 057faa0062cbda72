// Reading a Hugging Face config.json's rotary embedding (posemb/rope_config.hpp). The keys are
// those transformers' modeling_rope_utils.py reads (_compute_*_parameters and the
// _validate_*_parameters beside them); every value is checked here, before any is used.
#include "posemb/rope_config.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "config_json.hpp"
#include "json_depth.hpp"
#include "mapped_file.hpp"
#include "posemb/errors.hpp"

namespace posemb {
namespace detail {

constexpr std::size_t kMaxConfigBytes = std::size_t{16} << 20;

std::string read_config_text(const std::string& path) {
  const auto file = MappedFile::open(path, "read_rope_config");
  const auto bytes = file->bytes();
  if (bytes.size() > kMaxConfigBytes) {
    throw FileFormatError(path, std::to_string(bytes.size()) + " bytes: more than the " +
                                    std::to_string(kMaxConfigBytes) + " a config.json may have");
  }
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

ConfigJson parse_config_json(std::string_view text, std::string_view source) {
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    throw FileFormatError(source, "not JSON text: a NUL byte at byte " + std::to_string(nul));
  }
  std::vector<std::set<std::string>> open;  // keys of each object being parsed
  auto no_duplicates = [&](int, ConfigJson::parse_event_t e, ConfigJson& parsed) {
    using E = ConfigJson::parse_event_t;
    if (e == E::object_start) open.emplace_back();
    if (e == E::object_end && !open.empty()) open.pop_back();
    if (e == E::key && !open.empty() && !open.back().insert(parsed.get<std::string>()).second) {
      throw FileFormatError(source, "key " + quote_untrusted(parsed.get<std::string>(), 64) +
                                        " appears twice in one object");
    }
    return true;
  };
  detail::check_json_depth(text, source);
  ConfigJson j;
  try {
    j = ConfigJson::parse(text.begin(), text.end(), no_duplicates);
  } catch (const ConfigJson::exception& e) {
    // nlohmann's text without its tag and the bytes it last read (they come from the file).
    std::string what = e.what();
    if (const auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
    if (const auto last = what.find("; last read"); last != std::string::npos) what.erase(last);
    throw FileFormatError(source, "not valid JSON (" + quote_untrusted(what, 160) + ")");
  }
  if (!j.is_object()) throw FileFormatError(source, "the top level is not a JSON object");
  return j;
}

std::string rope_blocks_disagreement(const ConfigJson& root) {
  const auto s = root.find("rope_scaling"), p = root.find("rope_parameters");
  if (s == root.end() || p == root.end() || s->is_null() || p->is_null()) return {};
  // The scaling a block gives: keys in any order (an unordered json), 8 equal to 8.0.
  const auto scaling_of = [](const ConfigJson& block) {
    nlohmann::json j = nlohmann::json::parse(block.dump());
    if (!j.is_object()) return j;
    j.erase("rope_theta");
    j.erase("partial_rotary_factor");
    if (!j.contains("rope_type") && j.contains("type")) j["rope_type"] = j["type"];
    j.erase("type");
    return j;
  };
  if (scaling_of(*s) == scaling_of(*p)) return {};
  return "rope_scaling " + quote_untrusted(s->dump(), 120) + " and rope_parameters " +
         quote_untrusted(p->dump(), 120) +
         " disagree (transformers 4 reads rope_scaling only, 5 reads rope_scaling first)";
}

}  // namespace detail

namespace {

using Json = detail::ConfigJson;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const char* type_of(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "true or false";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// Reads keys of one object (the top level or the scaling block), naming them in errors as
// `prefix` + key, and remembers which keys were read.
class Keys {
 public:
  Keys(const Json& obj, std::string source, std::string prefix)
      : obj_(obj), source_(std::move(source)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(std::string_view key, const std::string& problem) const {
    throw FileFormatError(source_, prefix_ + std::string(key) + ": " + problem);
  }
  // The value, or nullptr when the key is absent or null.
  const Json* get(std::string_view key) {
    read_.insert(std::string(key));
    const auto it = obj_.find(std::string(key));
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }
  bool has(std::string_view key) { return get(key) != nullptr; }
  double number(std::string_view key, const char* why) {
    const Json* v = get(key);
    if (v == nullptr) fail(key, std::string("missing (") + why + ")");
    return as_number(key, *v);
  }
  std::optional<double> opt_number(std::string_view key) {
    const Json* v = get(key);
    return v == nullptr ? std::nullopt : std::optional<double>(as_number(key, *v));
  }
  std::size_t count(std::string_view key, const char* why) {
    const Json* v = get(key);
    if (v == nullptr) fail(key, std::string("missing (") + why + ")");
    return as_count(key, *v);
  }
  std::optional<std::size_t> opt_count(std::string_view key) {
    const Json* v = get(key);
    return v == nullptr ? std::nullopt : std::optional<std::size_t>(as_count(key, *v));
  }
  std::vector<double> numbers(std::string_view key, const char* why) {
    const Json* v = get(key);
    if (v == nullptr) fail(key, std::string("missing (") + why + ")");
    if (!v->is_array()) fail(key, std::string("must be a list of numbers, got ") + type_of(*v));
    std::vector<double> out;
    for (std::size_t i = 0; i < v->size(); ++i) {
      out.push_back(as_number(std::string(key) + "[" + std::to_string(i) + "]", (*v)[i]));
    }
    return out;
  }
  // Keys present but never read, quoted.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : obj_.items()) {
      if (read_.count(k) == 0) out.push_back(quote_untrusted(k, 64));
    }
    return out;
  }
  std::string name(std::string_view key) const { return prefix_ + std::string(key); }

 private:
  double as_number(std::string_view key, const Json& v) const {
    if (!v.is_number()) fail(key, std::string("must be a number, got ") + type_of(v));
    return v.get<double>();
  }
  std::size_t as_count(std::string_view key, const Json& v) const {
    if (v.is_number_unsigned()) return v.get<std::size_t>();
    const double d = v.is_number() ? v.get<double>() : -1.0;
    if (!v.is_number() || d < 0 || d != std::floor(d) || d > 9.0e15) {
      fail(key, "must be a whole number of positions or columns, got " +
                    (v.is_number() ? num(d) : std::string(type_of(v))));
    }
    return static_cast<std::size_t>(d);
  }

  const Json& obj_;
  std::string source_;
  std::string prefix_;
  std::set<std::string, std::less<>> read_;
};

// The scaling's factor (1 without one).
double factor_of(const RopeScaling& scaling) {
  return std::visit(
      [](const auto& s) -> double {
        if constexpr (requires { s.factor; }) {
          return s.factor;
        } else {
          return 1.0;
        }
      },
      scaling);
}

// True when factor * L0 passes 2^63 - 1 positions.
bool scaled_length_passes_positions(const RopeConfig& c) {
  constexpr long double kMaxPositions = 9223372036854775807.0L;  // 2^63 - 1
  return static_cast<long double>(factor_of(c.scaling)) *
             static_cast<long double>(c.trained_length()) >
         kMaxPositions;
}

double read_base(Keys& top, Keys* block, std::vector<std::string>& warnings) {
  const auto theta = top.opt_number("rope_theta");
  const auto neox = top.opt_number("rotary_emb_base");  // GPT-NeoX's name
  if (theta && neox && *theta != *neox) {
    top.fail("rope_theta", "= " + num(*theta) + " disagrees with rotary_emb_base = " + num(*neox));
  }
  std::optional<double> b = theta ? theta : neox;
  if (!b && block != nullptr) b = block->opt_number("rope_theta");  // transformers 5
  if (!b) {
    // Configs written before transformers 4.34 (Llama 2's own) have no rope_theta: the model
    // classes' default, 10000 (Llama, Mistral, Qwen2, Phi-3, Gemma, GPT-NeoX), said aloud.
    warnings.push_back(
        "rope_theta is missing: 10000 is used, transformers' default for Llama, "
        "Mistral, Qwen2, Phi-3, Gemma and GPT-NeoX");
    return 10000.0;
  }
  if (!(*b >= 1e-300 && *b <= 1e300)) {
    top.fail("rope_theta", "= " + num(*b) +
                               " must be in [1e-300, 1e300] (finite and > 0, its inverse "
                               "frequencies theta^-x normal doubles)");
  }
  return *b;
}

std::size_t read_head_dim(Keys& top) {
  std::size_t d = 0;
  if (const auto hd = top.opt_count("head_dim")) {
    d = *hd;
    if (d < 2 || d % 2 != 0 || d > kMaxRopeHeadDim) {
      top.fail("head_dim", "= " + std::to_string(d) +
                               " must be even, >= 2 and <= " + std::to_string(kMaxRopeHeadDim));
    }
    return d;
  }
  const std::size_t hidden = top.count("hidden_size", "with num_attention_heads, the head size");
  const std::size_t heads = top.count("num_attention_heads", "with hidden_size, the head size");
  if (heads == 0) top.fail("num_attention_heads", "= 0");
  if (hidden % heads != 0 || hidden / heads < 2 || (hidden / heads) % 2 != 0) {
    top.fail("hidden_size", "= " + std::to_string(hidden) +
                                " over num_attention_heads = " + std::to_string(heads) +
                                " is not an even whole head size (give head_dim)");
  }
  if (hidden / heads > kMaxRopeHeadDim) {
    top.fail("hidden_size", "= " + std::to_string(hidden) + " over num_attention_heads = " +
                                std::to_string(heads) + " is a head of more than " +
                                std::to_string(kMaxRopeHeadDim) + " columns");
  }
  return hidden / heads;
}

std::size_t read_rotary_dim(Keys& top, Keys* block, std::size_t head_dim) {
  std::string key = "partial_rotary_factor";
  std::optional<double> f = top.opt_number(key);
  const std::optional<double> pct = top.opt_number("rotary_pct");  // GPT-NeoX's name
  if (f && pct && *f != *pct) {
    top.fail(key, "= " + num(*f) + " disagrees with rotary_pct = " + num(*pct));
  }
  if (!f && (f = pct)) key = "rotary_pct";
  if (!f && block != nullptr && (f = block->opt_number(key))) key = block->name(key);
  if (!f) return head_dim;
  if (!(*f > 0.0 && *f <= 1.0)) top.fail(key, "= " + num(*f) + " must be in (0, 1]");
  // int(head_dim * partial_rotary_factor), in double as transformers computes it.
  const auto r = static_cast<std::size_t>(static_cast<double>(head_dim) * *f);
  if (r < 2 || r % 2 != 0) {
    top.fail(key, "= " + num(*f) + " rotates int(" + std::to_string(head_dim) + " * " + num(*f) +
                      ") = " + std::to_string(r) + " columns, which must be even and >= 2");
  }
  return r;
}

struct Lengths {
  std::size_t max_position_embeddings;
  std::optional<std::size_t> top_original;  // Phi-3's top-level original_max_position_embeddings
};

LongRopeScaling read_longrope(Keys& b, const Lengths& len, std::vector<std::string>& warnings) {
  LongRopeScaling l;
  l.short_factor = b.numbers("short_factor", "one factor per pair up to the trained length");
  l.long_factor = b.numbers("long_factor", "one factor per pair past the trained length");
  l.attention_factor = b.opt_number("attention_factor");
  const auto factor = b.opt_number("factor");
  std::optional<std::size_t> original = len.top_original;
  if (!original) original = b.opt_count("original_max_position_embeddings");
  if (original) {
    // _compute_longrope_parameters: the factor is the ratio of the two lengths.
    l.original_max_position_embeddings = *original;
    l.factor = static_cast<double>(len.max_position_embeddings) / static_cast<double>(*original);
    if (factor && *factor != l.factor) {
      warnings.push_back(b.name("factor") + " = " + num(*factor) +
                         " is not used: longrope's factor is max_position_embeddings / "
                         "original_max_position_embeddings = " +
                         num(l.factor));
    }
  } else {
    if (!factor) {
      b.fail("factor",
             "missing (longrope needs the trained length, original_max_position_"
             "embeddings at the top level as in Phi-3, or a factor)");
    }
    l.original_max_position_embeddings = len.max_position_embeddings;
    l.factor = *factor;
  }
  return l;
}

YarnScaling read_yarn(Keys& b, const Lengths& len) {
  YarnScaling y;
  y.factor = b.number("factor", "yarn's scale factor");
  y.original_max_position_embeddings =
      b.opt_count("original_max_position_embeddings").value_or(len.max_position_embeddings);
  // `rope_scaling.get("beta_fast") or 32`: absent, null or 0 give the default.
  if (const auto v = b.opt_number("beta_fast"); v && *v != 0.0) y.beta_fast = *v;
  if (const auto v = b.opt_number("beta_slow"); v && *v != 0.0) y.beta_slow = *v;
  y.attention_factor = b.opt_number("attention_factor");
  y.mscale = b.opt_number("mscale");
  y.mscale_all_dim = b.opt_number("mscale_all_dim");
  if (const Json* t = b.get("truncate")) {
    if (!t->is_boolean())
      b.fail("truncate", std::string("must be true or false, got ") + type_of(*t));
    y.truncate = t->get<bool>();
  }
  return y;
}

RopeScaling read_scaling(Keys& b, RopeScalingType type, const Lengths& len,
                         std::vector<std::string>& warnings) {
  switch (type) {
    case RopeScalingType::none:
      return NoScaling{};
    case RopeScalingType::linear:
      return LinearScaling{b.number("factor", "linear's factor")};
    case RopeScalingType::ntk:
      return NtkScaling{b.number("factor", "ntk's factor")};
    case RopeScalingType::dynamic:
      return DynamicNtkScaling{b.number("factor", "dynamic's factor"), len.max_position_embeddings};
    case RopeScalingType::yarn:
      return read_yarn(b, len);
    case RopeScalingType::llama3: {
      Llama3Scaling l;
      l.factor = b.number("factor", "llama3's factor, 8 in Llama 3.1");
      l.low_freq_factor = b.number("low_freq_factor", "1 in Llama 3.1");
      l.high_freq_factor = b.number("high_freq_factor", "4 in Llama 3.1");
      l.original_max_position_embeddings =
          b.count("original_max_position_embeddings", "the trained length, 8192 in Llama 3.1");
      return l;
    }
    case RopeScalingType::longrope:
      return read_longrope(b, len, warnings);
  }
  return NoScaling{};
}

RopeScalingType read_type(Keys& b, std::vector<std::string>& warnings) {
  auto text = [&](const char* key) -> std::optional<std::string> {
    const Json* v = b.get(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) b.fail(key, std::string("must be a string, got ") + type_of(*v));
    return v->get<std::string>();
  };
  const auto rope_type = text("rope_type");
  const auto type = text("type");
  if (!rope_type && !type) {
    b.fail("rope_type", "missing (the scaling method: linear, dynamic, yarn, llama3, longrope)");
  }
  if (rope_type && type && *rope_type != *type) {
    warnings.push_back(b.name("rope_type") + " " + quote_untrusted(*rope_type, 32) +
                       " is used; type " + quote_untrusted(*type, 32) +
                       " is not (transformers reads rope_type first)");
  }
  const std::string& name = rope_type ? *rope_type : *type;
  const char* key = rope_type ? "rope_type" : "type";
  if (name == "su") {  // Phi-3's first configs; transformers reads it as longrope
    warnings.push_back(b.name(key) + " 'su' is read as 'longrope', its later name");
    return RopeScalingType::longrope;
  }
  const auto t = rope_scaling_type_named(name);
  if (!t) {
    b.fail(key, quote_untrusted(name, 40) +
                    " is not a scaling method posemb knows (default, linear, ntk, dynamic, "
                    "yarn, llama3, longrope)");
  }
  if (*t == RopeScalingType::ntk) {
    warnings.push_back(b.name(key) +
                       " 'ntk' is posemb's fixed NTK-aware scaling; transformers "
                       "does not read it (its 'dynamic' is the dynamic form)");
  }
  return *t;
}

}  // namespace

RopeConfig parse_rope_config(std::string_view json_text, std::string_view source) {
  const Json root = detail::parse_config_json(json_text, source);
  Keys top(root, std::string(source), "");
  const Json* block_json = top.get("rope_scaling");
  std::string block_name = "rope_scaling";
  if (block_json == nullptr && (block_json = top.get("rope_parameters")) != nullptr) {
    block_name = "rope_parameters";  // transformers 5
  }
  if (block_json != nullptr && !block_json->is_object()) {
    top.fail(block_name, std::string("must be an object or null, got ") + type_of(*block_json));
  }
  std::optional<Keys> block;
  if (block_json != nullptr) block.emplace(*block_json, std::string(source), block_name + ".");
  // transformers 5 keeps rope_theta and partial_rotary_factor in rope_parameters too.
  Keys* v5 = block && block_name == "rope_parameters" ? &*block : nullptr;
  RopeConfig c;
  if (const std::string d = detail::rope_blocks_disagreement(root); !d.empty()) {
    c.warnings.push_back(d + ": rope_scaling is used");
  }
  c.base = read_base(top, v5, c.warnings);
  c.head_dim = read_head_dim(top);
  c.rotary_dim = read_rotary_dim(top, v5, c.head_dim);
  const Lengths len{top.count("max_position_embeddings", "the length the model runs to"),
                    top.opt_count("original_max_position_embeddings")};
  if (len.max_position_embeddings == 0) top.fail("max_position_embeddings", "= 0");
  c.max_position_embeddings = len.max_position_embeddings;
  if (block) {
    const RopeScalingType type = read_type(*block, c.warnings);
    c.scaling = read_scaling(*block, type, len, c.warnings);
    if (len.top_original && type != RopeScalingType::longrope) {
      c.warnings.push_back(
          "original_max_position_embeddings at the top level is read by longrope "
          "only (yarn and llama3 read rope_scaling's); not used by '" +
          std::string(rope_scaling_name(type)) + "'");
    }
    for (const std::string& k : block->unread()) {
      c.warnings.push_back(block_name + "." + k + " is not used by '" +
                           std::string(rope_scaling_name(type)) + "' (ignored)");
    }
  }
  try {
    validate_rope_scaling(c.scaling, c.rotary_dim, c.base);
    // Every frequency the config gives at its trained and extended lengths is usable (finite,
    // within [1e-300, 1e300]): computed once here, so that a config is refused when it is read.
    (void)rope_frequencies(c.base, c.rotary_dim, c.scaling, 0);
    if (scaled_length_passes_positions(c)) {
      throw FileFormatError(
          source, "rope_scaling.factor = " + num(factor_of(c.scaling)) + " stretches the trained " +
                      std::to_string(c.trained_length()) +
                      " positions past 2^63 - 1, the most a position can be (a factor that "
                      "large targets no sequence; give the length the model is to run to)");
    }
    (void)rope_frequencies(c.base, c.rotary_dim, c.scaling, c.extended_length());
  } catch (const RopeScalingError& e) {
    throw FileFormatError(source, e.what());
  }
  for (std::string& w : c.warnings) w = quote_untrusted(source, 200) + ": " + w;
  return c;
}

RopeConfig read_rope_config(const std::string& path) {
  detail::check_path(path, "read_rope_config");
  return parse_rope_config(detail::read_config_text(path), path);
}

RopeOptions RopeConfig::options(std::size_t seq_len) const {
  return RopeOptions{base, rotary_dim, scaling, seq_len};
}

Rope RopeConfig::rope(RopeLayout layout, std::size_t seq_len) const {
  return Rope(head_dim, layout, options(seq_len));
}

std::size_t RopeConfig::trained_length() const {
  if (const auto* y = std::get_if<YarnScaling>(&scaling))
    return y->original_max_position_embeddings;
  if (const auto* l = std::get_if<Llama3Scaling>(&scaling))
    return l->original_max_position_embeddings;
  if (const auto* l = std::get_if<LongRopeScaling>(&scaling))
    return l->original_max_position_embeddings;
  return max_position_embeddings;
}

std::size_t RopeConfig::scaled_length() const {
  const long double length = std::floor(static_cast<long double>(factor_of(scaling)) *
                                        static_cast<long double>(trained_length()));
  // At or past 2^64 the length does not fit a std::size_t (converting it would be undefined):
  // saturated.
  constexpr long double kLimit = 18446744073709551616.0L;  // 2^64, exact in long double
  if (!(length < kLimit)) return std::numeric_limits<std::size_t>::max();
  return static_cast<std::size_t>(length);
}

std::size_t RopeConfig::extended_length() const {
  return max_position_embeddings > trained_length() ? max_position_embeddings : scaled_length();
}

}  // namespace posemb
