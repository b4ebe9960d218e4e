// Sampler rows computed natively: the steps of src/distributions/processLogits.ts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace specgate {

/** The sampler settings of src/distributions/SamplingOptions.ts. */
struct Sampling {
    double temperature = 1;
    int32_t topK = 0;
    double topP = 1;
    double minP = 0;
    /** Rows cover only the first `limit` ids (the rest get probability 0); 0 means the whole vocabulary. */
    size_t limit = 0;
};

/**
 * Logits → the row the sampler draws from, the steps of processLogits (double precision; softmax at
 * the temperature, then top-k with ties kept, top-p keeping the token that crosses it, min-p).
 * Returns an error message (NaN or +Infinity logits, an all-masked row), or an empty string.
 */
std::string processRow(const float* logits, double* out, size_t length, const Sampling& sampling, std::vector<double>& scratch);

/** One pass over a logit row: its largest value (meaningful when `finite` > 0 and not `invalid`), the count of entries other than
 * −Infinity, and whether any is NaN or +Infinity. */
struct RowScan {
    float max;
    size_t finite;
    bool invalid;
};
RowScan scanRow(const float* logits, size_t length);

/** exp(x·inverseTemperature − scaledMax) of every (finite) logit into `out`, and their sum (exponentials.cpp). */
double scaledExponentials(const float* logits, double* out, size_t length, double inverseTemperature, double scaledMax);

} // namespace specgate
