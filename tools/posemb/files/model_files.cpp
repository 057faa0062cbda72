// The checkpoints `posemb make-checkpoint` writes (model_files.hpp): each model's embedding
// tensors and config.json keys, as transformers names and shapes them.
#include "model_files.hpp"

#include <fmt/core.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "posemb/initializers.hpp"
#include "posemb/matrix.hpp"
#include "posemb/memory.hpp"
#include "posemb/random.hpp"
#include "posemb/table_provenance.hpp"

namespace posemb::cli {
namespace {

using Json = nlohmann::json;  // keys sorted, as transformers writes config.json
using Shape = std::vector<std::uint64_t>;

// Fills the tensors of one model, each drawn from its own stream of the seed.
class Builder {
 public:
  explicit Builder(std::uint64_t seed) : seed_(seed) {}

  // N(0, 0.02) values in `shape`, the row zero_row (of the shape read as (rows, last)) all zeros.
  void normal(std::string name, Shape shape, std::optional<std::size_t> zero_row = {}) {
    check(name, rows_of(shape) * shape.back() * sizeof(float));
    Matrix<float> m(rows_of(shape), shape.back());
    initialize_table(m, {InitKind::normal, 0.02, splitmix64(splitmix64(seed_) ^ files_.size())});
    if (zero_row) std::memset(m.row(*zero_row).data(), 0, m.cols() * sizeof(float));
    add(std::move(name), DType::F32, std::move(shape), m.data(), m.rows() * m.cols());
  }
  // Every value `value` (LayerNorm: weight 1, bias 0).
  void constant(std::string name, Shape shape, float value) {
    check(name, rows_of(shape) * shape.back() * sizeof(float));
    std::vector<float> v(rows_of(shape) * shape.back(), value);
    add(std::move(name), DType::F32, std::move(shape), v.data(), v.size());
  }
  // A (1, n) int64 buffer 0, 1, ..., n - 1 (position_ids).
  void counting(std::string name, std::size_t n) {
    check(name, n * sizeof(std::int64_t));
    std::vector<std::int64_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int64_t>(i);
    add(std::move(name), DType::I64, {1, n}, v.data(), n);
  }
  std::vector<Tensor> take() { return std::move(files_); }

