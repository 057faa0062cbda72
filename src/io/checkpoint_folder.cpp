#include "posemb/checkpoint_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <system_error>

#include "config_json.hpp"
#include "file_system.hpp"
#include "hf_config.hpp"
#include "mapped_file.hpp"
#include "posemb/atomic_file.hpp"
#include "posemb/errors.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb {
namespace {

namespace fs = std::filesystem;
using Json = detail::ConfigJson;

constexpr std::string_view kConfig = "config.json";
constexpr std::string_view kSingle = "model.safetensors";
constexpr std::string_view kIndex = "model.safetensors.index.json";
constexpr std::string_view kOp = "write_checkpoint_folder";

std::string read_text(const std::string& path) {
  const auto m = detail::MappedFile::open(path, "read_checkpoint_folder");
  const auto b = m->bytes();
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

constexpr std::string_view kLinks =
    "posemb reads and copies only real files in a checkpoint folder (copy the folder with "
    "`cp -rL` first)";

// Every regular file under dir (relative paths, sorted); a symbolic link or special file is
// refused (detail::list_folder, which records them as read).
std::vector<std::string> folder_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : detail::list_folder(dir, "read_checkpoint_folder", kLinks)) {
    if (!e.folder) files.push_back(e.relative);
  }
  return files;
}

bool has(const std::vector<std::string>& files, std::string_view name) {
  return std::binary_search(files.begin(), files.end(), std::string(name));
}

// The shards of an index, in order of first appearance, each checked to be a plain file name.
std::vector<std::string> index_shards(const std::string& text, const std::string& source,
                                      std::map<std::string, std::string>& weight_map) {
  // Strictly, as config.json is read: a tensor or key given twice is refused (which shard was
  // meant cannot be known).
  const Json j = detail::parse_config_json(text, source);
  const auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object() || wm->empty()) {
    throw FileFormatError(source, "has no weight_map object naming the shards");
  }
  std::vector<std::string> shards;
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string()) {
      throw FileFormatError(source,
                            "weight_map entry " + quote_untrusted(tensor) + " is not a file name");
    }
    const std::string s = shard.get<std::string>();
    if (s.empty() || s.find('/') != std::string::npos || s.find('\\') != std::string::npos ||
        s.find("..") != std::string::npos || s == "." || s.find('\0') != std::string::npos) {
      throw FileFormatError(source, "weight_map names shard " + quote_untrusted(s) +
                                        ": a shard must be a plain file name in the folder "
                                        "(no '/', no '..')");
    }
    if (std::find(shards.begin(), shards.end(), s) == shards.end()) shards.push_back(s);
    weight_map[tensor] = s;
  }
  if (const auto md = j.find("metadata"); md != j.end() && md->is_object()) {
    if (const auto ts = md->find("total_size"); ts != md->end() && !ts->is_number_unsigned()) {
      throw FileFormatError(source, "metadata.total_size is not a whole number");
    }
  }
  return shards;
}

}  // namespace

std::string CheckpointFolder::table_path() const {
  return (fs::path(dir) / table_shard).string();
}

