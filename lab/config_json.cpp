// RunConfig as JSON (a checkpoint's posemb.lab.run metadata) and back. The text read back comes
// from a file, so it is untrusted: its size is bounded, every key is expected exactly once with
// its JSON type, numbers must fit their C++ type, and the result is validated against the
// limits of lab/config.hpp. The list of fields is written once (visit_fields) for both ways.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lab/config.hpp"
#include "posemb/errors.hpp"

namespace posemb::lab {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Every field of the run JSON, in order: visitor(section, key, member, limit). The limit (or
// nullptr) is only for messages about a value of the wrong type; check_fields() checks the range.
template <class Run, class Visitor>
void visit_fields(Run& c, Visitor&& v) {
  namespace lim = limits;
  const Limit<std::size_t>* none = nullptr;
  v("model", "vocab_size", c.model.vocab_size, none);
  v("model", "d_model", c.model.d_model, &lim::d_model);
  v("model", "n_layers", c.model.n_layers, &lim::n_layers);
  v("model", "n_heads", c.model.n_heads, &lim::n_heads);
  v("model", "d_ff", c.model.d_ff, &lim::d_ff);
  v("model", "pe", c.model.pe, none);
  v("model", "max_seq_len", c.model.max_seq_len, none);
  v("model", "rope_base", c.model.rope_base, &lim::positive);
  v("model", "sinusoidal_base", c.model.sinusoidal_base, &lim::positive);
  v("model", "init_std", c.model.init_std, &lim::positive);
  v("model", "embed_init_std", c.model.embed_init_std, &lim::positive);
  v("task", "kind", c.task.kind, none);
  v("task", "alphabet", c.task.alphabet, &lim::alphabet);
  v("task", "train_len", c.task.train_len, &lim::train_len);
  v("train", "batch", c.train.batch, &lim::batch);
  v("train", "micro_batch", c.train.micro_batch, &lim::micro_batch);
  v("train", "sort_by_length", c.train.sort_by_length, none);
  v("train", "steps", c.train.steps, &lim::steps);
  v("train", "warmup", c.train.warmup, &lim::warmup);
  v("train", "lr", c.train.lr, &lim::lr);
  v("train", "min_lr_ratio", c.train.min_lr_ratio, &lim::min_lr_ratio);
  v("train", "weight_decay", c.train.weight_decay, &lim::non_negative);
  v("train", "beta1", c.train.beta1, &lim::beta);
  v("train", "beta2", c.train.beta2, &lim::beta);
  v("train", "grad_clip", c.train.grad_clip, &lim::non_negative);
  v("train", "seed", c.train.seed, none);
}

constexpr const char* kSections[] = {"model", "task", "train"};

[[noreturn]] void refuse(const std::string& field, const std::string& problem) {
  throw ConfigError({field}, "run config JSON: " + field + " " + problem);
}

// A JSON value as shown in a message: short, escaped.
std::string shown(const Json& v) {
  return quote_untrusted(v.dump(-1, ' ', false, Json::error_handler_t::replace), 64);
}

const char* type_of(const Json& v) {
  return v.is_number() ? "a number" : v.type_name();
}

template <class T>
std::string range_text(const Limit<T>* lim) {
  return lim != nullptr ? " in " + lim->text() : std::string();
}

struct Reader {
  const Json& root;
  std::set<std::string> read;  // "model.d_model"

  const Json& value(const char* section, const char* key) {
    const std::string field = std::string(section) + "." + key;
    const auto s = root.find(section);
    if (s == root.end()) refuse(section, "is missing (expected an object)");
    if (!s->is_object()) refuse(section, std::string("is ") + type_of(*s) + ", not an object");
    const auto k = s->find(key);
    if (k == s->end()) refuse(field, "is missing");
    read.insert(field);
    return *k;
  }

  void operator()(const char* section, const char* key, std::size_t& out,
                  const Limit<std::size_t>* lim) {
    const Json& v = value(section, key);
    // Whole numbers only, within the type (a 25-digit number arrives as a float).
    if (!v.is_number_unsigned()) {
      refuse(std::string(section) + "." + key,
             "is " + shown(v) + ", not a whole number" + (lim ? range_text(lim) : " >= 0"));
    }
    out = v.get<std::size_t>();
  }
  void operator()(const char* section, const char* key, double& out, const Limit<double>* lim) {
    const Json& v = value(section, key);
    if (!v.is_number()) {
      refuse(std::string(section) + "." + key,
             "is " + shown(v) + ", not a number" + range_text(lim));
    }
    out = v.get<double>();
  }
  void operator()(const char* section, const char* key, float& out, const Limit<double>* lim) {
    double d = 0;
    (*this)(section, key, d, lim);
    // The setting is a float: a value past float's range would not survive the conversion.
    if (!(std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max()))) {
      refuse(std::string(section) + "." + key,
             "is " + shown(Json(d)) + ", not a finite float" + range_text(lim));
    }
    out = static_cast<float>(d);
  }
  void operator()(const char* section, const char* key, bool& out, const Limit<std::size_t>*) {
    const Json& v = value(section, key);
    if (!v.is_boolean()) {
      refuse(std::string(section) + "." + key, "is " + shown(v) + ", not true or false");
    }
    out = v.get<bool>();
  }
  void operator()(const char* section, const char* key, std::string& out,
                  const Limit<std::size_t>*) {
    const Json& v = value(section, key);
    if (!v.is_string())
      refuse(std::string(section) + "." + key, "is " + shown(v) + ", not a string");
    out = v.get<std::string>();
  }
};

struct Writer {
  OrderedJson& root;
  template <class T, class L>
  void operator()(const char* section, const char* key, const T& value, const L*) {
    root[section][key] = value;
  }
};

// Refuses a key that appears twice in one object (nlohmann would keep the last one silently).
class DuplicateKeys {
 public:
  bool operator()(int depth, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    if (event == E::object_start) {
      open_.emplace_back();
    } else if (event == E::object_end && !open_.empty()) {
      open_.pop_back();
    } else if (event == E::key && !open_.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!open_.back().insert(key).second) {
        throw ConfigError({key}, "run config JSON: key " + quote_untrusted(key, 64) +
                                     " appears twice in one object (at depth " +
                                     std::to_string(depth) + ")");
      }
    }
    return true;
  }

