// Eagle3Draws: sampled drafts of an EAGLE-3 head drawn natively, γ tokens in one call: each from the
// sampler row of the head's logits (processRow, the steps of processLogits) with one uniform of the
// caller's generator, drawn as SeededChance.choose draws, then fed back through the head.
#pragma once

#include "Eagle3HeadState.h"
#include "chooseIndex.h"
#include "samplerRow.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace specgate {

/** How a head's drafts are drawn: the sampler settings, the ids the rows cover, and the confidence a row must reach. */
struct HeadDrawSettings {
    Sampling sampling;
    /** Ids each row covers, [0, size): the target's and the head's shared vocabulary. */
    size_t size = 0;
    /** A row whose top probability is below this ends the draft (0: never). */
    double minConfidence = 0;
};

/** A draft's tokens (−1 past its end), and per token its sampler row and its logits, `size` values each. */
struct HeadDraws {
    std::vector<int32_t> ids;
    std::vector<double> probabilities;
    std::vector<double> logits;
};

/**
 * Draws up to `uniforms.size()` tokens from a head that has just synced (its last output is the first
 * draft position's row): false with `error` set when a row is invalid or a decode fails.
 */
inline bool drawDrafts(Eagle3HeadState& head, const HeadDrawSettings& settings, const std::vector<double>& uniforms, HeadDraws& draws,
                       std::string& error) {
    const size_t count = uniforms.size();
    const size_t size = settings.size;
    draws.ids.assign(count, -1);
    draws.probabilities.assign(count * size, 0);
    draws.logits.assign(count * size, 0);
    std::vector<double> scratch;
    for (size_t index = 0; index < count; index++) {
        if (index > 0 && !head.Step(draws.ids[index - 1], error)) return false;
        const float* row = head.LastLogits(error);
        if (row == nullptr) return false;
        double* probabilities = draws.probabilities.data() + index * size;
        const std::string invalid = processRow(row, probabilities, size, settings.sampling, scratch);
        if (!invalid.empty()) {
            error = "the EAGLE-3 head's row " + std::to_string(index) + ": " + invalid;
            return false;
        }
        if (settings.minConfidence > 0 && *std::max_element(probabilities, probabilities + size) < settings.minConfidence) break;
        std::copy(row, row + size, draws.logits.begin() + static_cast<std::ptrdiff_t>(index * size));
        draws.ids[index] = chooseIndex(probabilities, size, uniforms[index]);
        if (draws.ids[index] < 0) {
            error = "the EAGLE-3 head's row " + std::to_string(index) + " has no positive probability";
            return false;
        }
    }
    return true;
}

} // namespace specgate
