// One-permutation MinHash with rotation densification, b-bit storage and band keys.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "neardup/cpu.h"
#include "neardup/sketch.h"
#include "sketch/kernels.h"
#include "sketch/minhash.h"

namespace neardup {
namespace {

using sketch_internal::Remix;

constexpr int kMaxBins = 4096;
constexpr int kMaxBands = 64;
constexpr uint64_t kEmpty = UINT64_MAX;

inline uint32_t Load32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

inline void Store32(uint32_t v, uint8_t* p) {
  for (int k = 0; k < 4; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}

// Features enter the sketch through the top kTopBits bits of their hash (doc/fingerprint.md, 9).
constexpr int kTopBits = 23;
constexpr size_t kMaxPayloadBytes = size_t{kMaxBins} * 32 / 8;
constexpr size_t kMaxExact = kMaxPayloadBytes * 8 / kTopBits;

inline uint32_t Top(uint64_t hash) { return static_cast<uint32_t>(hash >> (64 - kTopBits)); }

// Value i of a little-endian stream of kTopBits-bit values.
inline uint32_t LoadTop(const uint8_t* stream, size_t i) {
  const size_t bit = i * kTopBits;
  uint32_t v = 0;
  for (size_t k = 0; k < 4 && (bit / 8 + k) * 8 < bit + kTopBits; ++k) {
    v |= static_cast<uint32_t>(stream[bit / 8 + k]) << (8 * k);
  }
  return (v >> (bit % 8)) & ((1u << kTopBits) - 1);
}

// ORs value v in at position i of the stream (zeroed before).
inline void StoreTop(uint32_t v, uint8_t* stream, size_t i) {
  const size_t bit = i * kTopBits;
  const uint64_t shifted = uint64_t{v} << (bit % 8);
  for (size_t k = 0; k * 8 < bit % 8 + kTopBits; ++k) {
    stream[bit / 8 + k] |= static_cast<uint8_t>(shifted >> (8 * k));
  }
}

// Bins of 2 bits or more whose bits differ between two payloads (`starts`: one bit at the start of
// every field of a 64-bit word; 1-bit bins are counted by sketch_internal::DifferingBits). Without
// a POPCNT instruction in the target, std::popcount is a library call. Stops early (every 4 words)
// once more than `limit` bins disagree: the count is then partial.
inline int Mismatches(const uint8_t* a, const uint8_t* b, size_t bytes, int bits, uint64_t starts,
                      int limit) {
  int mismatches = 0;
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    uint64_t differ = x ^ y;
    for (int s = 1; s < bits; s <<= 1) differ |= differ >> s;
    mismatches += std::popcount(differ & starts);
    if ((i & 31) == 24 && mismatches > limit) break;
  }
  return mismatches;
}

int MismatchesPortable(const uint8_t* a, const uint8_t* b, size_t bytes, int bits, uint64_t starts,
                       int limit) {
  return Mismatches(a, b, bytes, bits, starts, limit);
}

// The same compiled for CPUs with POPCNT (every CPU of the AVX2 level and above; cpu.h).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("popcnt"))) int MismatchesPopcnt(const uint8_t* a, const uint8_t* b,
                                                       size_t bytes, int bits, uint64_t starts,
                                                       int limit) {
  return Mismatches(a, b, bytes, bits, starts, limit);
}
#else
int MismatchesPopcnt(const uint8_t* a, const uint8_t* b, size_t bytes, int bits, uint64_t starts,
                     int limit) {
  return MismatchesPortable(a, b, bytes, bits, starts, limit);
}
#endif

class SketcherImpl final : public Sketcher {
 public:
  explicit SketcherImpl(const SketchOptions& options)
      : options_(options),
        payload_bytes_(static_cast<size_t>(options.bins) *
                       static_cast<size_t>(options.bits_per_bin) / 8),
        exact_capacity_(payload_bytes_ * 8 / kTopBits),
        shift_(kTopBits - std::countr_zero(static_cast<unsigned>(options.bins))),
        value_mask_((uint64_t{1} << options.bits_per_bin) - 1),
        band_stride_(options.bins / (options.bands * options.rows)) {
    // One bit at the start of every field of a 64-bit word: mismatching fields are counted there.
    for (int p = 0; p < 64; p += options.bits_per_bin) field_starts_ |= uint64_t{1} << p;
  }