 private:
  std::vector<std::set<std::string>> open_;
};

// model.rope_scaling, an object {method, factor, original_len}, is written only for a scaled
// rope (so the settings of every other run read as before) and read when present.
constexpr const char* kRopeScaling = "rope_scaling";

void read_rope_scaling(const Json& model, RopeScalingConfig& out, std::set<std::string>& read) {
  const auto it = model.find(kRopeScaling);
  if (it == model.end()) return;
  const std::string field = std::string("model.") + kRopeScaling;
  if (!it->is_object()) refuse(field, std::string("is ") + type_of(*it) + ", not an object");
  const Json wrapped = Json::object({{"rope_scaling", *it}});
  Reader sub{wrapped, {}};
  sub("rope_scaling", "method", out.method, nullptr);
  sub("rope_scaling", "factor", out.factor, &limits::rope_factor);
  sub("rope_scaling", "original_len", out.original_len, nullptr);
  for (const auto& [key, unused] : it->items()) {
    if (sub.read.count("rope_scaling." + key) == 0) {
      refuse(field + "." + quote_untrusted(key, 64), "is not a setting of this version");
    }
  }
  if (out.method == rope_scaling_methods().front()) {
    refuse(field, "is written for a scaled rope only, and its method is none");
  }
  read.insert(field);
}

// model.relative_bias, an object {num_buckets, max_distance}, is written only for an encoding
// with relative-position buckets (so the settings of every other run read as before) and read
// when present.
constexpr const char* kRelativeBias = "relative_bias";

void read_relative_bias(const Json& model, RelativeBiasConfig& out, std::set<std::string>& read) {
  const auto it = model.find(kRelativeBias);
  if (it == model.end()) return;
  const std::string field = std::string("model.") + kRelativeBias;
  if (!it->is_object()) refuse(field, std::string("is ") + type_of(*it) + ", not an object");
  const Json wrapped = Json::object({{"model.relative_bias", *it}});
  Reader sub{wrapped, {}};
  sub("model.relative_bias", "num_buckets", out.num_buckets, &limits::num_buckets);
  sub("model.relative_bias", "max_distance", out.max_distance, &limits::max_distance);
  for (const auto& [key, unused] : it->items()) {
    if (sub.read.count("model.relative_bias." + key) == 0) {
      refuse(field + "." + quote_untrusted(key, 64), "is not a setting of this version");
    }
  }
  if (out.empty()) refuse(field, "is written for buckets only, and it has none (0, 0)");
  read.insert(field);
}

