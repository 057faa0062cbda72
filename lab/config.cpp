// The settings' limits and the checks of their fields (lab/config.hpp).
#include "lab/config.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <type_traits>

#include "posemb/errors.hpp"

namespace posemb::lab {

template <class T>
std::string Limit<T>::text() const {
  auto num = [](T v) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isinf(v)) return std::string(v > 0 ? "inf" : "-inf");
      std::ostringstream o;
      o << v;
      return o.str();
    } else {
      return std::to_string(v);
    }
  };
  std::string s(min_open ? "(" : "[");
  s += num(min);
  s += ", ";
  s += num(max);
  s += max_open ? ")" : "]";
  return s;
}
template struct Limit<std::size_t>;
template struct Limit<double>;

namespace {

// Throws ConfigError "<part> config: <field> <value> must be in <range>".
template <class T, class V>
void check(const char* part, const char* field, V value, const Limit<T>& lim) {
  if (lim.contains(static_cast<T>(value))) return;
  std::ostringstream o;
  o << part << " config: " << field << ' ' << value << " must be in " << lim.text();
  throw ConfigError({std::string(part) + "." + field}, o.str());
}

// The scaling's method, factor and L0; whether the encoding rotates is the encoding's to check
// (lab::validate_model), the method's own parameters the library's (the rope encoding's).
void check_rope_scaling(const RopeScalingConfig& r) {
  const auto& methods = rope_scaling_methods();
  if (std::find(methods.begin(), methods.end(), r.method) == methods.end()) {
    std::string names;
    for (const auto& n : methods) names += (names.empty() ? "" : ", ") + n;
    throw ConfigError(
        {"model.rope_scaling"},
        "model config: rope scaling " + quote_untrusted(r.method, 64) + " is not one of " + names);
  }
  if (r.method == methods.front()) {
    if (r.original_len != 0 || r.factor != 1.0) {
      throw ConfigError({"model.rope_factor"},
                        "model config: a rope factor or original length without a rope scaling");
    }
    return;
  }
  check("model", "rope_factor", r.factor, limits::rope_factor);
  if (r.original_len == 0) {
    throw ConfigError({"model.rope_scaling"},
                      "model config: rope scaling " + r.method + " needs the trained length >= 1");
  }
}

}  // namespace

void check_limit(const char* part, const char* field, std::size_t value,
                 const Limit<std::size_t>& lim) {
  check(part, field, value, lim);
}

const std::vector<std::string>& rope_scaling_methods() {
  static const std::vector<std::string> m = {"none", "linear", "ntk", "dynamic", "yarn"};
  return m;
}

const std::vector<std::string>& scoring_names() {
  static const std::vector<std::string> names = {"greedy", "teacher-forced"};
  return names;
}

const std::string& scoring_name(Scoring s) {
  return scoring_names().at(static_cast<std::size_t>(s));
}

Scoring parse_scoring(const std::string& name) {
  const auto& names = scoring_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Scoring>(i);
  }
  throw ConfigError({"eval.scoring"}, "eval config: scoring " + quote_untrusted(name, 64) +
                                          " is not one of greedy, teacher-forced");
}

std::string RopeScalingConfig::text() const {
  if (method == rope_scaling_methods().front()) return method;
  std::ostringstream o;
  o << method << " x" << factor << " over " << original_len << " trained positions";
  return o.str();
}