 private:
  static std::size_t rows_of(const Shape& shape) {
    std::size_t rows = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    return rows;
  }
  // The memory budget (posemb/memory.hpp) before a tensor of `bytes` is drawn: the tensors held
  // so far, the new one's buffer and its copy in the Tensor, and a dtype conversion's copy
  // (--dtype). The largest table comes first, so that a --dim too wide for the budget is refused
  // before any value is drawn.
  void check(const std::string& name, std::size_t bytes) const {
    check_allocation("make-checkpoint (" + name + ")",
                     saturating_add(held_, saturating_mul(3, bytes)));
  }
  template <class T>
  void add(std::string name, DType dtype, Shape shape, const T* data, std::size_t count) {
    const auto* bytes = reinterpret_cast<const std::byte*>(data);
    held_ += count * sizeof(T);
    files_.push_back(
        Tensor::from_bytes(std::move(name), dtype, std::move(shape), {bytes, count * sizeof(T)}));
  }
  std::uint64_t seed_;
  std::size_t held_ = 0;  // the bytes of files_
  std::vector<Tensor> files_;
};

// A LayerNorm's weight and bias.
void layer_norm(Builder& b, const std::string& prefix, std::size_t c) {
  b.constant(prefix + ".weight", {c}, 1.0F);
  b.constant(prefix + ".bias", {c}, 0.0F);
}

// The keys of a transformer of width c that every family shares (heads of 64 columns).
Json encoder_keys(std::size_t c) {
  return {{"hidden_size", c},
          {"intermediate_size", 4 * c},
          {"num_attention_heads", c % 64 == 0 ? c / 64 : 1},
          {"num_hidden_layers", 12}};
}

// A BERT-style embedding block (BERT, RoBERTa): word, position and token-type tables, LayerNorm,
// position_ids; `pad` is the padding token's row (zero in the word table), and in RoBERTa's
// position table too (position_pad).
void bert_embeddings(Builder& b, const std::string& p, std::size_t c, std::size_t vocab,
                     std::size_t positions, std::size_t types, std::size_t pad,
                     std::optional<std::size_t> position_pad) {
  b.normal(p + "word_embeddings.weight", {vocab, c}, pad);
  b.normal(p + "position_embeddings.weight", {positions, c}, position_pad);
  b.normal(p + "token_type_embeddings.weight", {types, c});
  layer_norm(b, p + "LayerNorm", c);
  b.counting(p + "position_ids", positions);
}

ModelFiles gpt2(Builder& b, std::size_t c) {
  b.normal("wte.weight", {50257, c});
  b.normal("wpe.weight", {1024, c});
  layer_norm(b, "ln_f", c);
  Json cfg = {{"architectures", {"GPT2LMHeadModel"}},
              {"model_type", "gpt2"},
              {"n_ctx", 1024},
              {"n_embd", c},
              {"n_head", c % 64 == 0 ? c / 64 : 1},
              {"n_layer", 12},
              {"n_positions", 1024},
              {"vocab_size", 50257},
              {"bos_token_id", 50256},
              {"eos_token_id", 50256},
              {"initializer_range", 0.02},
              {"layer_norm_epsilon", 1e-05}};
  return {b.take(), cfg.dump(2), {}, {"wpe.weight"}, ""};
}

ModelFiles bert(Builder& b, std::size_t c) {
  bert_embeddings(b, "bert.embeddings.", c, 30522, 512, 2, 0, std::nullopt);
  Json cfg = encoder_keys(c);
  cfg.update({{"architectures", {"BertModel"}},
              {"model_type", "bert"},
              {"max_position_embeddings", 512},
              {"type_vocab_size", 2},
              {"vocab_size", 30522},
              {"pad_token_id", 0},
              {"layer_norm_eps", 1e-12},
              {"position_embedding_type", "absolute"}});
  return {b.take(), cfg.dump(2), {}, {"bert.embeddings.position_embeddings.weight"}, ""};
}

ModelFiles roberta(Builder& b, std::size_t c) {
  bert_embeddings(b, "roberta.embeddings.", c, 50265, 514, 1, 1, 1);
  Json cfg = encoder_keys(c);
  cfg.update({{"architectures", {"RobertaModel"}},
              {"model_type", "roberta"},
              {"max_position_embeddings", 514},
              {"type_vocab_size", 1},
              {"vocab_size", 50265},
              {"pad_token_id", 1},
              {"bos_token_id", 0},
              {"eos_token_id", 2},
              {"layer_norm_eps", 1e-05}});
  return {b.take(),
          cfg.dump(2),
          {},
          {"roberta.embeddings.position_embeddings.weight"},
          "its first 2 rows are reserved (row 1, the padding row, is zero): position p is row "
          "p + 2, 512 positions; pass --reserved-rows 2 to inspect and resize"};
}

ModelFiles vit(Builder& b, std::size_t c) {
  b.normal("vit.embeddings.cls_token", {1, 1, c});
  b.normal("vit.embeddings.position_embeddings", {1, 197, c});
  b.normal("vit.embeddings.patch_embeddings.projection.weight", {c, 3, 16, 16});
  b.constant("vit.embeddings.patch_embeddings.projection.bias", {c}, 0.0F);
  Json cfg = encoder_keys(c);
  cfg.update({{"architectures", {"ViTModel"}},
              {"model_type", "vit"},
              {"image_size", 224},
              {"patch_size", 16},
              {"num_channels", 3},
              {"layer_norm_eps", 1e-12},
              {"qkv_bias", true}});
  return {b.take(),
          cfg.dump(2),
          {},
          {"vit.embeddings.position_embeddings"},
          "the table is (1, 197, C): the class token, then a 14x14 grid of 16-pixel patches of a "
          "224-pixel image"};
}

ModelFiles clip(Builder& b, std::optional<std::size_t> dim) {
  const std::size_t ct = dim.value_or(512), cv = dim.value_or(768);
  b.normal("text_model.embeddings.token_embedding.weight", {49408, ct});
  b.normal("text_model.embeddings.position_embedding.weight", {77, ct});
  b.counting("text_model.embeddings.position_ids", 77);
  b.normal("vision_model.embeddings.class_embedding", {cv});
  b.normal("vision_model.embeddings.patch_embedding.weight", {cv, 3, 32, 32});
  b.normal("vision_model.embeddings.position_embedding.weight", {50, cv});
  b.counting("vision_model.embeddings.position_ids", 50);
  Json text = encoder_keys(ct), vision = encoder_keys(cv);
  text.update(
      {{"model_type", "clip_text_model"}, {"max_position_embeddings", 77}, {"vocab_size", 49408}});
  vision.update({{"model_type", "clip_vision_model"},
                 {"image_size", 224},
                 {"patch_size", 32},
                 {"num_channels", 3}});
  const Json cfg = {{"architectures", {"CLIPModel"}},
                    {"model_type", "clip"},
                    {"projection_dim", 512},
                    {"text_config", text},
                    {"vision_config", vision}};
  return {b.take(),
          cfg.dump(2),
          {},
          {"text_model.embeddings.position_embedding.weight",
           "vision_model.embeddings.position_embedding.weight"},
          "two position tables, the text tower's (77 positions) and the vision tower's (the class "
          "token, then a 7x7 grid): name one with --tensor"};
}

}  // namespace

ModelFiles model_files(std::string_view model, std::optional<std::size_t> dim, std::uint64_t seed) {
  if (dim && (*dim == 0 || *dim > 65536)) {
    throw std::invalid_argument(fmt::format("model_files: dim {} is not in [1, 65536]", *dim));
  }
  Builder b(seed);
  ModelFiles m;
  if (model == "gpt2") {
    m = gpt2(b, dim.value_or(768));
  } else if (model == "bert") {
    m = bert(b, dim.value_or(768));
  } else if (model == "roberta") {
    m = roberta(b, dim.value_or(768));
  } else if (model == "vit") {
    m = vit(b, dim.value_or(768));
  } else if (model == "clip") {
    m = clip(b, dim);
  } else {
    throw std::invalid_argument("model_files: unknown model '" + std::string(model) +
                                "' (gpt2, bert, roberta, vit, clip)");
  }
  m.config_text += "\n";
  m.metadata = {
      {"format", "pt"},
      {std::string(kProvenanceKey),
       fmt::format("posemb make-checkpoint {} (seed {}{}): random values in the names and "
                   "shapes of the {} embedding tensors, not a trained model",
                   model, seed, dim ? fmt::format(", dim {}", *dim) : "", model)}};
  return m;
}

std::vector<CheckpointShard> split_into_shards(const std::vector<Tensor>& tensors,
                                               std::size_t count) {
  if (count == 0 || count > tensors.size()) {
    throw std::invalid_argument(
        fmt::format("split_into_shards: {} weight files for {} tensors (1 to {})", count,
                    tensors.size(), tensors.size()));
  }
  std::vector<CheckpointShard> shards(count);
  for (std::size_t i = 0; i < count; ++i) {
    shards[i].file = count == 1 ? "model.safetensors"
                                : fmt::format("model-{:05}-of-{:05}.safetensors", i + 1, count);
  }
  // As transformers fills shards: in order, the next shard started once this one holds its
  // share of the bytes (or the tensors left are only enough for one a shard).
  std::uint64_t total = 0;
  for (const Tensor& t : tensors) total += t.bytes().size();
  const std::uint64_t share = (total + count - 1) / count;
  std::size_t s = 0;
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const bool full = bytes >= share || tensors.size() - i == count - s - 1;
    if (!shards[s].tensors.empty() && full && s + 1 < count) {
      ++s;
      bytes = 0;
    }
    shards[s].tensors.push_back(tensors[i]);
    bytes += tensors[i].bytes().size();
  }
  return shards;
}

}  // namespace posemb::cli
