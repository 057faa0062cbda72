// posemb.PositionSource and resolve_positions.
#include "positions.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <variant>

#include "arrays.hpp"
#include "bindings.hpp"

namespace posemb::python {
namespace {

std::string where(std::size_t b, std::size_t t) {
  return "batch row " + std::to_string(b) + ", token " + std::to_string(t);
}

// Copies an integer (B, T) array into a Matrix<To>, calling check(value, b, t) on each element.
template <class From, class To, class Check>
Matrix<To> convert(const py::array& a, const char* op, const char* name, Check check) {
  const MatrixView<const From> in = matrix_in<From>(a, op, name);
  Matrix<To> out(in.rows(), in.cols());
  for (std::size_t b = 0; b < in.rows(); ++b) {
    for (std::size_t t = 0; t < in.cols(); ++t) {
      const From v = in(b, t);  // read once: the check and the copy see the same value
      check(v, b, t);
      out(b, t) = static_cast<To>(v);
    }
  }
  return out;
}

std::string kind_name(PositionSource::Kind k) {
  switch (k) {
    case PositionSource::Kind::contiguous:
      return "contiguous";
    case PositionSource::Kind::explicit_ids:
      return "explicit_ids";
    case PositionSource::Kind::padding_mask:
      return "padding_mask";
    case PositionSource::Kind::packed:
      return "packed";
  }
  return "?";
}

}  // namespace

std::unique_ptr<Positions> Positions::contiguous(std::size_t start) {
  std::unique_ptr<Positions> p(new Positions);
  p->source_ = PositionSource::contiguous(start);
  return p;
}

std::unique_ptr<Positions> Positions::explicit_ids(const py::array& ids) {
  constexpr const char* op = "PositionSource.explicit_ids";
  std::unique_ptr<Positions> p(new Positions);
  if (has_dtype<std::int64_t>(ids)) {
    p->source_ = PositionSource::explicit_ids(matrix_in<std::int64_t>(ids, op, "ids"));
  } else if (has_dtype<std::int32_t>(ids)) {
    p->source_ = PositionSource::explicit_ids(matrix_in<std::int32_t>(ids, op, "ids"));
  } else {
    throw py::type_error(std::string(op) + ": ids must be an int64 or int32 array, got " +
                         dtype_name(ids));
  }
  p->keep_ = ids;
  return p;
}

std::unique_ptr<Positions> Positions::padding_mask(const py::array& mask) {
  constexpr const char* op = "PositionSource.padding_mask";
  std::unique_ptr<Positions> p(new Positions);
  if (has_dtype<bool>(mask)) {
    p->source_ = PositionSource::padding_mask(matrix_in<bool>(mask, op, "mask"));
  } else if (has_dtype<std::uint8_t>(mask)) {
    p->source_ = PositionSource::padding_mask(matrix_in<std::uint8_t>(mask, op, "mask"));
  } else if (has_dtype<std::int32_t>(mask)) {
    p->source_ = PositionSource::padding_mask(matrix_in<std::int32_t>(mask, op, "mask"));
  } else if (has_dtype<std::int64_t>(mask)) {
    p->source_ = PositionSource::padding_mask(matrix_in<std::int64_t>(mask, op, "mask"));
  } else {
    throw py::type_error(std::string(op) +
                         ": mask must be a bool, uint8, int32 or int64 array, got " +
                         dtype_name(mask));
  }
  p->keep_ = mask;
  return p;
}

std::unique_ptr<Positions> Positions::packed(const py::array& tokens, TokenId separator) {
  std::unique_ptr<Positions> p(new Positions);
  Tokens tk = tokens_in(tokens, "PositionSource.packed", std::nullopt);
  if (tk.owned.empty()) {
    p->keep_ = tokens;
    p->source_ = PositionSource::packed(tk.view, separator);
  } else {
    p->tokens_ = std::move(tk.owned);
    p->source_ = PositionSource::packed(p->tokens_.cview(), separator);
  }
  return p;
}

py::object Positions::array() const {
  if (keep_) return keep_;
  // The converted copies, read-only (changing them would not change what the caller passed).
  if (!tokens_.empty())
    return array_over(tokens_.cview(), py::cast(this, py::return_value_policy::reference), false);
  return py::none();
}

const PositionSource& source_or_default(const Positions* positions) {
  static const PositionSource contiguous = PositionSource::contiguous(0);
  return positions != nullptr ? positions->source() : contiguous;
}

Tokens tokens_in(const py::array& a, const char* op, std::optional<std::size_t> vocab) {
  Tokens tk;
  if (has_dtype<TokenId>(a)) {
    tk.view = matrix_in<TokenId>(a, op, "tokens");
    return tk;
  }
  if (!has_dtype<std::int64_t>(a)) {
    throw py::type_error(std::string(op) + ": tokens must be an int32 or int64 array, got " +
                         dtype_name(a));
  }
  tk.owned = convert<std::int64_t, TokenId>(a, op, "tokens", [&](std::int64_t id, auto b, auto t) {
    if (id >= std::numeric_limits<TokenId>::min() && id <= std::numeric_limits<TokenId>::max()) {
      return;
    }
    std::string msg = std::string(op) + ": token id " + std::to_string(id) + " at " + where(b, t);
    if (vocab) {
      msg += " is outside the vocabulary of " + std::to_string(*vocab) + " rows (valid ids: 0 to " +
             std::to_string(*vocab == 0 ? 0 : *vocab - 1) + ")";
    } else {
      msg += " does not fit posemb's 32-bit token ids";
    }
    throw std::out_of_range(msg);
  });
  tk.view = tk.owned.cview();
  return tk;
}

void bind_positions(py::module_& m) {
  py::class_<Positions>(m, "PositionSource", R"(Where each token's position comes from.

  PositionSource.contiguous(start=0)  position = start + t (cached decoding, a shard)
  PositionSource.explicit_ids(ids)    position = ids[b, t]; ids (B, T) int64 or int32
  PositionSource.padding_mask(mask)   mask (B, T) bool, uint8, int32 or int64: 1 real, 0 pad
                                      (values checked to be 0 or 1). A real token's position is
                                      the number of real tokens before it in its row; pads get no
                                      position and no gradient
  PositionSource.packed(tokens, separator)
                                      tokens (B, T) int32 (or int64, narrowed once, here):
                                      counts from 0, restarting after each separator token

Arrays are referenced, not copied, and read when the source is used, not when it is made.)")
      .def_static("contiguous", &Positions::contiguous, py::arg("start") = 0)
      .def_static("explicit_ids", &Positions::explicit_ids, py::arg("ids"))
      .def_static("padding_mask", &Positions::padding_mask, py::arg("mask"))
      .def_static("packed", &Positions::packed, py::arg("tokens"), py::arg("separator"))
      .def_property_readonly("kind",
                             [](const Positions& p) { return kind_name(p.source().kind()); })
      .def_property_readonly("start", [](const Positions& p) { return p.source().start(); })
      .def_property_readonly("separator", [](const Positions& p) { return p.source().separator(); })
      .def_property_readonly("array", &Positions::array,
                             "The ids, mask or tokens array the source reads (None for "
                             "contiguous).")
      .def("__repr__", [](const Positions& p) {
        const PositionSource& s = p.source();
        switch (s.kind()) {
          case PositionSource::Kind::contiguous:
            return "PositionSource.contiguous(start=" + std::to_string(s.start()) + ")";
          case PositionSource::Kind::packed:
            return "PositionSource.packed(<" + std::to_string(s.tokens().rows()) + " x " +
                   std::to_string(s.tokens().cols()) +
                   " tokens>, separator=" + std::to_string(s.separator()) + ")";
          default: {
            const auto shape = [](const auto& v) {
              return std::to_string(v.rows()) + " x " + std::to_string(v.cols());
            };
            return "PositionSource." + kind_name(s.kind()) + "(<" +
                   (s.kind() == PositionSource::Kind::explicit_ids ? std::visit(shape, s.ids())
                                                                   : std::visit(shape, s.mask())) +
                   ">)";
          }
        }
      });

  m.def(
      "resolve_positions",
      [](const Positions* positions, std::size_t batch, std::size_t seq_len,
         std::size_t max_seq_len, const std::string& operation) {
        Matrix<std::int64_t> pos = without_gil([&] {
          return posemb::resolve_positions(source_or_default(positions), batch, seq_len,
                                           max_seq_len, operation.c_str());
        });
        return array_owning(std::move(pos));
      },
      py::arg("positions"), py::arg("batch"), py::arg("seq_len"), py::arg("max_seq_len"),
      py::kw_only(), py::arg("operation") = "resolve_positions",
      R"(The position of every token, an int64 (batch, seq_len) array, -1 for pads. Validates
like the kernels: SequenceTooLong past max_seq_len, IndexError for a negative id, ValueError for
shape mismatches. operation: the name the error messages give (a kernel's, "embed_forward", for
a caller that checks positions in its place).)");
}

}  // namespace posemb::python