void ModelConfig::check_fields() const {
  if (vocab_size < 2) {
    throw ConfigError({"model.vocab_size"},
                      "model config: vocab_size " + std::to_string(vocab_size) + " must be >= 2");
  }
  check("model", "d_model", d_model, limits::d_model);
  check("model", "n_layers", n_layers, limits::n_layers);
  check("model", "n_heads", n_heads, limits::n_heads);
  check("model", "d_ff", d_ff, limits::d_ff);
  if (d_model % n_heads != 0) {
    throw ConfigError({"model.d_model", "model.n_heads"},
                      "model config: d_model " + std::to_string(d_model) +
                          " is not a multiple of n_heads " + std::to_string(n_heads));
  }
  check("model", "rope_base", rope_base, limits::positive);
  check("model", "sinusoidal_base", sinusoidal_base, limits::positive);
  check("model", "init_std", init_std, limits::init_std);
  check("model", "embed_init_std", embed_init_std, limits::init_std);
  check_rope_scaling(rope_scaling);
  if (!relative_bias.empty()) {
    check("model", "relative_bias.num_buckets", relative_bias.num_buckets, limits::num_buckets);
    check("model", "relative_bias.max_distance", relative_bias.max_distance, limits::max_distance);
  }
}

std::string CorpusIdentity::text() const {
  return quote_untrusted(name, 256) + " (" + std::to_string(bytes) + " bytes, sha256 " +
         sha256.substr(0, 16) + "...)";
}

void TaskConfig::check_fields() const {
  check("task", "alphabet", alphabet, limits::alphabet);
  check("task", "train_len", train_len, limits::train_len);
  if (corpus_identity.empty()) return;
  const std::string& d = corpus_identity.sha256;
  const bool hex = d.size() == 64 && std::all_of(d.begin(), d.end(), [](char c) {
                     return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                   });
  if (corpus_identity.name.empty() || corpus_identity.bytes == 0 || !hex) {
    throw ConfigError({"task.corpus"}, "task config: the corpus identity " +
                                           quote_untrusted(corpus_identity.name, 64) + ", " +
                                           std::to_string(corpus_identity.bytes) +
                                           " bytes, sha256 " + quote_untrusted(d, 80) +
                                           " is not a name, a size > 0 and 64 lowercase hex "
                                           "digits");
  }
}

void TrainConfig::validate() const {
  check("train", "batch", batch, limits::batch);
  check("train", "micro_batch", micro_batch, limits::micro_batch);
  check("train", "steps", steps, limits::steps);
  check("train", "warmup", warmup, limits::warmup);
  check("train", "lr", lr, limits::lr);
  check("train", "min_lr_ratio", min_lr_ratio, limits::min_lr_ratio);
  check("train", "weight_decay", weight_decay, limits::non_negative);
  check("train", "beta1", beta1, limits::beta);
  check("train", "beta2", beta2, limits::beta);
  check("train", "grad_clip", grad_clip, limits::non_negative);
}

void EvalConfig::validate() const {
  check("eval", "samples", samples, limits::samples);
  if (!lengths.empty()) {
    if (lengths.size() > limits::eval_len.max) {
      throw ConfigError({"eval.lengths"}, "eval config: " + std::to_string(lengths.size()) +
                                              " lengths, more than the " +
                                              std::to_string(limits::eval_len.max) +
                                              " of the longest range");
    }
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      check("eval", "lengths", lengths[i], limits::eval_len);
      if (i > 0 && lengths[i] <= lengths[i - 1]) {
        throw ConfigError({"eval.lengths"}, "eval config: lengths " +
                                                std::to_string(lengths[i - 1]) + ", " +
                                                std::to_string(lengths[i]) + " are not increasing");
      }
    }
    return;
  }
  check("eval", "min_len", min_len, limits::eval_len);
  check("eval", "max_len", max_len, limits::eval_len);
  if (max_len < min_len) {
    throw ConfigError({"eval.min_len", "eval.max_len"},
                      "eval config: lengths " + std::to_string(min_len) + ".." +
                          std::to_string(max_len) + " are empty (min_len > max_len)");
  }
}

std::vector<std::size_t> EvalConfig::length_list() const {
  if (!lengths.empty()) return lengths;
  std::vector<std::size_t> out;
  for (std::size_t n = min_len; n <= max_len && n >= min_len; ++n) out.push_back(n);
  return out;
}

void RunConfig::check_fields() const {
  task.check_fields();
  train.validate();
  model.check_fields();
}

}  // namespace posemb::lab
