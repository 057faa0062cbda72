// Internal (core): resolve_positions for callers whose table is not a learned position table
// (the rotary cos/sin cache), so the SequenceTooLong it throws gives their remedy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "posemb/matrix.hpp"
#include "posemb/positions.hpp"

namespace posemb::detail {

// As posemb::resolve_positions; `remedy` replaces SequenceTooLong's default advice (empty: the
// default).
Matrix<std::int64_t> resolve_positions(const PositionSource& src, std::size_t batch,
                                       std::size_t seq_len, std::size_t max_seq_len,
                                       const char* operation, std::string_view remedy);

// The checks resolve_positions makes of PositionSource::contiguous(start), without building the
// array: a non-empty batch whose positions start .. start + seq_len - 1 all have a row.
void check_contiguous_positions(std::size_t start, std::size_t batch, std::size_t seq_len,
                                std::size_t max_seq_len, const char* operation,
                                std::string_view remedy);

}  // namespace posemb::detail
