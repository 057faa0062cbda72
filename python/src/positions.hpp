// Positions and token ids from numpy, shared by positions.cpp, embedding.cpp and layer.cpp.
//
// Dtypes the library takes as they are (no copy): int64 position ids, uint8 and bool masks,
// int32 token ids. Dtypes converted here (a copy of the (B, T) integers, with the library's
// semantics and wording): int32 position ids (widened), int32 / int64 masks (values checked to be
// 0 or 1), int64 token ids (narrowed, checked against the vocabulary). When the library takes
// more dtypes itself, the conversions below shrink to views.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "posemb/matrix.hpp"
#include "posemb/matrix_view.hpp"
#include "posemb/positions.hpp"

namespace posemb::python {

namespace py = pybind11;

// posemb.PositionSource: a PositionSource and the arrays it references (kept alive here).
class Positions {
 public:
  static std::unique_ptr<Positions> contiguous(std::size_t start);
  static std::unique_ptr<Positions> explicit_ids(const py::array& ids);
  static std::unique_ptr<Positions> padding_mask(const py::array& mask);
  static std::unique_ptr<Positions> packed(TokenId separator);

  Positions(const Positions&) = delete;  // source_ may point into ids_ / mask_
  Positions& operator=(const Positions&) = delete;

  const PositionSource& source() const noexcept { return source_; }
  // The caller's array, or the converted copy, as numpy (None for contiguous and packed).
  py::object array() const;

 private:
  Positions() = default;
  PositionSource source_ = PositionSource::contiguous();
  py::object keep_;            // the caller's array when it is referenced as it is
  Matrix<std::int64_t> ids_;   // converted position ids
  Matrix<std::uint8_t> mask_;  // converted mask
};

// positions, or PositionSource::contiguous(0) for None.
const PositionSource& source_or_default(const Positions* positions);

// Token ids (B, T) as the library's int32 view; int64 ids are narrowed into `owned`, an id that
// does not fit raising like the library's check (IndexError naming op, batch row, token and the
// vocabulary size when given).
struct Tokens {
  MatrixView<const TokenId> view;
  Matrix<TokenId> owned;
};
Tokens tokens_in(const py::array& a, const char* op, std::optional<std::size_t> vocab);

}  // namespace posemb::python