  size_t sketch_bytes() const override { return kHeaderBytes + payload_bytes_; }
  size_t exact_capacity() const override { return exact_capacity_; }
  const SketchOptions& options() const override { return options_; }

  Status Compute(std::span<const uint64_t> feature_hashes, std::span<uint8_t> sketch,
                 std::span<uint32_t> band_keys) const override {
    if (sketch.size() != sketch_bytes()) {
      return Status::InvalidArgument("sketch buffer of " + std::to_string(sketch.size()) +
                                     " bytes, expected " + std::to_string(sketch_bytes()));
    }
    if (band_keys.size() != static_cast<size_t>(options_.bands)) {
      return Status::InvalidArgument("band key buffer of " + std::to_string(band_keys.size()) +
                                     " keys, expected " + std::to_string(options_.bands));
    }
    std::memset(sketch.data(), 0, sketch.size());
    if (feature_hashes.empty()) {
      std::fill(band_keys.begin(), band_keys.end(), 0);
      return Status::OK();
    }
    if (feature_hashes.size() > UINT32_MAX) return Status::InvalidArgument("too many features");
    Store32(static_cast<uint32_t>(feature_hashes.size()), sketch.data());
    uint8_t* payload = sketch.data() + kHeaderBytes;
    std::array<uint64_t, kMaxBins> values;
    if (feature_hashes.size() <= exact_capacity_) {
      std::array<uint32_t, kMaxExact> tops;
      for (size_t i = 0; i < feature_hashes.size(); ++i) tops[i] = Top(feature_hashes[i]);
      std::sort(tops.begin(), tops.begin() + static_cast<std::ptrdiff_t>(feature_hashes.size()));
      for (size_t i = 0; i < feature_hashes.size(); ++i) StoreTop(tops[i], payload, i);
      FillBandBins(tops.data(), feature_hashes.size(), values.data());
    } else {
      Fill(feature_hashes, values.data(), payload);
    }
    // Row by row across the bands: the bands' chains of remixes are independent, so the CPU
    // overlaps them (band by band, each waited for its own chain).
    std::array<uint64_t, kMaxBands> keys;
    const auto bands = static_cast<size_t>(options_.bands);
    for (size_t j = 0; j < bands; ++j) keys[j] = 0x9E3779B97F4A7C15ULL * (j + 1);
    for (int i = 0; i < options_.rows; ++i) {
      const uint64_t* row = values.data() + static_cast<size_t>(i * options_.bands * band_stride_);
      for (size_t j = 0; j < bands; ++j) {
        keys[j] = Remix(keys[j] ^ row[j * static_cast<size_t>(band_stride_)]);
      }
    }
    for (size_t j = 0; j < bands; ++j) band_keys[j] = static_cast<uint32_t>(keys[j] >> 32);
    return Status::OK();
  }

  double Estimate(const uint8_t* a, const uint8_t* b) const override {
    const uint32_t count_a = Load32(a), count_b = Load32(b);
    if (count_a == 0 || count_b == 0) return count_a == count_b ? 1.0 : 0.0;
    const bool exact_a = count_a <= exact_capacity_, exact_b = count_b <= exact_capacity_;
    if (exact_a && exact_b)
      return ExactJaccard(a + kHeaderBytes, count_a, b + kHeaderBytes, count_b);
    // J <= |smaller| / |larger|, whatever the bins say.
    const double bound =
        static_cast<double>(std::min(count_a, count_b)) / std::max(count_a, count_b);
    std::array<uint8_t, kMaxPayloadBytes> expanded_a, expanded_b;
    const uint8_t* bits_a = exact_a ? Expand(a, expanded_a.data()) : a + kHeaderBytes;
    const uint8_t* bits_b = exact_b ? Expand(b, expanded_b.data()) : b + kHeaderBytes;
    return std::min(bound, EstimateFromMatches(MatchingBins(bits_a, bits_b, options_.bins)));
  }

  double EstimateIfAtLeast(const uint8_t* a, const uint8_t* b, double threshold) const override {
    const uint32_t count_a = Load32(a), count_b = Load32(b);
    if (count_a <= exact_capacity_ || count_b <= exact_capacity_) return Estimate(a, b);
    const double bound =
        static_cast<double>(std::min(count_a, count_b)) / std::max(count_a, count_b);
    if (bound < threshold) return bound;
    // The estimate reaches the threshold only with at most (1 - c)(1 - t) B bins disagreeing; one
    // bin of margin against rounding. Beyond it the count stops and the partial estimate, already
    // below the threshold, is returned.
    const double allowed = (1 - chance_) * (1 - threshold) * options_.bins;
    const int limit = allowed >= options_.bins ? options_.bins : static_cast<int>(allowed) + 1;
    return std::min(bound,
                    EstimateFromMatches(MatchingBins(a + kHeaderBytes, b + kHeaderBytes, limit)));
  }

