// One-permutation MinHash with rotation densification, b-bit storage and band keys.
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "neardup/sketch.h"
#include "sketch/minhash.h"

namespace neardup {
namespace {

using sketch_internal::Remix;

constexpr int kMaxBins = 4096;
constexpr int kMaxBands = 64;
constexpr uint64_t kEmpty = UINT64_MAX;

class SketcherImpl final : public Sketcher {
 public:
  explicit SketcherImpl(const SketchOptions& options)
      : options_(options),
        bytes_(static_cast<size_t>(options.bins) * static_cast<size_t>(options.bits_per_bin) / 8),
        shift_(64 - std::countr_zero(static_cast<unsigned>(options.bins))),
        value_mask_(options.bits_per_bin == 64 ? ~uint64_t{0}
                                               : (uint64_t{1} << options.bits_per_bin) - 1),
        band_stride_(options.bins / (options.bands * options.rows)) {
    // One bit at the start of every field of a 64-bit word: mismatching fields are counted there.
    for (int p = 0; p < 64; p += options.bits_per_bin) field_starts_ |= uint64_t{1} << p;
  }

  size_t sketch_bytes() const override { return bytes_; }
  const SketchOptions& options() const override { return options_; }

  Status Compute(std::span<const uint64_t> feature_hashes, std::span<uint8_t> sketch,
                 std::span<uint32_t> band_keys) const override {
    if (sketch.size() != bytes_) {
      return Status::InvalidArgument("sketch buffer of " + std::to_string(sketch.size()) +
                                     " bytes, expected " + std::to_string(bytes_));
    }
    if (band_keys.size() != static_cast<size_t>(options_.bands)) {
      return Status::InvalidArgument("band key buffer of " + std::to_string(band_keys.size()) +
                                     " keys, expected " + std::to_string(options_.bands));
    }
    if (feature_hashes.empty()) {
      std::memset(sketch.data(), 0, sketch.size());
      std::fill(band_keys.begin(), band_keys.end(), 0);
      return Status::OK();
    }
    std::array<uint64_t, kMaxBins> values;
    Fill(feature_hashes, values.data());
    Pack(values.data(), sketch.data());
    for (int j = 0; j < options_.bands; ++j) {
      uint64_t h = 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(j + 1);
      for (int i = 0; i < options_.rows; ++i) {
        h = Remix(h ^ values[static_cast<size_t>((i * options_.bands + j) * band_stride_)]);
      }
      band_keys[static_cast<size_t>(j)] = static_cast<uint32_t>(h >> 32);
    }
    return Status::OK();
  }

  int MatchingBins(const uint8_t* a, const uint8_t* b) const override {
    int mismatches = 0;
    for (size_t i = 0; i < bytes_; i += 8) {
      uint64_t x, y;
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      uint64_t differ = x ^ y;
      for (int s = 1; s < options_.bits_per_bin; s <<= 1) differ |= differ >> s;
      mismatches += std::popcount(differ & field_starts_);
    }
    return options_.bins - mismatches;
  }

  double EstimateFromMatches(int matches) const override {
    const double chance = std::ldexp(1.0, -options_.bits_per_bin);
    return (static_cast<double>(matches) / options_.bins - chance) / (1 - chance);
  }

 private:
  // values[b] = v_b of the header comment: minimum per bin, then densified and remixed.
  void Fill(std::span<const uint64_t> hashes, uint64_t* values) const {
    const int bins = options_.bins;
    std::fill(values, values + bins, kEmpty);
    for (uint64_t h : hashes) {
      const uint64_t bin = h >> shift_;
      const uint64_t v = Remix(h);
      if (v < values[bin]) values[bin] = v;
    }
    // From the last bin backwards, twice round, so every bin sees the next non-empty bin after it.
    std::array<uint64_t, kMaxBins> minimum;
    std::memcpy(minimum.data(), values, sizeof(uint64_t) * static_cast<size_t>(bins));
    int next = -1;  // absolute position (0 .. 2 * bins) of the next non-empty bin
    for (int i = 2 * bins - 1; i >= 0; --i) {
      const int bin = i % bins;
      if (minimum[static_cast<size_t>(bin)] != kEmpty) next = i;
      if (i < bins) {
        values[bin] = Remix(minimum[static_cast<size_t>(next % bins)] + static_cast<uint64_t>(next - i));
      }
    }
  }

