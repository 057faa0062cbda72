// `posemb make-checkpoint MODEL -o OUT [--folder [--shards N]]`: a checkpoint shaped like a real
// model's (its embedding tensors under their Hugging Face names, config.json for a folder), with
// random values, for trying posemb without downloading a model. model_files.cpp knows the
// models; the library writes the files (write_safetensors, write_npy,
// write_new_checkpoint_folder); this file maps the flags and prints.
#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>

#include "cli.hpp"
#include "model_files.hpp"
#include "posemb/checkpoint_folder.hpp"
#include "posemb/npy.hpp"
#include "posemb/safetensors.hpp"

namespace posemb::cli {
namespace {

struct MakeCheckpointOptions {
  std::string model;
  std::string out;
  bool folder = false;
  std::size_t shards = 1;
  std::optional<std::size_t> dim;
  std::uint64_t seed = 0;
  std::string dtype = "f32";
  bool force = false;
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::uint64_t bytes_of(const std::vector<Tensor>& tensors) {
  std::uint64_t n = 0;
  for (const Tensor& t : tensors) n += t.bytes().size();
  return n;
}

void run_make_checkpoint(const MakeCheckpointOptions& o) {
  if (!o.folder && o.shards != 1) {
    throw UsageError("make-checkpoint: --shards is for a folder (--folder)");
  }
  if (!o.folder && o.force) throw UsageError("make-checkpoint: --force is for a folder (--folder)");
  const bool npy = !o.folder && ends_with(o.out, ".npy");
  if (npy && o.model == "clip") {
    throw UsageError(
        "make-checkpoint: clip has two position tables (text and vision) and a .npy file holds "
        "one; write a .safetensors file and take one table out with "
        "`posemb convert FILE.safetensors --tensor NAME TABLE.npy`");
  }
  const DType dtype = parse_float_dtype(o.dtype);
  ModelFiles m = model_files(o.model, o.dim, o.seed);
  for (Tensor& t : m.tensors) {
    if (dtype_is_float(t.dtype()) && t.dtype() != dtype) t = t.astype(dtype);
  }
  if (o.shards > m.tensors.size()) {
    throw UsageError(fmt::format("make-checkpoint: --shards {}: {} has {} tensors", o.shards,
                                 o.model, m.tensors.size()));
  }
  auto tensor = [&](const std::string& name) {
    return std::find_if(m.tensors.begin(), m.tensors.end(),
                        [&](const Tensor& t) { return t.name() == name; });
  };
  const auto table = tensor(m.tables.front());
  std::string tables;
  for (const auto& name : m.tables) {
    tables += fmt::format("{}'{}' {}", tables.empty() ? "" : ", ", name,
                          shape_string(tensor(name)->shape()));
  }
  const std::string what =
      fmt::format("{} (seed {}, random values: not a trained model)", o.model, o.seed);
  if (npy) {
    write_npy(o.out, *table);
    fmt::print("wrote {}: the position table of {}, {}\n", quote_untrusted(o.out), what,
               shape_string(table->shape()));
  } else if (o.folder) {
    const auto files = write_new_checkpoint_folder(
        m.config_text, split_into_shards(m.tensors, o.shards), m.metadata, o.out, o.force);
    std::string list;
    for (const auto& f : files) list += (list.empty() ? "" : ", ") + f;
    fmt::print("wrote folder {}: {}\n  {} tensors of {}, {} bytes; position table(s) {}\n",
               quote_untrusted(o.out), list, m.tensors.size(), what, bytes_of(m.tensors), tables);
  } else {
    write_safetensors(o.out, m.tensors, m.metadata);
    fmt::print("wrote {}: {} tensors of {}, {} bytes; position table(s) {}\n",
               quote_untrusted(o.out), m.tensors.size(), what, bytes_of(m.tensors), tables);
  }
  if (!m.note.empty()) fmt::print("note: {}\n", m.note);
}

}  // namespace

void register_make_checkpoint_command(CLI::App& app) {
  auto o = std::make_shared<MakeCheckpointOptions>();
  CLI::App* cmd = app.add_subcommand(
      "make-checkpoint",
      "Write a checkpoint shaped like a real model's, with random values (no network needed): "
      "the embedding tensors of GPT-2, BERT, RoBERTa, ViT-Base/16 or CLIP ViT-B/32 under their "
      "Hugging Face names and shapes, and for a folder its config.json");
  std::vector<std::string> models(std::begin(kModelFileNames), std::end(kModelFileNames));
  cmd->add_option("model", o->model, "gpt2, bert, roberta, vit or clip")
      ->required()
      ->check(CLI::IsMember(models));
  cmd->add_option("-o,--output", o->out,
                  "A .safetensors file, a .npy file (the position table alone), or with --folder "
                  "a Hugging Face checkpoint folder")
      ->required()
      ->check(non_empty());
  cmd->add_flag("--folder", o->folder,
                "Write a checkpoint folder: config.json beside model.safetensors (or shards)");
  cmd->add_option("--shards", o->shards,
                  "Split a folder's tensors into N weight files with an index, as transformers "
                  "shards a large model")
      ->check(CLI::Range(1, 8));
  cmd->add_option("--dim", o->dim,
                  "Columns of every table (default: the model's, 768; CLIP 512 text, 768 vision)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--seed", o->seed, "Seed of the random values")->check(whole_number());
  cmd->add_option("--dtype", o->dtype, "dtype of the float tensors: f32, f16, bf16 (default f32)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  cmd->add_flag("--force", o->force, "Replace an existing non-empty output folder");
  cmd->callback(read_files_protected([o] { run_make_checkpoint(*o); }));
}

}  // namespace posemb::cli
