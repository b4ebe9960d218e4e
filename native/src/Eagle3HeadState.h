// Eagle3HeadState: llama.cpp's draft-eagle3 (common/speculative.cpp) for one target sequence. The
// head's decoder reads, at position P, the pair (token[P+1], g[P]), g being the encoder's projection
// of the target's hidden states at P (llama_encode on the captured rows). A draft writes the pairs of
// the positions the target decoded since the last one, the last pair with the pending token (the
// deferred boundary), then one position per drafted token with the previous position's pre-norm
// output as g. What those drafted positions wrote is dropped at the next draft, and every pair from
// the first position the target decoded again, or whose token changed, is written anew.
#pragma once

#include <llama.h>

#include "Eagle3Head.h"
#include "runtime.h"

#include <llama-ext.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace specgate {

/**
 * A head's drafting state for one target sequence, and the llama_context it decodes on: its own (an
 * Eagle3Head), or one an Eagle3HeadGroup shares among the target's slots, one head sequence (`slot`) each.
 */
struct Eagle3HeadState {
    std::shared_ptr<ModelHandle> model;
    TargetLink target;
    /** The target's sequence whose captured rows the head reads (a group's slot is given another from the main thread). */
    std::atomic<llama_seq_id> sequence{0};
    /** The head's own sequence id in `context`. */
    llama_seq_id slot = 0;
    llama_context* context = nullptr;
    /** Whether this state frees `context` (a group's slots share their group's). */
    bool ownsContext = true;
    /** Set from the main thread when the slot passes to another request: the next Sync drops what the head holds. */
    std::atomic<bool> reset{false};
    /** Batch index of the last output row (-1: the batch's last), which LastLogits reads. */
    int32_t row = -1;
    std::mutex mutex; // one call at a time
    std::atomic<bool> disposed{false};
    int32_t width = 0;      // the head's hidden size (g rows, pre-norm rows)
    int32_t vocabulary = 0; // the head's logit rows
    int32_t contextSize = 0;
    int threads = 1;
    int activeThreads = 1;
    /** The head's KV cache holds the target's pairs at [0, committed). */
    int32_t committed = 0;
    /** The tokens those pairs read: the target's at positions [0, committed], the last one the boundary's. */
    std::vector<llama_token> known;
    /** Where the next drafted token goes; -1: no draft is open. */
    int32_t next = -1;
    /** The pre-norm output of the last position decoded: the g of the next drafted token. */
    std::vector<float> prenorm;
    /** Floats llama.cpp copied out of the head's graphs (g rows of the encoder; logit and pre-norm rows of outputs). */
    double copiedFloats = 0;
    // The decoder's batch, owned here (llama_batch_init allocates tokens or embeddings, not both).
    std::vector<llama_token> tokens;
    std::vector<float> embeddings;
    std::vector<llama_pos> positions;
    std::vector<int32_t> sequenceCounts;
    std::vector<llama_seq_id> sequenceIds;
    std::vector<llama_seq_id*> sequencePointers;
    std::vector<int8_t> wanted;

    Eagle3HeadState() = default;
    Eagle3HeadState(const Eagle3HeadState&) = delete;
    Eagle3HeadState& operator=(const Eagle3HeadState&) = delete;
    ~Eagle3HeadState() {
        if (context != nullptr && ownsContext) llama_free(context);
    }

    void UseThreads() {
        const int count = threadsForDecode(threads);
        if (count == activeThreads) return;
        ggml_threadpool* pool = poolFor(count);
        if (pool == nullptr) return;
        llama_attach_threadpool(context, pool, pool);
        llama_set_n_threads(context, count, count);
        activeThreads = count;
    }

    /** g rows of the target's rows (llama_encode in chunks of the ubatch, as llama.cpp's draft-eagle3). */
    bool Encode(const std::vector<float>& rows, size_t count, std::vector<float>& g, std::string& error) {
        const size_t inputFloats = target.tap->RowFloats();
        g.resize(count * static_cast<size_t>(width));
        const size_t chunk = llama_n_ubatch(context);
        for (size_t first = 0; first < count; first += chunk) {
            const int32_t size = static_cast<int32_t>(std::min(chunk, count - first));
            llama_batch batch{};
            batch.n_tokens = size;
            batch.embd = const_cast<float*>(rows.data()) + first * inputFloats;
            const uint64_t mark = logMark();
            if (llama_encode(context, batch) != 0) {
                error = "the EAGLE-3 head's encoder failed" + Details(mark);
                return false;
            }
            const float* out = llama_get_embeddings_nextn(context);
            if (out == nullptr) {
                error = "the EAGLE-3 head's encoder gave no rows";
                return false;
            }
            std::memcpy(g.data() + first * static_cast<size_t>(width), out,
                        static_cast<size_t>(size) * static_cast<size_t>(width) * sizeof(float));
            copiedFloats += static_cast<double>(size) * width;
        }
        return true;
    }

