#pragma once

#include <algorithm>
#include <cstdint>

namespace silo::ec {

// Where an erasure-coded object's bytes are in its slices (docs/data-protection.md
// "Layout: erasure coding"). The object is cut in stripes of k cells of `cell` bytes; the last
// stripe holds the rest in k equal cells of ceil(rest / k) bytes (zero-padded), so no
// slice carries more than k - 1 bytes of padding. Slice i holds cell i of every stripe;
// the m parity slices hold the parity cells. Every slice has slice_size() bytes.
struct Layout {
  uint32_t k = 1;
  uint64_t cell = 1;
  uint64_t object_size = 0;

  uint64_t stripe_bytes() const { return k * cell; }
  uint64_t stripes() const {
    return object_size == 0 ? 0 : (object_size + stripe_bytes() - 1) / stripe_bytes();
  }
  // Bytes of each cell of stripe `s` (all cells of a stripe have one length).
  uint64_t cell_length(uint64_t s) const {
    if (s + 1 < stripes()) return cell;
    const uint64_t rest = object_size - s * stripe_bytes();
    return (rest + k - 1) / k;
  }
  // Where stripe `s` starts in the object and in every slice.
  uint64_t object_offset(uint64_t s) const { return s * stripe_bytes(); }
  uint64_t slice_offset(uint64_t s) const { return s * cell; }
  uint64_t slice_size() const {
    return stripes() == 0 ? 0 : slice_offset(stripes() - 1) + cell_length(stripes() - 1);
  }
  // The object bytes in data cell `j` of stripe `s` (the rest of the cell is padding).
  uint64_t data_in_cell(uint64_t s, uint32_t j) const {
    const uint64_t start = object_offset(s) + j * cell_length(s);
    return start >= object_size ? 0 : std::min(cell_length(s), object_size - start);
  }
  // The stripe that holds object byte `offset` (< object_size).
  uint64_t stripe_of(uint64_t offset) const { return offset / stripe_bytes(); }
};

}  // namespace silo::ec
