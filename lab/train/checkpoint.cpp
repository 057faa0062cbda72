#include "lab/train/checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "lab/encodings/registry.hpp"
#include "lab/train/run.hpp"
#include "posemb/errors.hpp"
#include "posemb/position_table_file.hpp"
#include "posemb/safetensors.hpp"

namespace posemb::lab {

void write_checkpoint(const std::string& path, Model& model, const AdamW& opt, const RunConfig& cfg,
                      std::size_t step, const std::string& lineage) {
  const auto slots = model.tensors();
  std::vector<Tensor> tensors;
  for (const auto& s : slots) tensors.push_back(Tensor::from_matrix(s.name, s.value));
  const auto& m1 = opt.first_moments();
  const auto& m2 = opt.second_moments();
  for (std::size_t i = 0; i < m1.size() && i < slots.size(); ++i) {
    tensors.push_back(Tensor::from_matrix("optimizer.adamw.m." + slots[i].name, m1[i].cview()));
    tensors.push_back(Tensor::from_matrix("optimizer.adamw.v." + slots[i].name, m2[i].cview()));
  }
  Metadata meta = {{"format", kCheckpointFormat},
                   {"posemb.lab.run", cfg.to_json()},
                   {"posemb.lab.step", std::to_string(step)},
                   {"posemb.lab.adamw_steps", std::to_string(opt.steps())}};
  if (!lineage.empty()) meta["posemb.lab.lineage"] = lineage;
  if (model.encoding_spec().has_table) {
    // The position table's metadata (posemb/position_table_file.hpp), so `posemb resize` and
    // `posemb inspect` find it without naming the tensor.
    meta["posemb.tensor"] = std::string(model.encoding_spec().table_tensor);
    meta["posemb.reserved_rows"] = "0";
    meta["posemb.training_length"] = std::to_string(run_train_tokens(cfg));
    meta["posemb.initializer"] = "normal(std=" + std::to_string(cfg.model.init_std) +
                                 ", seed derived from " + std::to_string(cfg.train.seed) + ")";
    meta["posemb.provenance"] = (lineage.empty() ? std::string() : lineage + "; ") +
                                "posemb train (" + cfg.model.pe + ", step " + std::to_string(step) +
                                ")";
  }
  write_safetensors(path, tensors, meta);
}

namespace {

[[noreturn]] void bad_entry(const std::string& path, std::string_view key,
                            const std::string& problem) {
  throw FileFormatError(path, "checkpoint metadata " + std::string(key) + " " + problem);
}

// A whole number in decimal digits only (no sign, space or exponent) within lim.
std::size_t whole_number(const Metadata& md, const std::string& path, std::string_view key,
                         const Limit<std::size_t>& lim) {
  const auto it = md.find(std::string(key));
  if (it == md.end()) bad_entry(path, key, "is missing");
  const std::string& s = it->second;
  std::size_t v = 0;
  const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!digits || ec != std::errc() || end != s.data() + s.size() || !lim.contains(v)) {
    bad_entry(path, key, "is " + quote_untrusted(s, 40) + ", not a whole number in " + lim.text());
  }
  return v;
}

std::string tensor_shape(const Tensor& t) {
  return shape_string(t.shape());
}

// A float tensor of exactly rows x cols, or FileFormatError naming it.
void check_shape(const std::string& path, const Tensor& t, std::size_t rows, std::size_t cols,
                 const char* what) {
  const auto& s = t.shape();
  if (!dtype_is_float(t.dtype())) {
    throw FileFormatError(path, std::string(what) + " " + quote_untrusted(t.name(), 200) + " is " +
                                    std::string(dtype_name(t.dtype())) +
                                    ", not a float dtype (F16, BF16, F32, F64)");
  }
  if (s.size() != 2 || s[0] != rows || s[1] != cols) {
    throw FileFormatError(path, std::string(what) + " " + quote_untrusted(t.name(), 200) +
                                    " has shape " + tensor_shape(t) +
                                    "; the run settings make it [" + std::to_string(rows) + ", " +
                                    std::to_string(cols) + "]");
  }
}

// Throws FileFormatError at the first NaN or infinity of m, naming the tensor, row and column.
void check_finite(MatrixView<const float> m, const std::string& name, const std::string& path,
                  bool non_negative = false) {
  for (std::size_t r = 0; r < m.rows(); ++r) {
    const auto row = m.row(r);
    for (std::size_t c = 0; c < row.size(); ++c) {
      const float v = row[c];
      if (std::isfinite(v) && (!non_negative || v >= 0.0f)) continue;
      const std::string value = std::isnan(v)       ? "NaN"
                                : !std::isfinite(v) ? "infinity"
                                                    : std::to_string(v);
      throw FileFormatError(path, "tensor " + quote_untrusted(name, 200) + " holds " + value +
                                      " at row " + std::to_string(r) + ", column " +
                                      std::to_string(c) +
                                      (non_negative ? " (second moments are finite and >= 0)"
                                                    : " (values must be finite)"));
    }
  }
}

}  // namespace