  // Low bits_per_bin bits of every value, packed little-endian from bit 0 of byte 0.
  void Pack(const uint64_t* values, uint8_t* out) const {
    const int bits = options_.bits_per_bin;
    const int per_word = 64 / bits;
    for (size_t w = 0; w < bytes_ / 8; ++w) {
      uint64_t word = 0;
      for (int f = 0; f < per_word; ++f) {
        word |= (values[w * static_cast<size_t>(per_word) + static_cast<size_t>(f)] & value_mask_)
                << (f * bits);
      }
      for (int k = 0; k < 8; ++k) out[w * 8 + static_cast<size_t>(k)] = static_cast<uint8_t>(word >> (8 * k));
    }
  }

  const SketchOptions options_;
  const size_t bytes_;
  const int shift_;
  const uint64_t value_mask_;
  const int band_stride_;
  uint64_t field_starts_ = 0;
};

}  // namespace

double BandCollisionProbability(double jaccard, int bands, int rows) {
  return 1 - std::pow(1 - std::pow(jaccard, rows), bands);
}

Result<int> ChooseRows(double threshold, int bands, double target_recall) {
  if (!(threshold > 0 && threshold <= 1)) {
    return Status::InvalidArgument("threshold must be in (0, 1], got " + std::to_string(threshold));
  }
  if (bands < 1 || bands > kMaxBands) {
    return Status::InvalidArgument("bands must be between 1 and 64, got " + std::to_string(bands));
  }
  if (!(target_recall > 0 && target_recall < 1)) {
    return Status::InvalidArgument("target recall must be in (0, 1), got " + std::to_string(target_recall));
  }
  int rows = 1;
  while (rows < kMaxBins / bands && BandCollisionProbability(threshold, bands, rows + 1) >= target_recall) {
    ++rows;
  }
  return rows;
}

FingerprintOptions AccurateFingerprintOptions() {
  FingerprintOptions options;
  options.mode = FeatureMode::kShingles;
  options.shingle_unit = ShingleUnit::kChar;
  options.shingle_size = 5;
  options.weighting = FeatureWeighting::kDistinct;
  options.fold_traditional = true;
  return options;
}

Result<std::unique_ptr<Sketcher>> Sketcher::Create(const SketchOptions& options) {
  const int bins = options.bins, bits = options.bits_per_bin;
  if (bins < 64 || bins > kMaxBins || !std::has_single_bit(static_cast<unsigned>(bins))) {
    return Status::InvalidArgument("sketch bins must be a power of two from 64 to 4096, got " +
                                   std::to_string(bins));
  }
  if (bits < 1 || bits > 32 || !std::has_single_bit(static_cast<unsigned>(bits))) {
    return Status::InvalidArgument("sketch bits per bin must be 1, 2, 4, 8, 16 or 32, got " +
                                   std::to_string(bits));
  }
  if (options.bands < 1 || options.bands > kMaxBands || options.rows < 1 ||
      options.bands * options.rows > bins) {
    return Status::InvalidArgument("bands (1..64) times rows must be at most the bins, got " +
                                   std::to_string(options.bands) + " x " + std::to_string(options.rows));
  }
  return std::unique_ptr<Sketcher>(std::make_unique<SketcherImpl>(options));
}

Result<double> Sketcher::EstimateJaccard(std::span<const uint8_t> a, std::span<const uint8_t> b) const {
  if (a.size() != sketch_bytes() || b.size() != sketch_bytes()) {
    return Status::InvalidArgument("sketches of " + std::to_string(a.size()) + " and " +
                                   std::to_string(b.size()) + " bytes, expected " +
                                   std::to_string(sketch_bytes()));
  }
  return EstimateFromMatches(MatchingBins(a.data(), b.data()));
}

}  // namespace neardup
