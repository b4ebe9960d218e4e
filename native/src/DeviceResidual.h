// DeviceResidual: what lossless verification of a draft model's tokens reads of a sampler row, computed in the graph.
#pragma once

#include <ggml.h>

#include <cstddef>
#include <cstdint>

namespace specgate {

/**
 * Speculative sampling with a draft model reads little of each row: the draft's drawn id x and q(x);
 * the target's p(x); at the first rejection a draw from the residual max(0, p − q), made by rejection
 * sampling with p as the proposal — K draws y ~ p with their p(y), then q at those K ids. These build
 * those reads from a row's sampler chain output (logits over `ids`, the row's ids in their order):
 *
 *  - Scored (a draft row): a draw x with the row's uniform, then q(x). Out: [q(x)]; the id: x.
 *  - Candidates (a target row): p(drafted) for the row's drafted id (−1: none, 0), then K draws with
 *    K uniforms and their probabilities. Out: [p(drafted), p(y_1)..p(y_K)]; candidates: y_1..y_K; the
 *    id: y_1 (a plain draw from the row).
 *  - Gather (a draft row at a rejection): the row's probabilities at K given ids. Out: [q(id_1)..q(id_K)];
 *    the id: the row's argmax.
 *
 * Draws follow DeviceDraw's inverse-CDF rule (the first id whose cumulative probability exceeds u × total).
 * Ids given as inputs are floats: exact below 2²⁴, beyond any vocabulary.
 */
enum class ResidualKind : uint8_t { Scored, Candidates, Gather };

/**
 * A residual row's graph: the id llama.cpp copies (1 element, I32), the floats it copies beside it, and
 * for Candidates the K drawn ids (I32, copied as the row's candidates).
 */
struct ResidualOutputs {
    ggml_tensor* sampled;
    ggml_tensor* values;
    ggml_tensor* ids;
};

/** Floats a residual row copies beside its id, for `width` K (Candidates: and K ids as its candidates). */
inline size_t ResidualValues(ResidualKind kind, size_t width) {
    return kind == ResidualKind::Scored ? 1 : kind == ResidualKind::Candidates ? 1 + width : width;
}

namespace residual {

/**
 * Indices (I32, [k]) into `probabilities` ([n]) drawn with `uniforms` ([k]) by the inverse-CDF rule.
 * In place wherever ggml allows: a reservation builds this for every output row of a batch, and the
 * graph allocator keeps track of a bounded number of free blocks.
 */
inline ggml_tensor* DrawIndices(ggml_context* context, ggml_tensor* probabilities, ggml_tensor* uniforms) {
    const int64_t length = probabilities->ne[0];
    const int64_t count = uniforms->ne[0];
    ggml_tensor* cumulative = ggml_cumsum(context, probabilities);
    ggml_tensor* total = ggml_view_1d(context, cumulative, 1, static_cast<size_t>(length - 1) * cumulative->nb[0]);
    ggml_tensor* targets = ggml_reshape_2d(context, ggml_mul_inplace(context, uniforms, total), 1, count);
    // Column i: 1 where the cumulative sum exceeds target i; the count locates the first such index.
    ggml_tensor* grid = count == 1 ? ggml_reshape_2d(context, cumulative, length, 1)
                                   : ggml_repeat_4d(context, ggml_reshape_2d(context, cumulative, length, 1), length, count, 1, 1);
    ggml_tensor* above = ggml_sum_rows(context, ggml_step_inplace(context, ggml_sub_inplace(context, grid, targets)));
    above = ggml_clamp_inplace(context, above, 1.0f, static_cast<float>(length));
    ggml_tensor* index = ggml_cast(context, ggml_scale_bias_inplace(context, above, -1.0f, static_cast<float>(length)), GGML_TYPE_I32);
    return ggml_reshape_1d(context, index, count);
}

/** `values` ([n], F32 or I32) at `indices` ([k], I32): [k]. */
inline ggml_tensor* At(ggml_context* context, ggml_tensor* values, ggml_tensor* indices) {
    ggml_tensor* column = ggml_reshape_2d(context, values, 1, ggml_nelements(values));
    return ggml_reshape_1d(context, ggml_get_rows(context, column, indices), ggml_nelements(indices));
}

/**
 * The sum of `probabilities` ([n]) where `ids` ([n], F32, a tensor of its own: overwritten) equals each
 * of `wanted` ([k], F32): [k] (0 for an id not in the row).
 */
inline ggml_tensor* Gather(ggml_context* context, ggml_tensor* probabilities, ggml_tensor* ids, ggml_tensor* wanted) {
    const int64_t length = ids->ne[0];
    const int64_t count = wanted->ne[0];
    ggml_tensor* grid = count == 1 ? ggml_reshape_2d(context, ids, length, 1)
                                   : ggml_repeat_4d(context, ggml_reshape_2d(context, ids, length, 1), length, count, 1, 1);
    ggml_tensor* distance = ggml_abs_inplace(context, ggml_sub_inplace(context, grid, ggml_reshape_2d(context, wanted, 1, count)));
    ggml_tensor* isWanted = ggml_step_inplace(context, ggml_scale_bias_inplace(context, distance, -1.0f, 0.5f));
    ggml_tensor* weighted = ggml_mul_inplace(context, isWanted, ggml_reshape_2d(context, probabilities, length, 1));
    return ggml_reshape_1d(context, ggml_sum_rows(context, weighted), count);
}

} // namespace residual

/**
 * The graph of one residual row. `logits`: the chain's row ([n]); `candidates`: the ids it holds, in its
 * order (I32 [n]), or null (ids 0..n−1); `uniforms`: Scored 1, Candidates K, Gather none (null);
 * `ids`: Candidates the drafted id ([1]), Gather the K ids, Scored null (both F32 inputs).
 */
inline ResidualOutputs BuildResidual(ggml_context* context, ResidualKind kind, ggml_tensor* logits, ggml_tensor* candidates,
                                     ggml_tensor* uniforms, ggml_tensor* ids) {
    const int64_t length = logits->ne[0];
    ggml_tensor* probabilities = ggml_soft_max(context, logits);
    auto rowIds = [&]() {
        return candidates != nullptr ? ggml_cast(context, candidates, GGML_TYPE_F32)
                                     : ggml_arange(context, 0.0f, static_cast<float>(length), 1.0f);
    };
    auto mapped = [&](ggml_tensor* indices) { return candidates != nullptr ? residual::At(context, candidates, indices) : indices; };
    if (kind == ResidualKind::Gather) {
        ggml_tensor* gathered = residual::Gather(context, probabilities, rowIds(), ids);
        return {mapped(ggml_argmax(context, logits)), gathered, nullptr};
    }
    ggml_tensor* draftedProbability = kind == ResidualKind::Candidates ? residual::Gather(context, probabilities, rowIds(), ids) : nullptr;
    ggml_tensor* indices = residual::DrawIndices(context, probabilities, uniforms);
    ggml_tensor* drawnProbabilities = residual::At(context, probabilities, indices);
    ggml_tensor* drawn = mapped(indices);
    ggml_tensor* first = ggml_view_1d(context, drawn, 1, 0);
    if (kind == ResidualKind::Scored) return {first, drawnProbabilities, nullptr};
    return {first, ggml_concat(context, draftedProbability, drawnProbabilities, 0), drawn};
}

/**
 * The same reads on the host, from a sampler row (`row`, its first `covered` ids, normalised) copied
 * whole, in the destination's layout (Scored [id, q(id)]: from `out` + 1; Candidates [p(drafted),
 * y_1..y_K, p(y_1)..p(y_K)]; Gather [q(id_1)..q(id_K)]); returns the id (−1: no id has a positive
 * probability).
 */
inline int32_t ResidualOnHost(ResidualKind kind, const double* row, size_t covered, const double* uniforms, const int32_t* ids,
                              size_t width, double* out) {
    auto draw = [&](double uniform) {
        double total = 0;
        for (size_t id = 0; id < covered; id++) total += row[id];
        const double target = uniform * total;
        double cumulative = 0;
        int32_t last = -1;
        for (size_t id = 0; id < covered; id++) {
            if (row[id] <= 0) continue;
            cumulative += row[id];
            last = static_cast<int32_t>(id);
            if (target < cumulative) break;
        }
        return last;
    };
    auto at = [&](int32_t id) { return id >= 0 && static_cast<size_t>(id) < covered ? row[id] : 0.0; };
    if (kind == ResidualKind::Gather) {
        int32_t best = 0;
        for (size_t id = 1; id < covered; id++)
            if (row[id] > row[best]) best = static_cast<int32_t>(id);
        for (size_t index = 0; index < width; index++) out[index] = at(ids[index]);
        return best;
    }
    if (kind == ResidualKind::Scored) {
        const int32_t id = draw(uniforms[0]);
        out[0] = at(id);
        return id;
    }
    out[0] = at(ids[0]);
    int32_t first = -1;
    for (size_t index = 0; index < width; index++) {
        const int32_t id = draw(uniforms[index]);
        if (index == 0) first = id;
        out[1 + index] = id;
        out[1 + width + index] = at(id);
    }
    return first;
}

} // namespace specgate