Checkpoint decode_checkpoint_metadata(const Metadata& md, const std::string& path) {
  const auto fmt = md.find("format");
  if (fmt == md.end()) {
    throw FileFormatError(path, std::string("not a posemb lab checkpoint (no 'format' "
                                            "metadata; expected '") +
                                    kCheckpointFormat + "')");
  }
  if (fmt->second != kCheckpointFormat) {
    throw FileFormatError(path, "not a posemb lab checkpoint: its format is " +
                                    quote_untrusted(fmt->second, 64) + ", expected '" +
                                    kCheckpointFormat + "'");
  }
  Checkpoint ck;
  ck.path = path;
  const auto run = md.find("posemb.lab.run");
  if (run == md.end()) bad_entry(path, "posemb.lab.run", "is missing");
  try {
    ck.run = run_from_json(run->second);
  } catch (const ConfigError& e) {
    bad_entry(path, "posemb.lab.run", std::string("is not usable: ") + e.what());
  }
  const Limit<std::size_t> steps{0, limits::steps.max};
  ck.step = whole_number(md, path, "posemb.lab.step", steps);
  ck.adamw_steps =
      static_cast<std::int64_t>(whole_number(md, path, "posemb.lab.adamw_steps", steps));
  if (const auto it = md.find("posemb.lab.lineage"); it != md.end()) {
    constexpr std::size_t kMaxLineage = std::size_t{64} << 10;
    if (it->second.size() > kMaxLineage) {
      bad_entry(path, "posemb.lab.lineage",
                "has " + std::to_string(it->second.size()) + " bytes, more than 64 KiB");
    }
    ck.lineage = it->second;
  }
  return ck;
}

void check_checkpoint_tensors(Checkpoint& ck) {
  const std::string& path = ck.path;
  const EncodingSpec& spec = find_encoding(ck.run.model.pe);
  for (const TensorInfo& want : Model::tensor_shapes(ck.run.model)) {
    const Tensor* t = ck.file.find(want.name);
    if (t == nullptr) {
      throw FileFormatError(path, "checkpoint has no tensor " + quote_untrusted(want.name) +
                                      ", which its run settings need");
    }
    if (!spec.has_table || want.name != spec.table_tensor) {
      check_shape(path, *t, want.rows, want.cols, "tensor");
      continue;
    }
    // The learned table: d_model columns, and its rows are the model's max_seq_len.
    const auto& s = t->shape();
    const std::size_t rows = s.size() == 2 ? static_cast<std::size_t>(s[0]) : 0;
    check_shape(path, *t, rows, want.cols, "position table");
    RunConfig run = ck.run;
    run.model.max_seq_len = rows;
    try {
      validate_run(run);
    } catch (const ConfigError& e) {
      throw FileFormatError(path, "position table " + quote_untrusted(want.name) + " has " +
                                      std::to_string(rows) + " rows, which the run settings " +
                                      "cannot use: " + e.what());
    }
    ck.run = run;
  }
}

Checkpoint read_checkpoint(const std::string& path) {
  TensorFile file;
  try {
    file = read_safetensors(path);
  } catch (const FileFormatError& e) {
    // "'PATH': problem" -> "'PATH': not a posemb lab checkpoint: problem".
    std::string problem = e.what();
    const std::string prefix = quote_untrusted(path, 4096) + ": ";
    if (problem.compare(0, prefix.size(), prefix) == 0) problem.erase(0, prefix.size());
    throw FileFormatError(path, "not a posemb lab checkpoint: " + problem);
  }
  Checkpoint ck = decode_checkpoint_metadata(file.metadata, path);
  ck.file = std::move(file);
  check_checkpoint_tensors(ck);
  return ck;
}

Matrix<float> Checkpoint::tensor(const std::string& name) const {
  const Tensor* t = file.find(name);
  if (t == nullptr) {
    throw FileFormatError(path, "checkpoint has no tensor " + quote_untrusted(name));
  }
  return t->to_matrix<float>();
}

