// exp() over a whole logit row, vectorised. Compiled on its own with -ffast-math so that GCC may call
// glibc's vector exp (libmvec, ≤ 4 ulp) and sum in lanes; callers pass finite logits only, since
// -ffast-math lets the compiler assume there are no infinities.
#include <cmath>
#include <cstddef>

namespace specgate {

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
