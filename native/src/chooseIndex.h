// chooseIndex: one draw from a row of weights by inverse CDF, as SeededChance.choose draws.
#pragma once

#include <cstddef>
#include <cstdint>

namespace specgate {

/**
 * Inverse CDF with one uniform over the positive weights, as SeededChance.choose (the last positive
 * index where rounding leaves the target unreached); −1 for a row without a positive weight.
 */
inline int32_t chooseIndex(const double* weights, size_t size, double uniform) {
    double total = 0;
    for (size_t index = 0; index < size; index++) total += weights[index];
    const double target = uniform * total;
    double cumulative = 0;
    int32_t lastPositive = -1;
    for (size_t index = 0; index < size; index++) {
        if (weights[index] <= 0) continue;
        cumulative += weights[index];
        lastPositive = static_cast<int32_t>(index);
        if (target < cumulative) return lastPositive;
    }
    return lastPositive;
}

} // namespace specgate