 private:
  static constexpr size_t kHeaderBytes = 4;

  // values[i] = v_i of doc/fingerprint.md section 9: minimum per bin, then densified and remixed;
  // the bin-form payload written to `payload`. The features are given by their top bits t
  // (uint32_t) or by their whole hashes (uint64_t).
  template <typename Hash>
  void Fill(std::span<const Hash> features, uint64_t* values, uint8_t* payload) const {
    const int bins = options_.bins;
    std::fill(values, values + bins, kEmpty);
    if constexpr (sizeof(Hash) == 8) {
      // The remixes in batches, with the SIMD level in use; then the minimum of every bin.
      std::array<uint64_t, 256> remixed;
      for (size_t start = 0; start < features.size(); start += remixed.size()) {
        const size_t count = std::min(remixed.size(), features.size() - start);
        sketch_internal::RemixShifted(features.data() + start, count, 64 - kTopBits,
                                      remixed.data());
        for (size_t k = 0; k < count; ++k) {
          const uint32_t bin = Top(features[start + k]) >> shift_;
          // The minimum with a mask, not a comparison GCC turns into a branch (which mispredicts:
          // which features land in a bin already filled is random).
          const uint64_t current = values[bin], candidate = remixed[k];
          const uint64_t smaller = uint64_t{0} - static_cast<uint64_t>(candidate < current);
          values[bin] = current ^ ((current ^ candidate) & smaller);
        }
      }
    } else {
      for (Hash feature : features) {
        const uint32_t bin = static_cast<uint32_t>(feature) >> shift_;
        values[bin] = std::min(values[bin], Remix(static_cast<uint32_t>(feature)));
      }
    }
    // Densification (the nearest non-empty bin at or after each bin, wrapping to the first) and the
    // remix of every bin, with the payload of 1-bit bins packed on the way.
    int first = 0;
    while (first < bins && values[first] == kEmpty) ++first;
    if (first == bins) return;  // no feature (callers pass at least one)
    const bool one_bit = options_.bits_per_bin == 1;
    sketch_internal::DensifyAndRemix(values, static_cast<size_t>(bins),
                                     values[first] + static_cast<uint64_t>(first + bins),
                                     one_bit ? payload : nullptr);
    if (!one_bit) Pack(values, payload);
  }

  // Like Fill, but only the bins of the band rows, from the sorted features of a small document:
  // the non-empty bins are then the distinct bins of the sorted t, in ascending order.
  void FillBandBins(const uint32_t* sorted, size_t count, uint64_t* values) const {
    std::array<uint32_t, kMaxExact> used_bins;
    std::array<uint64_t, kMaxExact> minimum;
    size_t used = 0;
    for (size_t k = 0; k < count; ++k) {
      const uint32_t bin = sorted[k] >> shift_;
      const uint64_t v = Remix(sorted[k]);
      if (used > 0 && used_bins[used - 1] == bin) {
        minimum[used - 1] = std::min(minimum[used - 1], v);
      } else {
        used_bins[used] = bin;
        minimum[used++] = v;
      }
    }
    const auto bins = static_cast<uint32_t>(options_.bins);
    size_t next = 0;  // the first used bin at or after the current position
    for (int slot = 0; slot < options_.bands * options_.rows; ++slot) {
      const auto position = static_cast<uint32_t>(slot * band_stride_);
      while (next < used && used_bins[next] < position) ++next;
      values[position] = next < used ? Remix(minimum[next] + (used_bins[next] - position))
                                     : Remix(minimum[0] + (used_bins[0] + bins - position));
    }
  }

  // Low bits_per_bin bits of every value, packed little-endian from bit 0 of byte 0.
  void Pack(const uint64_t* values, uint8_t* out) const {
    const int bits = options_.bits_per_bin;
    const int per_word = 64 / bits;
    for (size_t w = 0; w < payload_bytes_ / 8; ++w) {
      uint64_t word = 0;
      for (int f = 0; f < per_word; ++f) {
        word |= (values[w * static_cast<size_t>(per_word) + static_cast<size_t>(f)] & value_mask_)
                << (f * bits);
      }
      for (int k = 0; k < 8; ++k)
        out[w * 8 + static_cast<size_t>(k)] = static_cast<uint8_t>(word >> (8 * k));
    }
  }

