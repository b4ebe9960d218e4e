#include "samplerRow.h"

#include <algorithm>
#include <cmath>

namespace specgate {

/** Zero every entry below `threshold` and renormalise the rest (division, so a single survivor becomes exactly 1). */
namespace {

void keepAtLeast(double* row, size_t length, double threshold) {
    double sum = 0;
    for (size_t index = 0; index < length; index++) {
        if (row[index] < threshold)
            row[index] = 0;
        else
            sum += row[index];
    }
    for (size_t index = 0; index < length; index++) row[index] /= sum;
}

} // namespace

std::string processRow(const float* logits, double* out, size_t length, const Sampling& sampling, std::vector<double>& scratch) {
    if (length == 0) return "empty logit row";
    // The checks and the maximum in one vectorised pass (exponentials.cpp); the scalar loop only names a bad logit.
    const RowScan scan = scanRow(logits, length);
    if (scan.invalid) {
        for (size_t index = 0; index < length; index++) {
            const float value = logits[index];
            if (std::isnan(value) || value == INFINITY)
                return "logit " + std::to_string(index) + " is " + (std::isnan(value) ? "NaN" : "Infinity");
        }
    }
    const size_t finite = scan.finite;
    if (finite == 0) return "every logit is -Infinity: no token can be sampled";
    if (sampling.temperature == 0) {
        size_t best = 0;
        for (size_t index = 1; index < length; index++)
            if (logits[index] > logits[best]) best = index;
        std::fill(out, out + length, 0.0);
        out[best] = 1;
        return "";
    }
    const double max = scan.max; // exact: the largest float, widened
    // exp((x − max)/T). A row of finite logits (every real model's) goes through the vectorised loop
    // (libmvec's exp, ≤ 4 ulp, summed in lanes: the row agrees with processLogits to ~1e-16 per entry,
    // at a fraction of the cost on a 150k-token vocabulary); masked rows take the scalar loop.
    double sum = 0;
    if (finite == length) {
        sum = scaledExponentials(logits, out, length, 1.0 / sampling.temperature, max / sampling.temperature);
    } else {
        for (size_t index = 0; index < length; index++) {
            const double value = std::exp((static_cast<double>(logits[index]) - max) / sampling.temperature);
            out[index] = value;
            sum += value;
        }
    }
    for (size_t index = 0; index < length; index++) out[index] /= sum;
    if (sampling.topK > 0 && static_cast<size_t>(sampling.topK) < length) {
        scratch.assign(out, out + length);
        auto kth = scratch.end() - sampling.topK;
        std::nth_element(scratch.begin(), kth, scratch.end());
        keepAtLeast(out, length, *kth);
    }
    if (sampling.topP < 1) {
        scratch.assign(out, out + length);
        std::sort(scratch.begin(), scratch.end());
        double cumulative = 0;
        double threshold = 0;
        for (size_t index = length; index-- > 0;) {
            cumulative += scratch[index];
            if (cumulative >= sampling.topP) {
                threshold = scratch[index];
                break;
            }
        }
        keepAtLeast(out, length, threshold);
    }
    if (sampling.minP > 0) {
        double largest = 0;
        for (size_t index = 0; index < length; index++)
            if (out[index] > largest) largest = out[index];
        keepAtLeast(out, length, sampling.minP * largest);
    }
    return "";
}

} // namespace specgate
