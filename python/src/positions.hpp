// Positions and token ids from numpy, shared by positions.cpp, embedding.cpp and layer.cpp.
//
// Every position array is referenced as it is (no copy): int32 and int64 position ids, bool,
// uint8, int32 and int64 masks, int32 token ids. Only int64 token ids are converted (narrowed to
// the library's int32 ids, checked against the vocabulary).
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
  static std::unique_ptr<Positions> packed(const py::array& tokens, TokenId separator);

  Positions(const Positions&) = delete;  // source_ may point into ids_ / mask_
  Positions& operator=(const Positions&) = delete;

  const PositionSource& source() const noexcept { return source_; }
  // The array the source reads (the caller's, or int64 tokens narrowed to int32), None for
  // contiguous.
  py::object array() const;

 private:
  Positions() = default;
  PositionSource source_ = PositionSource::contiguous();
  py::object keep_;         // the caller's array, referenced as it is
  Matrix<TokenId> tokens_;  // int64 token ids narrowed (packed)
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
