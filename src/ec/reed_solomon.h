#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"

namespace silo::ec {

// Systematic Reed-Solomon over GF(2^8) with ISA-L (DESIGN.md "Data protection"): k data
// slices and m parity slices of equal length; any k of the k+m reconstruct the rest. The
// generator is Cauchy (every k x k submatrix is invertible), so every choice of up to m
// lost slices is recoverable. Immutable after create(); encode/reconstruct may run on
// several threads at once (each call keeps its own tables).
class ReedSolomon {
 public:
  static constexpr int kMaxSlices = 32;  // k + m

  // Errors: kInvalidArgument unless 1 <= k, 1 <= m, k + m <= kMaxSlices.
  static Result<ReedSolomon> create(int data_slices, int parity_slices);

  int data_slices() const { return k_; }
  int parity_slices() const { return m_; }

  // Computes `parity` (m spans) from `data` (k spans); all spans of one length.
  // Errors: kInvalidArgument on a wrong count or length.
  Status encode(std::span<const std::span<const uint8_t>> data, std::span<const std::span<uint8_t>> parity) const;

  // Rebuilds the slices not `present` from those that are: `slices` holds all k+m slices
  // in order (data first), of one length; on return every slice holds its bytes.
  // Errors: kInvalidArgument on a wrong count or length; kDataLoss when fewer than k are
  // present.
  Status reconstruct(std::span<const std::span<uint8_t>> slices, const std::vector<bool>& present) const;

 private:
  ReedSolomon(int k, int m);

  int k_;
  int m_;
  std::vector<uint8_t> matrix_;       // (k+m) x k generator; its first k rows are the identity
  std::vector<uint8_t> encode_tables_;  // ec_init_tables of the m parity rows
};

}  // namespace silo::ec
