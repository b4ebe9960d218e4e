// DeviceResidual: what lossless verification of a draft model's tokens reads of a sampler row, computed in the graph.
#pragma once

#include "chooseIndex.h"

#include <ggml.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace specgate {

/**
 * Speculative sampling with a draft model reads little of each row: the draft's drawn id x and q(x);
 * the target's p(x); at the first rejection a draw from the residual max(0, p − q), made by rejection
 * sampling with p as the proposal — K draws y ~ p with their p(y), then q at those K ids. These build
 * those reads from a row's sampler chain output (logits over `ids`, the row's ids in their order):
 *
 *  - Scored (a draft row): a draw x with the row's uniform, then q(x), and q at the row's K ids where
 *    K > 0 (a draft keeps one sampler chain for its draws and for the residual's reads at a
 *    rejection: a change of chain makes llama.cpp reserve its graphs again). Out: [q(x), q(id_1)..
 *    q(id_K)]; the id: x.
 *  - Candidates (a target row): p(drafted) for the row's drafted id (−1: none, 0), then K draws with
 *    K uniforms and their probabilities. Out: [p(drafted), p(y_1)..p(y_K)]; candidates: y_1..y_K; the
 *    id: y_1 (a plain draw from the row).
 *  - Gather: the row's probabilities at K given ids, without a draw. Out: [q(id_1)..q(id_K)]; the id:
 *    the row's argmax.
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
    return kind == ResidualKind::Scored ? 1 + width : kind == ResidualKind::Candidates ? 1 + width : width;
}

namespace residual {

/**
 * Per target (column of `targets`, [1, k]) the number of entries of each column of `rows` ([m, 1] or
 * [m, k]) that exceed it: [1, k]. Overwrites `rows` where it has k columns (a [m, 1] one is repeated).
 */
inline ggml_tensor* CountAbove(ggml_context* context, ggml_tensor* rows, ggml_tensor* targets) {
    const int64_t count = targets->ne[1];
    ggml_tensor* grid = rows->ne[1] == count ? rows : ggml_repeat_4d(context, rows, rows->ne[0], count, 1, 1);
    return ggml_sum_rows(context, ggml_step_inplace(context, ggml_sub_inplace(context, grid, targets)));
}

/**
 * Indices (I32, [k]) into `probabilities` ([n]) drawn with `uniforms` ([k]) by the inverse-CDF rule: the
 * number of cumulative sums at most u × total. Several draws search in two levels — the block of √n
 * sums holding the target (by the blocks' last sums), then the place in it — so a row costs about
 * 2√n·k comparisons rather than n·k. In place wherever ggml allows: a reservation builds this for every
 * output row of a batch, and the graph allocator keeps track of a bounded number of free blocks.
 */
inline ggml_tensor* DrawIndices(ggml_context* context, ggml_tensor* probabilities, ggml_tensor* uniforms) {
    const int64_t length = probabilities->ne[0];
    const int64_t count = uniforms->ne[0];
    ggml_tensor* cumulative = ggml_cumsum(context, probabilities);
    ggml_tensor* total = ggml_view_1d(context, cumulative, 1, static_cast<size_t>(length - 1) * cumulative->nb[0]);
    ggml_tensor* targets = ggml_reshape_2d(context, ggml_mul_inplace(context, uniforms, total), 1, count);
    ggml_tensor* index = nullptr;
    const int64_t width = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(length))));
    if (count == 1 || length <= 4 * width) {
        ggml_tensor* above = CountAbove(context, ggml_reshape_2d(context, cumulative, length, 1), targets);
        index = ggml_scale_bias_inplace(context, above, -1.0f, static_cast<float>(length));
    } else {
        const int64_t blocks = (length + width - 1) / width;
        const int64_t padding = blocks * width - length;
        ggml_tensor* padded = cumulative;
        // Past the row: sums of 2, above any target (u × total < total ≤ 1).
        if (padding > 0)
            padded =
                ggml_concat(context, cumulative, ggml_scale_bias(context, ggml_view_1d(context, cumulative, padding, 0), 0.0f, 2.0f), 0);
        ggml_tensor* matrix = ggml_reshape_2d(context, padded, width, blocks);
        ggml_tensor* lasts =
            ggml_cont(context, ggml_view_2d(context, matrix, 1, blocks, matrix->nb[1], static_cast<size_t>(width - 1) * matrix->nb[0]));
        ggml_tensor* aboveBlocks = CountAbove(context, ggml_reshape_2d(context, lasts, blocks, 1), targets);
        ggml_tensor* block = ggml_clamp_inplace(context, ggml_scale_bias_inplace(context, aboveBlocks, -1.0f, static_cast<float>(blocks)),
                                                0.0f, static_cast<float>(blocks - 1));
        ggml_tensor* rows = ggml_get_rows(context, matrix, ggml_reshape_1d(context, ggml_cast(context, block, GGML_TYPE_I32), count));
        ggml_tensor* above = CountAbove(context, rows, targets);
        index = ggml_add(context, ggml_scale_bias_inplace(context, above, -1.0f, static_cast<float>(width)),
                         ggml_scale(context, block, static_cast<float>(width)));
    }
    index = ggml_clamp_inplace(context, index, 0.0f, static_cast<float>(length - 1));
    return ggml_reshape_1d(context, ggml_cast(context, index, GGML_TYPE_I32), count);
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