  // The packed bins of a sketch stored in exact form, written to `out` (payload_bytes_ bytes).
  const uint8_t* Expand(const uint8_t* sketch, uint8_t* out) const {
    const uint32_t count = Load32(sketch);
    std::array<uint32_t, kMaxExact> tops;
    for (uint32_t i = 0; i < count; ++i) tops[i] = LoadTop(sketch + kHeaderBytes, i);
    std::array<uint64_t, kMaxBins> values;
    Fill(std::span<const uint32_t>(tops.data(), count), values.data(), out);
    return out;
  }

  // |A & B| / |A | B| of two sorted streams of feature tops.
  static double ExactJaccard(const uint8_t* a, uint32_t count_a, const uint8_t* b,
                             uint32_t count_b) {
    uint32_t i = 0, j = 0, both = 0;
    while (i < count_a && j < count_b) {
      const uint32_t x = LoadTop(a, i), y = LoadTop(b, j);
      both += x == y;
      i += x <= y;
      j += y <= x;
    }
    return static_cast<double>(both) / static_cast<double>(count_a + count_b - both);
  }

  // Bins that agree; for bins of 2 bits or more, with a limit below the bins, the count stops
  // early once more than `limit` disagree (the result is then too high, but below bins - limit).
  int MatchingBins(const uint8_t* a, const uint8_t* b, int limit) const {
    const int bits = options_.bits_per_bin;
    // 1-bit bins (a payload of whole 64-bit words: 64 bins at least): the whole payload by the
    // SIMD kernel, with no early exit (its branch is hard to predict, and the kernel counts 128
    // bytes in a few instructions).
    if (bits == 1) {
      return options_.bins - static_cast<int>(differing_bits_(a, b, payload_bytes_));
    }
    const int mismatches =
        popcnt_ ? MismatchesPopcnt(a, b, payload_bytes_, bits, field_starts_, limit)
                : MismatchesPortable(a, b, payload_bytes_, bits, field_starts_, limit);
    return options_.bins - mismatches;
  }

  double EstimateFromMatches(int matches) const {
    return (static_cast<double>(matches) / options_.bins - chance_) / (1 - chance_);
  }

  const SketchOptions options_;
  const size_t payload_bytes_;
  const size_t exact_capacity_;
  const int shift_;
  const uint64_t value_mask_;
  const int band_stride_;
  uint64_t field_starts_ = 0;
  const double chance_ = std::ldexp(1.0, -options_.bits_per_bin);  // two random fields agree
  // The bin comparison uses POPCNT when the SIMD level in effect at Create() has it (cpu.h).
  const bool popcnt_ = ActiveSimdLevel() >= SimdLevel::kAvx2;
  const sketch_internal::DifferingBitsFn differing_bits_ = sketch_internal::ChooseDifferingBits();
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
    return Status::InvalidArgument("target recall must be in (0, 1), got " +
                                   std::to_string(target_recall));
  }
  int rows = 1;
  while (rows < kMaxBins / bands &&
         BandCollisionProbability(threshold, bands, rows + 1) >= target_recall) {
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

Status CheckSketchOptions(const SketchOptions& options) {
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
                                   std::to_string(options.bands) + " x " +
                                   std::to_string(options.rows));
  }
  return Status::OK();
}

Result<std::unique_ptr<Sketcher>> Sketcher::Create(const SketchOptions& options) {
  NEARDUP_RETURN_IF_ERROR(CheckSketchOptions(options));
  return std::unique_ptr<Sketcher>(std::make_unique<SketcherImpl>(options));
}

Result<double> Sketcher::EstimateJaccard(std::span<const uint8_t> a,
                                         std::span<const uint8_t> b) const {
  if (a.size() != sketch_bytes() || b.size() != sketch_bytes()) {
    return Status::InvalidArgument("sketches of " + std::to_string(a.size()) + " and " +
                                   std::to_string(b.size()) + " bytes, expected " +
                                   std::to_string(sketch_bytes()));
  }
  return Estimate(a.data(), b.data());
}

}  // namespace neardup
