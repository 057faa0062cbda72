// The registry of the lab's positional encodings, and the Encoding interface's defaults.
#include <array>

#include "lab/encodings/encoding.hpp"
#include "posemb/errors.hpp"

namespace posemb::lab {

// Each encoding's file in lab/encodings/ defines its spec; name it here, in both lines (the order
// is the order of --help and of the tests).
extern const EncodingSpec kLearned, kLearnedRandomized, kSinusoidal, kRope, kAlibi, kNone;
namespace {
constexpr std::array kRegistry = {&kLearned, &kLearnedRandomized, &kSinusoidal, &kRope, &kAlibi,
                                  &kNone};
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

void Encoding::rotate_qk_forward(MatrixView<float>, std::span<const std::int64_t>,
                                 std::size_t) const {}
void Encoding::rotate_qk_backward(MatrixView<float>, std::span<const std::int64_t>,
                                  std::size_t) const {}
std::span<const float> Encoding::attention_slopes() const {
  return {};
}
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