/** `probabilities` ([n], ids 0..n−1) at each of `wanted` ([k], F32; −1: 0): [k]. */
inline ggml_tensor* GatherDirect(ggml_context* context, ggml_tensor* probabilities, ggml_tensor* wanted) {
    const int64_t length = probabilities->ne[0];
    ggml_tensor* index = ggml_cast(context, ggml_clamp(context, wanted, 0.0f, static_cast<float>(length - 1)), GGML_TYPE_I32);
    ggml_tensor* given = ggml_step(context, ggml_scale_bias(context, wanted, 1.0f, 0.5f));
    return ggml_mul(context, At(context, probabilities, index), given);
}

} // namespace residual

/**
 * The graph of one residual row. `logits`: the chain's row ([n]); `candidates`: the ids it holds, in its
 * order (I32 [n]), or null (ids 0..n−1); `uniforms`: Scored 1, Candidates K, Gather none (null);
 * `ids`: Candidates the drafted id ([1]), Gather and Scored the K ids (Scored with K = 0: null; all F32 inputs).
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
    // Without candidates the ids index the row: read them directly; else find them among the candidates.
    auto gather = [&](ggml_tensor* wanted) {
        return candidates != nullptr ? residual::Gather(context, probabilities, rowIds(), wanted)
                                     : residual::GatherDirect(context, probabilities, wanted);
    };
    if (kind == ResidualKind::Gather) {
        ggml_tensor* gathered = gather(ids);
        return {mapped(ggml_argmax(context, logits)), gathered, nullptr};
    }
    ggml_tensor* draftedProbability = kind == ResidualKind::Candidates ? gather(ids) : nullptr;
    ggml_tensor* indices = residual::DrawIndices(context, probabilities, uniforms);
    ggml_tensor* drawnProbabilities = residual::At(context, probabilities, indices);
    ggml_tensor* drawn = mapped(indices);
    ggml_tensor* first = ggml_view_1d(context, drawn, 1, 0);
    if (kind == ResidualKind::Scored)
        return {first, ids == nullptr ? drawnProbabilities : ggml_concat(context, drawnProbabilities, gather(ids), 0), nullptr};
    return {first, ggml_concat(context, draftedProbability, drawnProbabilities, 0), drawn};
}

/**
 * Where a graph's residual rows leave their outputs: views into one tensor per type for the whole
 * graph (one row each), rather than small tensors of their own. llama.cpp keeps every row's outputs
 * to the graph's end; kept apart between the rows' freed temporaries, they split the graph
 * allocator's free memory into more blocks than it tracks (256) when a reservation builds a chain for
 * every output row a batch may have.
 */
class ResidualOutputPool {
public:
    /** Rows one graph builds for the chain at most (llama.cpp's n_outputs_max_per_seq); 0: no pool. */
    void SetRows(uint32_t rows) { capacity = rows; }

    /** Before each graph is built. */
    void Reset() {
        values = nullptr;
        ids = nullptr;
        row = 0;
    }

    /** `outputs` copied into this graph's pool (as they are where it is full or their sizes differ). */
    ResidualOutputs Place(ggml_context* context, const ResidualOutputs& outputs) {
        const int64_t valueCount = ggml_nelements(outputs.values);
        ggml_tensor* idSource = outputs.ids != nullptr ? outputs.ids : outputs.sampled;
        const int64_t idCount = ggml_nelements(idSource);
        if (values == nullptr && capacity > 0) {
            // Results of ops (a leaf without data has no backend to live on), overwritten row by row.
            values = ggml_arange(context, 0.0f, static_cast<float>(capacity * valueCount), 1.0f);
            ids = ggml_cast(context, ggml_arange(context, 0.0f, static_cast<float>(capacity * idCount), 1.0f), GGML_TYPE_I32);
            valueStride = valueCount;
            idStride = idCount;
        }
        if (values == nullptr || row >= capacity || valueCount != valueStride || idCount != idStride) return outputs;
        ggml_tensor* placedValues =
            ggml_cpy(context, outputs.values, ggml_view_1d(context, values, valueCount, row * valueCount * sizeof(float)));
        ggml_tensor* placedIds = ggml_cpy(context, idSource, ggml_view_1d(context, ids, idCount, row * idCount * sizeof(int32_t)));
        row++;
        // Candidates: the id is the first draw; the others: the id alone.
        return {ggml_view_1d(context, placedIds, 1, 0), placedValues, outputs.ids != nullptr ? placedIds : nullptr};
    }

private:
    uint32_t capacity = 0;
    ggml_tensor* values = nullptr;
    ggml_tensor* ids = nullptr;
    int64_t valueStride = 0;
    int64_t idStride = 0;
    uint32_t row = 0;
};

/**
 * The same reads on the host, from a sampler row (`row`, its first `covered` ids, normalised) copied
 * whole, in the destination's layout (Scored [id, q(id), q(id_1)..q(id_K)]: from `out` + 1; Candidates [p(drafted),
 * y_1..y_K, p(y_1)..p(y_K)]; Gather [q(id_1)..q(id_K)]); returns the id (−1: no id has a positive
 * probability).
 */
inline int32_t ResidualOnHost(ResidualKind kind, const double* row, size_t covered, const double* uniforms, const int32_t* ids,
                              size_t width, double* out) {
    auto draw = [&](double uniform) { return chooseIndex(row, covered, uniform); };
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
        for (size_t index = 0; index < width; index++) out[1 + index] = at(ids[index]);
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
