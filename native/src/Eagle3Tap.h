// LayerTap: the hidden states an EAGLE-3 head reads, captured from a target context's decodes.
#pragma once

#include <llama.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace specgate {

/**
 * The inputs of the target layers an EAGLE-3 head was trained on (llama.cpp's layer-input embeddings,
 * llama_set_embeddings_layer_inp), kept per sequence of one target context: for each position decoded,
 * the token and the rows of every tapped layer side by side (the head's encoder input). A decode at a
 * position drops what the sequence held from there on (a rollback then a new decode), so a sequence
 * holds one run of consecutive positions, at most the context's: a head opened later (a request that
 * reuses a cached prompt) reads them from the start. Clearing the context forgets them. A token of a
 * tree (several sequence ids) is kept in each of its sequences, and Copy follows the KV cache's copies,
 * so the sequence holds a kept branch's rows after the tree. Save and Restore follow a sequence's KV
 * state to host memory and back (saveSequence, restoreSequence), so a restored prompt has its rows.
 */
class LayerTap {
public:
    LayerTap(std::vector<int32_t> layers, int32_t width, uint32_t sequences) : layers(std::move(layers)), width(width), stores(sequences) {}

    const std::vector<int32_t>& Layers() const { return layers; }
    /** The target's hidden size: floats per layer row. */
    int32_t Width() const { return width; }
    /** Floats per position: one row of every tapped layer. */
    size_t RowFloats() const { return layers.size() * static_cast<size_t>(width); }

    /** Turns on the layer inputs the tap reads; before the context's first decode. */
    void Enable(llama_context* context) const;

    /**
     * After a decode of `batch` (the context's lock held): copies each token's rows, to every sequence
     * it belongs to. Returns the bytes llama.cpp copied out of the graph for them, per sequence (every
     * token of the batch crosses, counted to its first sequence).
     */
    std::vector<double> Capture(llama_context* context, const llama_batch& batch);

    /** Drops what a sequence holds (-1: every sequence), as its KV cells are cleared. */
    void Forget(int32_t sequence) {
        std::lock_guard<std::mutex> lock(mutex);
        for (size_t index = 0; index < stores.size(); index++)
            if (sequence < 0 || static_cast<size_t>(sequence) == index) stores[index] = Store{};
    }

    /**
     * Mirrors llama_memory_seq_cp(source, destination, from, to) (to = -1: to the end): a destination
     * whose run reaches `from` takes the source's rows from there (a token tree's kept path joining its
     * sequence); any other drops what it held from `from` on, and gets its rows from its own decodes (a
     * tree branch opened on the sequence's prefix reads none of the prefix).
     */
    void Copy(int32_t source, int32_t destination, int32_t from, int32_t to) {
        std::lock_guard<std::mutex> lock(mutex);
        const auto count = static_cast<int32_t>(stores.size());
        if (source < 0 || destination < 0 || source >= count || destination >= count || source == destination) return;
        const Store& in = stores[static_cast<size_t>(source)];
        Store& out = stores[static_cast<size_t>(destination)];
        const int32_t end = std::min(to < 0 ? INT32_MAX : to, in.End());
        const bool joins = !out.tokens.empty() && from >= out.base && from <= out.End() && from >= in.base && from < end;
        if (!joins) {
            out.Truncate(from, RowFloats());
            return;
        }
        const size_t rowFloats = RowFloats();
        for (int32_t position = from; position < end; position++) {
            const auto at = static_cast<size_t>(position - in.base);
            float* row = out.Place(position, in.tokens[at], rowFloats);
            std::memcpy(row, in.rows.data() + at * rowFloats, rowFloats * sizeof(float));
        }
    }

    /** What a head reads of a sequence: positions [from, to), or false when the tap lacks any of them. */
    struct Span {
        std::vector<float> rows;
        std::vector<llama_token> tokens;
    };

