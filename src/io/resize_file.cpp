// A file's table resized and written: what `posemb resize` does, in one place
// (posemb/resize.hpp: plan_file_resize, write_file_resize, resize_file).
#include <string>

#include "file_system.hpp"
#include "posemb/memory.hpp"
#include "posemb/resize.hpp"
#include "posemb/safetensors.hpp"
#include "posemb/table_analysis.hpp"

namespace posemb {
namespace {

bool ends_with_npy(const std::string& p) {
  return p.size() >= 4 && p.compare(p.size() - 4, 4, ".npy") == 0;
}

}  // namespace

ReservedRowsOutOfRange::ReservedRowsOutOfRange(std::size_t requested, std::size_t rows)
    : std::invalid_argument("resize: reserved_rows " + std::to_string(requested) +
                            " exceeds the table's " + std::to_string(rows) + " rows"),
      requested_(requested),
      rows_(rows) {}

FileResize plan_file_resize(const TensorFile& file, const std::string& path,
                            const FileResizeRequest& request) {
  PositionTable t = load_position_table(file, path, request.tensor);
  if (request.reserved_rows) {
    if (*request.reserved_rows > t.values.rows()) {
      throw ReservedRowsOutOfRange(*request.reserved_rows, t.values.rows());
    }
    t.reserved_rows = *request.reserved_rows;
  }
  FileResize r;
  r.output = request.output;
  r.old_positions = t.positions();
  r.old_rows = t.values.rows();
  r.unstated_reserved_rows = unstated_reserved_rows(t, request.reserved_rows.has_value());
  r.whole_file =
      !request.table_only && !ends_with_npy(request.output) && file.format != TensorFileFormat::npy;
  // The whole operation's peak, before any allocation: the table read, the resized table, and
  // for a whole file its tensor and the writer's copy of it (a 2 GiB result peaked at 6.5 GB;
  // each step's own check let a 16 GiB one through a 17.7 GiB budget to the OOM killer).
  const std::size_t row_bytes = saturating_mul(t.values.cols(), sizeof(float));
  const std::size_t new_bytes =
      saturating_mul(saturating_add(t.reserved_rows, request.positions), row_bytes);
  check_allocation("resize (the table read, the resized table" +
                       std::string(r.whole_file ? ", its tensor and the written copy)" : ")"),
                   saturating_add(saturating_mul(t.values.rows(), row_bytes),
                                  saturating_mul(new_bytes, r.whole_file ? 3 : 2)));
  r.table = resize_table(t, request.positions, request.method, request.options);
  r.dtype = request.dtype;
  if (r.whole_file) r.file = replace_position_table(file, r.table, request.dtype);
  return r;
}

void write_file_resize(const FileResize& resize) {
  if (resize.whole_file) {
    write_safetensors(resize.output, resize.file.tensors, resize.file.metadata);
  } else {
    save_position_table(resize.output, resize.table, resize.dtype);
  }
}

FileResize resize_file(const TensorFile& file, const std::string& path,
                       const FileResizeRequest& request) {
  detail::check_path(request.output, "resize_file");
  FileResize r = plan_file_resize(file, path, request);
  write_file_resize(r);
  return r;
}

}  // namespace posemb