CheckpointFolder read_checkpoint_folder(const std::string& dir,
                                        const std::optional<std::string>& tensor_name) {
  CheckpointFolder f;
  f.dir = dir;
  const std::vector<std::string> files = folder_files(dir);
  const auto path = [&](std::string_view name) { return (fs::path(dir) / name).string(); };
  if (!has(files, kConfig)) {
    throw FileFormatError(dir,
                          "is a directory, not a regular file, and not a checkpoint folder: "
                          "it has no config.json (a Hugging Face checkpoint folder holds "
                          "config.json beside model.safetensors)");
  }
  f.config_text = read_text(path(kConfig));
  detail::check_config_json(f.config_text, path(kConfig));
  std::map<std::string, std::string> weight_map;  // tensor -> shard, from the index
  if (has(files, kSingle)) {
    f.shards = {std::string(kSingle)};
  } else if (has(files, kIndex)) {
    f.index_file = kIndex;
    f.index_text = read_text(path(kIndex));
    f.shards = index_shards(f.index_text, path(kIndex), weight_map);
  } else {
    throw FileFormatError(dir, "has neither model.safetensors nor model.safetensors.index.json" +
                                   std::string(has(files, "pytorch_model.bin")
                                                   ? " (pytorch_model.bin is not read: save the "
                                                     "model with safe_serialization=True)"
                                                   : ""));
  }
  for (const auto& s : f.shards) {
    if (!has(files, s)) {
      throw FileFormatError(path(kIndex), "names shard " + quote_untrusted(s) +
                                              ", which is not a file in the folder");
    }
  }
  // Every shard's header, and which shard holds each tensor.
  std::map<std::string, TensorFile> read;
  std::map<std::string, std::string> holder;
  TensorFile all;
  for (const auto& s : f.shards) {
    TensorFile t = read_safetensors(path(s));
    for (const auto& tensor : t.tensors) {
      const auto [it, fresh] = holder.emplace(tensor.name(), s);
      if (!fresh) {
        throw FileFormatError(dir, "tensor " + quote_untrusted(tensor.name()) +
                                       " is in two shards, " + quote_untrusted(it->second) +
                                       " and " + quote_untrusted(s));
      }
      all.tensors.push_back(tensor);
    }
    if (all.metadata.empty()) all.metadata = t.metadata;
    read.emplace(s, std::move(t));
  }
  for (const auto& [tensor, shard] : weight_map) {
    const auto it = holder.find(tensor);
    if (it == holder.end() || it->second != shard) {
      throw FileFormatError(path(kIndex), "says tensor " + quote_untrusted(tensor) + " is in " +
                                              quote_untrusted(shard) + ", which does not hold it");
    }
  }
  const std::string where = f.index_file.empty() ? path(kSingle) : path(kIndex);
  f.table_tensor = find_position_tensor(all, where, tensor_name, &f.how_found);
  f.table_shard = holder.at(f.table_tensor);
  f.table_file = std::move(read.at(f.table_shard));
  for (const auto& file : files) {
    if (file != kConfig && file != f.index_file &&
        std::find(f.shards.begin(), f.shards.end(), file) == f.shards.end()) {
      f.other_files.push_back(file);
    }
  }
  return f;
}

namespace {

std::uint64_t tensor_bytes(const std::vector<Tensor>& tensors) {
  std::uint64_t n = 0;
  for (const auto& t : tensors) n += t.bytes().size();
  return n;
}

// The index with metadata.total_size moved by delta bytes, written over the old value's text
// (edit_config_text): every other byte is kept. A total_size the new one cannot follow from (past
// 2^63 - 1, or below the bytes the table loses) is refused: it wrapped around to a small number
// before. text is an index that index_shards accepted.
std::string updated_index(const std::string& text, const std::string& source, std::int64_t delta,
                          FolderWriteReport& r) {
  const Json j = detail::parse_config_json(text, source);
  const auto md = j.find("metadata");
  if (md == j.end() || !md->is_object()) return text;
  const auto ts = md->find("total_size");
  if (ts == md->end()) return text;
  const auto old = ts->get<std::uint64_t>();
  constexpr auto kMax = static_cast<std::uint64_t>(INT64_MAX);
  const std::uint64_t lost = delta < 0 ? static_cast<std::uint64_t>(-(delta + 1)) + 1 : 0;
  if (old > kMax || old < lost || (delta > 0 && old > kMax - static_cast<std::uint64_t>(delta))) {
    throw FileFormatError(source,
                          "metadata.total_size = " + std::to_string(old) +
                              " cannot be the shards' size (the resized table moves it by " +
                              std::to_string(delta) + " bytes)");
  }
  r.old_total_size = old;
  r.new_total_size = static_cast<std::uint64_t>(static_cast<std::int64_t>(old) + delta);
  return detail::edit_config_text(
      text, {{{"metadata", "total_size"}, std::to_string(*r.new_total_size)}});
}

// out_dir checked against the input folder, by identity (any spelling, symbolic links, bind
// mounts): refused when it is the input or inside it, or holds the input.
void check_out_dir(const std::string& in, const std::string& out) {
  const std::string op = std::string(kOp) + ": output folder " + quote_untrusted(out);
  if (detail::same_or_inside(out, in, kOp)) {
    throw std::invalid_argument(op + " is the input folder or inside it");
  }
  if (detail::same_or_inside(in, out, kOp)) {
    throw std::invalid_argument(op + " holds the input folder");
  }
}

void fill_folder(const CheckpointFolder& in, const ResizedFile& resized, FolderSink& out,
                 const std::string& config, const std::string& index, FolderWriteReport& r) {
  // The input's entries as they are now: the files to copy and every permission bit to keep.
  const std::vector<detail::FolderEntry> entries = detail::list_folder(in.dir, kOp, kLinks);
  std::vector<std::string> copies = in.other_files;
  for (const auto& s : in.shards) {
    if (s != in.table_shard) copies.push_back(s);
  }
  std::sort(copies.begin(), copies.end());
  for (const auto& rel : copies) {
    const auto m = detail::MappedFile::open((fs::path(in.dir) / rel).string(), kOp);
    const auto b = m->bytes();
    write_file_atomically(out.path(rel), kOp,
                          std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
    r.copied.push_back(rel);
  }
  write_safetensors(out.path(in.table_shard), resized.tensors, resized.metadata);
  write_file_atomically(out.path(std::string(kConfig)), kOp, config);
  if (!in.index_file.empty()) write_file_atomically(out.path(in.index_file), kOp, index);
  // Every file and folder written gets its input's permission bits (a private token.txt stays
  // 0600, the folder 0700), never wider: new files would get 0666 & ~umask. Deepest first, so
  // that a folder's own bits come after what is written in it.
  std::set<std::string> written(copies.begin(), copies.end());
  for (const std::string& f : {in.table_shard, std::string(kConfig), in.index_file}) {
    if (!f.empty()) written.insert(f);
  }
  for (const std::string& f : std::set<std::string>(written)) {
    for (fs::path p = fs::path(f).parent_path(); !p.empty(); p = p.parent_path()) {
      written.insert(p.generic_string());
    }
  }
  for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
    if (e->relative.empty() || written.count(e->relative) != 0) out.set_mode(e->relative, e->mode);
  }
}

}  // namespace