void copy_into(MatrixView<float> dst, MatrixView<const float> src, const std::string& name,
               const std::string& path) {
  if (src.rows() != dst.rows() || src.cols() != dst.cols()) {
    throw FileFormatError(
        path, "tensor " + quote_untrusted(name) + " is " + std::to_string(src.rows()) + " x " +
                  std::to_string(src.cols()) + ", the model needs " + std::to_string(dst.rows()) +
                  " x " + std::to_string(dst.cols()));
  }
  check_finite(src, name, path);
  for (std::size_t r = 0; r < src.rows(); ++r) {
    std::copy_n(src.row(r).data(), src.cols(), dst.row(r).data());
  }
}

void load_tensors(Model& model, const Checkpoint& ck, bool skip_table) {
  for (const auto& s : model.tensors()) {
    if (skip_table && s.name == model.encoding_spec().table_tensor) continue;
    copy_into(s.value, ck.tensor(s.name), s.name, ck.path);
  }
}

void load_optimizer_state(AdamW& opt, Model& model, const Checkpoint& ck) {
  if (ck.adamw_steps <= 0) return;
  const auto slots = model.tensors();
  // Shapes first (no allocation), then the values.
  for (const auto& s : slots) {
    for (const char* which : {"optimizer.adamw.m.", "optimizer.adamw.v."}) {
      const std::string name = which + s.name;
      const Tensor* t = ck.file.find(name);
      if (t == nullptr) {
        throw FileFormatError(ck.path, "checkpoint has no tensor " + quote_untrusted(name) +
                                           " (AdamW state for " + std::to_string(ck.adamw_steps) +
                                           " steps)");
      }
      const auto& shape = t->shape();
      if (shape.size() == 2 && shape[1] == s.value.cols() && shape[0] != s.value.rows()) {
        throw FileFormatError(ck.path, "the optimizer state of " + s.name + " (" +
                                           quote_untrusted(name) + ") has " +
                                           std::to_string(shape[0]) + " rows, the parameter " +
                                           std::to_string(s.value.rows()) +
                                           ": the table was resized after training, so this "
                                           "checkpoint cannot be resumed; start a new run from it");
      }
      check_shape(ck.path, *t, s.value.rows(), s.value.cols(), "optimizer tensor");
    }
  }
  std::vector<Matrix<float>> m1, m2;
  for (const auto& s : slots) {
    m1.push_back(ck.tensor("optimizer.adamw.m." + s.name));
    m2.push_back(ck.tensor("optimizer.adamw.v." + s.name));
    check_finite(m1.back(), "optimizer.adamw.m." + s.name, ck.path);
    check_finite(m2.back(), "optimizer.adamw.v." + s.name, ck.path, true);
  }
  opt.first_moments() = std::move(m1);
  opt.second_moments() = std::move(m2);
  opt.set_steps(ck.adamw_steps);
}

Model load_model(const std::string& path, RunConfig* settings, const std::string& table_path,
                 const std::optional<RopeScalingConfig>& rope_scaling) {
  const Checkpoint ck = read_checkpoint(path);
  RunConfig run = ck.run;
  if (rope_scaling) {
    run.model.rope_scaling = rope_scaling_for(ck.run, rope_scaling->method, rope_scaling->factor);
    validate_model(run.model);
  }
  const auto& spec = find_encoding(run.model.pe);
  std::optional<PositionTable> table;
  if (!table_path.empty()) {
    if (!spec.has_table) {
      throw std::invalid_argument("load_model: " + quote_untrusted(path) + " uses " + run.model.pe +
                                  ", which has no learned table to replace");
    }
    table = load_position_table(table_path);
    if (table->usable().cols() != run.model.d_model) {
      throw FileFormatError(table_path, "the table has " + std::to_string(table->usable().cols()) +
                                            " columns, the model's d_model is " +
                                            std::to_string(run.model.d_model));
    }
    run.model.max_seq_len = table->positions();
    try {
      validate_run(run);
    } catch (const ConfigError& e) {
      throw FileFormatError(table_path, "a table of " + std::to_string(table->positions()) +
                                            " positions cannot replace the model's: " + e.what());
    }
  }
  Model model(run.model);
  load_tensors(model, ck, table.has_value());
  if (table) {
    const auto slot = model.encoding().tensors().front();
    copy_into(slot.value, table->usable(), "position table", table_path);
  }
  if (settings != nullptr) *settings = run;
  return model;
}

}  // namespace posemb::lab
