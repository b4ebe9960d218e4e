// Eagle3Draws: sampled drafts of an EAGLE-3 head drawn natively, γ tokens in one call: each from the
// sampler row of the head's logits (processRow, the steps of processLogits) with one uniform of the
// caller's generator, drawn as SeededChance.choose draws, then fed back through the head. The rows can
// stay here (withoutLogits): the caller then takes each token's probability and reads a row's values at
// the ids it names (drawnAt) where verification rejects a token.
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
    /** The logits are not kept: only the ids and the sampler rows (the caller reads them with drawnAt). */
    bool withoutLogits = false;
};

/** A draft's tokens (−1 past its end), and per token its sampler row and its logits, `size` values each. */
struct HeadDraws {
    std::vector<int32_t> ids;
    std::vector<double> probabilities;
    std::vector<double> logits;
    /** Values per row. */
    size_t size = 0;
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
    draws.size = size;
    draws.probabilities.assign(count * size, 0);
    draws.logits.assign(settings.withoutLogits ? 0 : count * size, 0);
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
        if (!settings.withoutLogits) std::copy(row, row + size, draws.logits.begin() + static_cast<std::ptrdiff_t>(index * size));
        draws.ids[index] = chooseIndex(probabilities, size, uniforms[index]);
        if (draws.ids[index] < 0) {
            error = "the EAGLE-3 head's row " + std::to_string(index) + " has no positive probability";
            return false;
        }
    }
    return true;
}

/** The drawn tokens' probabilities in the rows they were drawn from, q_j(x_j): one per token, −1 past the draft's end. */
inline std::vector<double> drawnProbabilities(const HeadDraws& draws) {
    std::vector<double> probabilities(draws.ids.size(), -1);
    for (size_t row = 0; row < draws.ids.size() && draws.ids[row] >= 0; row++)
        probabilities[row] = draws.probabilities[row * draws.size + static_cast<size_t>(draws.ids[row])];
    return probabilities;
}

/**
 * Row `row`'s sampler probabilities at `ids` (0 outside the row's [0, size)), or, with `ids` empty, the
 * whole row; an error message when `row` is not a drawn token's row.
 */
inline std::string drawnAt(const HeadDraws& draws, size_t row, const std::vector<int32_t>& ids, std::vector<double>& values) {
    if (row >= draws.ids.size() || draws.ids[row] < 0)
        return "row " + std::to_string(row) + " is not a row of the last draft (" + std::to_string(draws.ids.size()) + " draws)";
    const double* probabilities = draws.probabilities.data() + row * draws.size;
    if (ids.empty()) {
        values.assign(probabilities, probabilities + draws.size);
        return "";
    }
    values.resize(ids.size());
    for (size_t index = 0; index < ids.size(); index++)
        values[index] = ids[index] >= 0 && static_cast<size_t>(ids[index]) < draws.size ? probabilities[ids[index]] : 0;
    return "";
}

} // namespace specgate
