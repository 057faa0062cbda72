// The registry of the lab's positional encodings (lab/encodings/registry.hpp), and the Encoding
// interface's defaults.
#include "lab/encodings/registry.hpp"

#include <array>

#include "posemb/errors.hpp"

namespace posemb::lab {

// Each encoding's file in lab/encodings/ defines its spec; name it here, in both lines (the order
// is the order of --help and of the tests).
extern const EncodingSpec kLearned, kLearnedRandomized, kSinusoidal, kRope, kAlibi, kT5Bias, kNone;
namespace {
constexpr std::array kRegistry = {
    &kLearned, &kLearnedRandomized, &kSinusoidal, &kRope, &kAlibi, &kT5Bias, &kNone};
}  // namespace

std::span<const EncodingSpec* const> encodings() {
  return kRegistry;
}

std::string encoding_names() {
  std::string s;
  for (const auto* e : kRegistry) {
    if (!s.empty()) s += ", ";
    s += e->name;
  }
  return s;
}

std::vector<std::string> encoding_name_list() {
  std::vector<std::string> out;
  for (const auto* e : kRegistry) out.emplace_back(e->name);
  return out;
}

const EncodingSpec* find_encoding_if(bool (*pred)(const EncodingSpec&)) {
  for (const auto* e : kRegistry) {
    if (pred(*e)) return e;
  }
  return nullptr;
}

const std::string& default_encoding_name() {
  static const std::string name(kRegistry.front()->name);
  return name;
}

const EncodingSpec& find_encoding(std::string_view name) {
  for (const auto* e : kRegistry) {
    if (e->name == name) return *e;
  }
  throw ConfigError({"model.pe"}, "model config: positional encoding " + quote_untrusted(name, 64) +
                                      " is not one of " + encoding_names());
}

const EncodingSpec& validate_model(const ModelConfig& cfg) {
  return validate_model(cfg, find_encoding(cfg.pe));
}

const EncodingSpec& validate_model(const ModelConfig& cfg, const EncodingSpec& spec) {
  if (cfg.pe != spec.name) {
    throw ConfigError({"model.pe"}, "model config: encoding " + quote_untrusted(cfg.pe, 64) +
                                        " is not " + std::string(spec.name));
  }
  if (!spec.has_relative_buckets() && !cfg.relative_bias.empty()) {
    throw ConfigError(
        {"model.relative_bias.num_buckets", "model.relative_bias.max_distance", "model.pe"},
        "model config: relative-position buckets (num_buckets " +
            std::to_string(cfg.relative_bias.num_buckets) + ", max_distance " +
            std::to_string(cfg.relative_bias.max_distance) +
            ") set the rows of a learned relative bias, and encoding " + std::string(spec.name) +
            " has none (they must be 0)");
  }
  cfg.check_fields();
  if (spec.has_table) {
    check_limit("model", "max_seq_len", cfg.max_seq_len, limits::max_seq_len);
  } else if (cfg.max_seq_len != 0) {
    throw ConfigError({"model.max_seq_len", "model.pe"},
                      "model config: max_seq_len " + std::to_string(cfg.max_seq_len) +
                          " sets the rows of a learned table, and encoding " +
                          std::string(spec.name) + " has none (it must be 0)");
  }
  if (cfg.rope_scaling.method != rope_scaling_methods().front() &&
      spec.site != EncodingSite::attention) {
    throw ConfigError({"model.rope_scaling", "model.pe"},
                      "model config: rope scaling " + cfg.rope_scaling.method +
                          " stretches the rotation of q and k, and encoding " +
                          std::string(spec.name) + " has none");
  }
  if (spec.has_relative_buckets() && cfg.relative_bias.empty()) {
    throw ConfigError({"model.relative_bias.num_buckets", "model.relative_bias.max_distance"},
                      "model config: encoding " + std::string(spec.name) +
                          " needs its relative-position buckets (num_buckets, max_distance)");
  }
  if (spec.validate != nullptr) spec.validate(cfg);
  return spec;
}

void Encoding::rotate_qk_forward(MatrixView<float>, std::span<const std::int64_t>,
                                 std::size_t) const {}
void Encoding::rotate_qk_backward(MatrixView<float>, std::span<const std::int64_t>,
                                  std::size_t) const {}
bool Encoding::scores_bias(MatrixView<float>) const {
  return false;
}
void Encoding::scores_bias_backward(std::span<const MatrixView<float>>,
                                    MatrixView<const float>) const {}
void Encoding::check_positions(const PositionSource&, std::size_t, std::size_t) const {}
void Encoding::reserve(std::size_t) {}
std::vector<TensorSlot> Encoding::tensors() {
  return {};
}
void Encoding::zero_grad() {}
const LearnedPositionalEmbedding* Encoding::learned_table() const {
  return nullptr;
}

}  // namespace posemb::lab