FolderWriteReport write_checkpoint_folder(const CheckpointFolder& in, const ResizedFile& resized,
                                          std::size_t new_rows, std::optional<GridShape> new_grid,
                                          const std::string& out_dir, bool force) {
  detail::check_path(out_dir, kOp);
  detail::check_path(in.dir, kOp);
  FolderWriteReport r;
  r.table_shard = in.table_shard;
  check_out_dir(in.dir, out_dir);
  // Everything is computed before anything is written.
  const std::string config =
      detail::updated_config(in.config_text, (fs::path(in.dir) / kConfig).string(), in.table_file,
                             in.table_tensor, new_rows, new_grid, r.config_changes);
  const auto delta = static_cast<std::int64_t>(tensor_bytes(resized.tensors)) -
                     static_cast<std::int64_t>(tensor_bytes(in.table_file.tensors));
  const std::string index =
      in.index_file.empty()
          ? ""
          : updated_index(in.index_text, (fs::path(in.dir) / in.index_file).string(), delta, r);
  write_folder_atomically(out_dir, kOp, force, [&](FolderSink& out) {
    fill_folder(in, resized, out, config, index, r);
  });
  return r;
}

std::vector<std::string> write_new_checkpoint_folder(const std::string& config_text,
                                                     const std::vector<CheckpointShard>& shards,
                                                     const Metadata& metadata,
                                                     const std::string& out_dir, bool force) {
  constexpr std::string_view op = "write_new_checkpoint_folder";
  detail::check_path(out_dir, op);
  // Everything is checked and computed before anything is written.
  (void)detail::parse_config_json(config_text, std::string(op) + ": config.json");
  if (shards.empty()) throw std::invalid_argument(std::string(op) + ": no weight file");
  std::set<std::string> files, names;
  Json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", Json::object()}};
  std::uint64_t total = 0;
  for (const CheckpointShard& s : shards) {
    const bool plain = !s.file.empty() && s.file.find('/') == std::string::npos &&
                       s.file.find('\0') == std::string::npos && s.file[0] != '.' &&
                       s.file.ends_with(".safetensors");
    if (!plain || s.file == kConfig || !files.insert(s.file).second) {
      throw std::invalid_argument(std::string(op) + ": weight file name " +
                                  quote_untrusted(s.file) +
                                  " is not a distinct plain file name ending in .safetensors");
    }
    for (const Tensor& t : s.tensors) {
      if (!names.insert(t.name()).second) {
        throw std::invalid_argument(std::string(op) + ": tensor " + quote_untrusted(t.name()) +
                                    " is in two weight files");
      }
      index["weight_map"][t.name()] = s.file;
    }
    total += tensor_bytes(s.tensors);
  }
  index["metadata"]["total_size"] = total;
  std::vector<std::string> written;
  write_folder_atomically(out_dir, op, force, [&](FolderSink& out) {
    for (const CheckpointShard& s : shards) {
      write_safetensors(out.path(s.file), s.tensors, metadata);
      written.push_back(s.file);
    }
    write_file_atomically(out.path(std::string(kConfig)), op, config_text);
    written.emplace_back(kConfig);
    if (shards.size() > 1) {
      write_file_atomically(out.path(std::string(kIndex)), op, index.dump(2) + "\n");
      written.emplace_back(kIndex);
    }
  });
  return written;
}

}  // namespace posemb
