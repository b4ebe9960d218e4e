// The passes over a whole logit row, vectorised. Compiled on its own with -ffast-math so that GCC may
// call glibc's vector exp (libmvec, ≤ 4 ulp), sum in lanes and take the maximum in lanes;
// scaledExponentials gets finite logits only, since -ffast-math lets the compiler assume there are no
// infinities, and scanRow tests for NaN and infinities on the bits, which -ffast-math cannot fold away.
#include "samplerRow.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace specgate {

RowScan scanRow(const float* logits, size_t length) {
    float max = logits[0];
    uint32_t bad = 0;
    size_t masked = 0;
#pragma omp simd reduction(max : max) reduction(| : bad) reduction(+ : masked)
    for (size_t index = 0; index < length; index++) {
        uint32_t bits = 0;
        std::memcpy(&bits, &logits[index], sizeof(bits));
        // NaN: exponent all ones and a nonzero mantissa; +Infinity: exactly 0x7f800000; −Infinity: 0xff800000.
        bad |= static_cast<uint32_t>((bits & 0x7fffffffu) > 0x7f800000u) | static_cast<uint32_t>(bits == 0x7f800000u);
        masked += bits == 0xff800000u ? 1 : 0;
        max = logits[index] > max ? logits[index] : max;
    }
    return RowScan{max, length - masked, bad != 0};
}

double scaledExponentials(const float* logits, double* out, size_t length, double inverseTemperature, double scaledMax) {
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t index = 0; index < length; index++) {
        const double value = std::exp(static_cast<double>(logits[index]) * inverseTemperature - scaledMax);
        out[index] = value;
        sum += value;
    }
    return sum;
}

} // namespace specgate