    static std::string Details(uint64_t mark) {
        const std::string details = recentErrors(mark);
        return details.empty() ? "" : " (" + details + ")";
    }

    void ClearBatch() {
        tokens.clear();
        embeddings.clear();
        positions.clear();
        wanted.clear();
        sequenceIds.clear();
    }

    void Add(llama_token token, const float* g, llama_pos position, bool output) { Add(token, g, position, output, slot); }

    /** Adds a pair of head sequence `id` (a group's batch spans several). */
    void Add(llama_token token, const float* g, llama_pos position, bool output, llama_seq_id id) {
        tokens.push_back(token);
        sequenceIds.push_back(id);
        embeddings.insert(embeddings.end(), g, g + width);
        positions.push_back(position);
        wanted.push_back(output ? 1 : 0);
    }

    /** Pairs that decode in one batch with the boundary pair, each an output (their logit rows are copied too). */
    static constexpr size_t outputsWithBoundary = 8;

    /** Decodes the batch; with `output` (every token an output), its last token's row is kept (logits and pre-norm). */
    bool Decode(std::string& error, bool output) {
        const size_t count = tokens.size();
        sequenceCounts.assign(count, 1);
        sequencePointers.resize(count);
        for (size_t index = 0; index < count; index++) sequencePointers[index] = &sequenceIds[index];
        llama_batch batch{};
        batch.n_tokens = static_cast<int32_t>(count);
        batch.token = tokens.data();
        batch.embd = embeddings.data();
        batch.pos = positions.data();
        batch.n_seq_id = sequenceCounts.data();
        batch.seq_id = sequencePointers.data();
        batch.logits = wanted.data();
        const uint64_t mark = logMark();
        const int32_t status = llama_decode(context, batch);
        if (status != 0) {
            error = (status == 1 ? std::string("the EAGLE-3 head's KV cache is full")
                                 : "the EAGLE-3 head's decode failed with status " + std::to_string(status)) +
                    Details(mark);
            return false;
        }
        if (!output) return true;
        copiedFloats += static_cast<double>(count) * (vocabulary + width);
        const float* last = llama_get_embeddings_nextn_ith(context, static_cast<int32_t>(count) - 1);
        if (last == nullptr) {
            error = "the EAGLE-3 head gave no pre-norm row";
            return false;
        }
        prenorm.assign(last, last + width);
        this->row = -1;
        return true;
    }

    /** The last output's logits (vocabulary floats), or null with `error` set. */
    const float* LastLogits(std::string& error) {
        const float* logits = llama_get_logits_ith(context, row);
        if (logits == nullptr) error = "the EAGLE-3 head gave no logits";
        return logits;
    }

    /** The last output's logits: copied (`logits` non-null) or reduced to their first maximum. */
    bool Row(double* logits, int32_t& argmax, std::string& error) {
        const float* values = LastLogits(error);
        if (values == nullptr) return false;
        if (logits != nullptr) {
            for (int32_t token = 0; token < vocabulary; token++) logits[token] = values[token];
            return true;
        }
        int32_t best = 0;
        for (int32_t token = 1; token < vocabulary; token++)
            if (values[token] > values[best]) best = token;
        argmax = best;
        return true;
    }

    /** The first position where `history` and the tokens the committed pairs read differ. */
    int32_t Agreed(const std::vector<llama_token>& history) const {
        const size_t limit = std::min(known.size(), history.size());
        size_t position = 0;
        while (position < limit && known[position] == history[position]) position++;
        return static_cast<int32_t>(position);
    }