    /**
     * The rows and tokens of positions [from, to) of `sequence`, and the lowest position decoded since
     * the last Read (INT32_MAX: none), which is reset.
     */
    bool Read(int32_t sequence, int32_t from, int32_t to, Span& span, int32_t& rewritten) {
        std::lock_guard<std::mutex> lock(mutex);
        if (sequence < 0 || static_cast<size_t>(sequence) >= stores.size()) return false;
        Store& store = stores[static_cast<size_t>(sequence)];
        rewritten = store.rewritten;
        store.rewritten = INT32_MAX;
        const int32_t end = store.base + static_cast<int32_t>(store.tokens.size());
        const bool present = from >= store.base && to <= end && from <= to;
        if (present) {
            const size_t first = static_cast<size_t>(from - store.base);
            const size_t count = static_cast<size_t>(to - from);
            span.tokens.assign(store.tokens.begin() + static_cast<std::ptrdiff_t>(first),
                               store.tokens.begin() + static_cast<std::ptrdiff_t>(first + count));
            span.rows.assign(store.rows.begin() + static_cast<std::ptrdiff_t>(first * RowFloats()),
                             store.rows.begin() + static_cast<std::ptrdiff_t>((first + count) * RowFloats()));
        }
        return present;
    }

    /**
     * The rows of `sequence` at its positions below `end` (what its KV cells hold), as a block Restore
     * reads: the layer ids, the width, the first position, the tokens and the rows.
     */
    std::vector<uint8_t> Save(int32_t sequence, int32_t end);

    /**
     * Replaces what `sequence` holds by a block of Save, as its KV cells are replaced by the state saved
     * with it. False, the sequence then holding nothing, where the block is another tap's (other layers
     * or width) or malformed.
     */
    bool Restore(int32_t sequence, const uint8_t* block, size_t bytes);

    /**
     * A state saveSequence wrote with a tap ends with the tap's block, llama.cpp's byte count (u64) and
     * savedRowsMagic (u64). Splits `data` into llama.cpp's state (`stateBytes`) and the block (`rows`,
     * null where the state has none); false where the footer's counts do not fit `size`.
     */
    static bool Split(const uint8_t* data, size_t size, size_t& stateBytes, const uint8_t*& rows, size_t& rowBytes);

    /** Appends the footer Split reads to a state of `stateBytes` followed by its block. */
    static void AppendFooter(uint8_t* end, uint64_t stateBytes);

    static constexpr uint64_t savedRowsMagic = 0x5357524c33454753; // "SGE3LRWS"
    static constexpr size_t footerBytes = 16;

    /** The lowest position decoded since the last Read, without resetting it (INT32_MAX: none). */
    int32_t Rewritten(int32_t sequence) {
        std::lock_guard<std::mutex> lock(mutex);
        if (sequence < 0 || static_cast<size_t>(sequence) >= stores.size()) return INT32_MAX;
        return stores[static_cast<size_t>(sequence)].rewritten;
    }

private:
    /** One sequence's run of positions [base, base + tokens.size()). */
    struct Store {
        int32_t base = 0;
        std::vector<llama_token> tokens;
        std::vector<float> rows;
        int32_t rewritten = INT32_MAX;

        int32_t End() const { return base + static_cast<int32_t>(tokens.size()); }

        /** Drops the positions from `position` on. */
        void Truncate(int32_t position, size_t rowFloats) {
            if (position >= End()) return;
            const auto kept = static_cast<size_t>(std::max(0, position - base));
            tokens.resize(kept);
            rows.resize(kept * rowFloats);
            rewritten = std::min(rewritten, std::max(position, base));
        }

        /** The row for `position`, after dropping what the store held from there on (a gap starts a new run). */
        float* Place(int32_t position, llama_token token, size_t rowFloats) {
            const int32_t end = base + static_cast<int32_t>(tokens.size());
            if (position < base || position > end) {
                base = position;
                tokens.clear();
                rows.clear();
            } else {
                tokens.resize(static_cast<size_t>(position - base));
                rows.resize(tokens.size() * rowFloats);
            }
            rewritten = std::min(rewritten, position);
            tokens.push_back(token);
            rows.resize(tokens.size() * rowFloats);
            return rows.data() + (tokens.size() - 1) * rowFloats;
        }
    };

    std::vector<int32_t> layers;
    int32_t width;
    std::mutex mutex;
    std::vector<Store> stores;
};

} // namespace specgate