// task.corpus, an object {path, name, bytes, sha256}, is written only for a task with a corpus
// (so the settings of every other run read as before) and read when present.
constexpr const char* kCorpus = "corpus";

void read_corpus(const Json& task, TaskConfig& out, std::set<std::string>& read) {
  const auto it = task.find(kCorpus);
  if (it == task.end()) return;
  const std::string field = std::string("task.") + kCorpus;
  if (!it->is_object()) refuse(field, std::string("is ") + type_of(*it) + ", not an object");
  const Json wrapped = Json::object({{"corpus", *it}});
  Reader sub{wrapped, {}};
  sub("corpus", "path", out.corpus, nullptr);
  sub("corpus", "name", out.corpus_identity.name, nullptr);
  sub("corpus", "bytes", out.corpus_identity.bytes, nullptr);
  sub("corpus", "sha256", out.corpus_identity.sha256, nullptr);
  for (const auto& [key, unused] : it->items()) {
    if (sub.read.count("corpus." + key) == 0) {
      refuse(field + "." + quote_untrusted(key, 64), "is not a setting of this version");
    }
  }
  if (out.corpus_identity.empty()) refuse(field, "is written with a corpus's identity only");
  read.insert(field);
}

}  // namespace

std::string RunConfig::to_json() const {
  OrderedJson j;
  visit_fields(*this, Writer{j});
  const RopeScalingConfig& r = model.rope_scaling;
  if (r.method != rope_scaling_methods().front()) {
    j["model"][kRopeScaling] = {
        {"method", r.method}, {"factor", r.factor}, {"original_len", r.original_len}};
  }
  const RelativeBiasConfig& b = model.relative_bias;
  if (!b.empty()) {
    j["model"][kRelativeBias] = {{"num_buckets", b.num_buckets}, {"max_distance", b.max_distance}};
  }
  if (!task.corpus_identity.empty()) {  // a run made (lab::complete_task) names its corpus
    const CorpusIdentity& id = task.corpus_identity;
    j["task"][kCorpus] = {
        {"path", task.corpus}, {"name", id.name}, {"bytes", id.bytes}, {"sha256", id.sha256}};
  }
  return j.dump();
}

RunConfig RunConfig::from_json(const std::string& text) {
  if (text.size() > kMaxRunJsonBytes) {
    throw ConfigError({}, "run config JSON: " + std::to_string(text.size()) +
                              " bytes, more than the " + std::to_string(kMaxRunJsonBytes) +
                              " a run's settings can take");
  }
  // The JSON parser would take a NUL byte for the end of the text and ignore what follows.
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    throw ConfigError({}, "run config JSON holds a NUL byte at byte " + std::to_string(nul));
  }
  Json j;
  try {
    DuplicateKeys dup;
    j = Json::parse(text, [&dup](int d, Json::parse_event_t e, Json& p) { return dup(d, e, p); });
  } catch (const Json::exception& e) {
    // A syntax error, or a number out of double's range (out_of_range.406). nlohmann's text,
    // without its tag and the bytes it last read (they come from the file).
    std::string what = e.what();
    if (const auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
    if (const auto last = what.find("; last read"); last != std::string::npos) what.erase(last);
    const bool plain = what.size() <= 200 && std::all_of(what.begin(), what.end(), [](char ch) {
                         return ch >= 0x20 && ch < 0x7f;
                       });
    throw ConfigError(
        {}, "run config JSON is malformed (" + (plain ? what : quote_untrusted(what, 160)) + ")");
  }
  if (!j.is_object()) {
    throw ConfigError({}, std::string("run config JSON is ") + type_of(j) + ", not an object");
  }
  RunConfig c;
  Reader reader{j, {}};
  visit_fields(c, reader);
  read_rope_scaling(j.at("model"), c.model.rope_scaling, reader.read);
  read_relative_bias(j.at("model"), c.model.relative_bias, reader.read);
  read_corpus(j.at("task"), c.task, reader.read);
  // Nothing else: an unknown key is a typo or a setting this version does not have.
  for (const auto& [section, value] : j.items()) {
    bool known = false;
    for (const char* s : kSections) known = known || section == s;
    if (!known) refuse(quote_untrusted(section, 64), "is not a section of the run settings");
    for (const auto& [key, unused] : value.items()) {
      const std::string field = section + "." + key;
      if (reader.read.count(field) == 0) {
        refuse(section + "." + quote_untrusted(key, 64), "is not a setting of this version");
      }
    }
  }
  c.check_fields();
  return c;
}

}  // namespace posemb::lab
