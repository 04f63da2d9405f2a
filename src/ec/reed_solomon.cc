#include "ec/reed_solomon.h"

#include <isa-l/erasure_code.h>

#include <algorithm>

namespace silo::ec {

ReedSolomon::ReedSolomon(int k, int m)
    : k_(k), m_(m), matrix_(static_cast<size_t>(k + m) * k), encode_tables_(static_cast<size_t>(32) * k * m) {
  gf_gen_cauchy1_matrix(matrix_.data(), k + m, k);
  ec_init_tables(k, m, matrix_.data() + static_cast<size_t>(k) * k, encode_tables_.data());
}

Result<ReedSolomon> ReedSolomon::create(int data_slices, int parity_slices) {
  if (data_slices < 1 || parity_slices < 1 || data_slices + parity_slices > kMaxSlices) {
    return Status::invalid_argument("erasure coding needs 1 <= data, 1 <= parity, data + parity <= {} (got {}+{})",
                                    kMaxSlices, data_slices, parity_slices);
  }
  return ReedSolomon(data_slices, parity_slices);
}

Status ReedSolomon::encode(std::span<const std::span<const uint8_t>> data,
                           std::span<const std::span<uint8_t>> parity) const {
  if (static_cast<int>(data.size()) != k_ || static_cast<int>(parity.size()) != m_) {
    return Status::invalid_argument("encode needs {} data and {} parity slices, got {} and {}", k_, m_, data.size(),
                                    parity.size());
  }
  const size_t length = data[0].size();
  uint8_t* in[kMaxSlices];
  uint8_t* out[kMaxSlices];
  for (int i = 0; i < k_; ++i) {
    if (data[i].size() != length) return Status::invalid_argument("data slices differ in length");
    in[i] = const_cast<uint8_t*>(data[i].data());  // ISA-L only reads them
  }
  for (int i = 0; i < m_; ++i) {
    if (parity[i].size() != length) return Status::invalid_argument("parity slices differ in length from data");
    out[i] = parity[i].data();
  }
  if (length == 0) return Status::ok();
  ec_encode_data(static_cast<int>(length), k_, m_, const_cast<uint8_t*>(encode_tables_.data()), in, out);
  return Status::ok();
}

Status ReedSolomon::reconstruct(std::span<const std::span<uint8_t>> slices, const std::vector<bool>& present) const {
  const int n = k_ + m_;
  if (static_cast<int>(slices.size()) != n || static_cast<int>(present.size()) != n) {
    return Status::invalid_argument("reconstruct needs all {} slices and their presence", n);
  }
  const size_t length = slices[0].size();
  for (const auto& s : slices) {
    if (s.size() != length) return Status::invalid_argument("slices differ in length");
  }
  // The first k present slices (data first: fewer to rebuild from parity) are the sources.
  std::vector<int> sources;
  std::vector<int> missing;
  for (int i = 0; i < n; ++i) {
    if (present[i] && static_cast<int>(sources.size()) < k_) {
      sources.push_back(i);
    } else if (!present[i]) {
      missing.push_back(i);
    }
  }
  if (static_cast<int>(sources.size()) < k_) {
    return Status::data_loss("{} of {} slices are present; {} are needed", sources.size(), n, k_);
  }
  if (missing.empty() || length == 0) return Status::ok();

  // Rows of the sources in the generator, inverted: data = inverse x sources.
  std::vector<uint8_t> source_rows(static_cast<size_t>(k_) * k_);
  for (int r = 0; r < k_; ++r) {
    std::copy_n(&matrix_[static_cast<size_t>(sources[r]) * k_], k_, &source_rows[static_cast<size_t>(r) * k_]);
  }
  std::vector<uint8_t> inverse(static_cast<size_t>(k_) * k_);
  if (gf_invert_matrix(source_rows.data(), inverse.data(), k_) != 0) {
    return Status::internal("erasure code matrix not invertible (a Cauchy matrix always is)");
  }
  // One decode row per missing slice: its generator row times the inverse.
  const int lost = static_cast<int>(missing.size());
  std::vector<uint8_t> decode_rows(static_cast<size_t>(lost) * k_);
  for (int e = 0; e < lost; ++e) {
    const uint8_t* row = &matrix_[static_cast<size_t>(missing[e]) * k_];
    for (int j = 0; j < k_; ++j) {
      uint8_t v = 0;
      for (int i = 0; i < k_; ++i) v ^= gf_mul(row[i], inverse[static_cast<size_t>(i) * k_ + j]);
      decode_rows[static_cast<size_t>(e) * k_ + j] = v;
    }
  }
  std::vector<uint8_t> tables(static_cast<size_t>(32) * k_ * lost);
  ec_init_tables(k_, lost, decode_rows.data(), tables.data());
  uint8_t* in[kMaxSlices];
  uint8_t* out[kMaxSlices];
  for (int i = 0; i < k_; ++i) in[i] = slices[sources[i]].data();
  for (int e = 0; e < lost; ++e) out[e] = slices[missing[e]].data();
  ec_encode_data(static_cast<int>(length), k_, lost, tables.data(), in, out);
  return Status::ok();
}

}  // namespace silo::ec