    /**
     * The pairs a catch-up decodes: pair i reads tokens[i] at positions[i] with g row i, the encoder's
     * projection of the target's row i (`rows`, until encoded). The first `early` decode without
     * outputs before the rest (a long catch-up); the last is the boundary.
     */
    struct Catchup {
        std::vector<float> rows;
        std::vector<float> g;
        std::vector<llama_token> tokens;
        std::vector<llama_pos> positions;
        size_t early = 0;
    };

    /**
     * Readies the head to catch up with a target holding history[0, length) with history[length] the
     * token after them (`length` = history.size() − 1): the pair at P reads g[P] and token P + 1, and
     * pairs from the first position the target decoded again, or whose next token changed, are written
     * anew (after a verification: the accepted tokens and the boundary), so what the head held from
     * there on is dropped. False: the tap lacks rows the head needs, or holds another history's (the
     * target's cells came from a restored state): no draft this time. The target's rows are left for
     * Encode, which turns them into the pairs' g rows.
     */
    bool Prepare(const std::vector<llama_token>& history, Catchup& catchup) {
        next = -1;
        row = -1;
        llama_memory_t memory = llama_get_memory(context);
        if (reset.exchange(false)) {
            llama_memory_seq_rm(memory, slot, -1, -1);
            committed = 0;
            known.clear();
        }
        const auto length = static_cast<int32_t>(history.size()) - 1;
        LayerTap& tap = *target.tap;
        const int32_t rewritten = tap.Rewritten(sequence);
        const int32_t from = std::max(0, std::min({committed, rewritten, Agreed(history) - 1, length - 1}));
        LayerTap::Span span;
        int32_t ignored = 0;
        const bool present = length > 0 && tap.Read(sequence, from, length, span, ignored) &&
                             std::equal(span.tokens.begin(), span.tokens.end(), history.begin() + from);
        if (!present) {
            llama_memory_seq_rm(memory, slot, -1, -1);
            committed = 0;
            known.clear();
            return false;
        }
        const size_t count = static_cast<size_t>(length - from);
        catchup.rows = std::move(span.rows);
        llama_memory_seq_rm(memory, slot, from, -1);
        committed = from;
        known.resize(static_cast<size_t>(from));
        catchup.tokens.clear();
        catchup.positions.clear();
        for (size_t index = 0; index + 1 < count; index++) {
            catchup.tokens.push_back(span.tokens[index + 1]);
            catchup.positions.push_back(from + static_cast<llama_pos>(index));
        }
        catchup.tokens.push_back(history.back());
        catchup.positions.push_back(length - 1);
        // The head's graph keeps every token's row and llama.cpp copies out the first rows of a batch as
        // its outputs (positions may not decrease within a batch, so the boundary cannot lead it): its
        // row is read from a batch whose every token is an output, a few pairs (after a verification)
        // decoding with it, a long catch-up (a prompt) before it.
        catchup.early = count <= outputsWithBoundary ? 0 : count - 1;
        return true;
    }

    /** Marks the catch-up with `history` decoded: the next drafted token goes after it. */
    void Commit(const std::vector<llama_token>& history) {
        committed = static_cast<int32_t>(history.size()) - 1;
        known = history;
        next = committed;
    }

    /** Prepare, then the catch-up's one or two decodes: the head's last output is the first draft position's row. */
    bool Sync(const std::vector<llama_token>& history, std::string& error) {
        Catchup catchup;
        if (!Prepare(history, catchup)) return false;
        if (!Encode(catchup.rows, catchup.tokens.size(), catchup.g, error)) return false;
        const auto pair = [&](size_t index, bool output) {
            Add(catchup.tokens[index], catchup.g.data() + index * static_cast<size_t>(width), catchup.positions[index], output);
        };
        ClearBatch();
        for (size_t index = 0; index < catchup.early; index++) pair(index, false);
        if (catchup.early > 0) {
            if (!Decode(error, false)) return false;
            ClearBatch();
        }
        for (size_t index = catchup.early; index < catchup.tokens.size(); index++) pair(index, true);
        if (!Decode(error, true)) return false;
        Commit(history);
        return true;
    }

    /** Decodes a drafted token at the next position, its g the previous position's pre-norm output. */
    bool Step(llama_token token, std::string& error) {
        ClearBatch();
        Add(token, prenorm.data(), next, true);
        if (!Decode(error, true)) {
            next = -1;
            return false;
        }
        next++;
        return true;
    }
};

} // namespace specgate
