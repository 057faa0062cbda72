// posemb/table_provenance.hpp: how a position table was made, as data a program reads.
//
//   posemb::PositionTable t = posemb::load_position_table("long.safetensors");
//   for (const posemb::TableResize& r : t.resizes) {      // oldest first
//     r.method;                                          // "copy"
//     r.from_positions; r.to_positions;                  // 512, 2048
//     r.reserved_rows;                                   // 2 (kept in place, in addition)
//     r.source_file; r.source_tensor;                    // where the resized table came from
//   }
//   t.provenance;                // the same for people: "resize: copy 512 -> 2048 positions, ..."
//   posemb::recorded_resizes(file.metadata, "long.safetensors");   // from any file's metadata
//
// Every resize (posemb::resize_table) appends one TableResize to the table's `resizes` and its
// description (describe_resize) to the table's `provenance` text. Files keep both (metadata
// values are strings):
//   posemb.resizes     the resizes as a JSON array, oldest first, one object each:
//                      {"operation": "resize", "method": "random", "from_positions": 512,
//                       "to_positions": 1024, "reserved_rows": 2, "source_file": "in.safetensors",
//                       "source_tensor": "wpe.weight", "initializer": "normal", "stddev": 0.02,
//                       "seed": 1}
//                      ("initializer", "stddev", "seed": random only; "scale": sinusoidal only)
//   posemb.provenance  free text for people (the lab puts its lineage there too); never parsed,
//                      except for files written before posemb.resizes existed, whose
//                      "resize: ..." parts are read back into TableResize records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "posemb/tensor_file.hpp"

namespace posemb {

// One resize of a position table.
struct TableResize {
  std::string operation = "resize";  // what was done ("resize": a 1-D resize by posemb)
  std::string method = {};           // "copy", "interpolate", "random", "truncate", "sinusoidal"
  std::size_t from_positions = 0;    // positions before (rows = reserved_rows + positions)
  std::size_t to_positions = 0;      // positions after
  std::size_t reserved_rows = 0;     // leading rows kept in place, before and after
  std::string source_file = {};      // the file the resized table came from ("" if made in memory)
  std::string source_tensor = {};    // its tensor name there ("" if unknown)
  // method random: how the new rows were drawn (an Initializer::parse name, stddev, seed).
  std::string initializer = {};
  std::optional<double> stddev = std::nullopt;
  std::optional<std::uint64_t> seed = std::nullopt;
  // method sinusoidal: the factor the encoding of the new rows was scaled by (the old
  // positions' mean row norm over the encoding's).
  std::optional<double> scale = std::nullopt;

  bool operator==(const TableResize&) const = default;
};

// The metadata keys.
inline constexpr std::string_view kResizesKey = "posemb.resizes";
inline constexpr std::string_view kProvenanceKey = "posemb.provenance";

// For people: "resize: copy 512 -> 2048 positions, 2 reserved rows kept, from 'in.safetensors'
// tensor 'wpe.weight'" (the form posemb.provenance has always had).
std::string describe_resize(const TableResize& resize);

// The posemb.resizes value: a JSON array of the resizes, oldest first.
std::string resizes_json(const std::vector<TableResize>& resizes);

// The resizes a file's metadata records: posemb.resizes when present; otherwise, for a file
// written before posemb.resizes existed, the "resize: METHOD A -> B positions, ..." parts of
// posemb.provenance (stddev and scale as that text gave them, to 6 significant digits); empty
// when neither says. Throws FileFormatError naming path when posemb.resizes is not such an
// array (not JSON, a field of the wrong type, counts that are not whole numbers).
std::vector<TableResize> recorded_resizes(const Metadata& metadata, const std::string& path);

}  // namespace posemb
