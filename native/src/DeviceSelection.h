// DeviceSelection: argmax ids picked inside the decode graph, on the device that computed the logits.
#pragma once

#include <llama.h>

#include <cstdint>
#include <vector>

namespace specgate {

/**
 * llama.cpp's backend sampling, used for the one selection that needs no state: a greedy sampler chain
 * per sequence, attached while every row the sequence asks of a decode is an argmax id. The argmax then
 * runs in the graph and 4 bytes per row leave the device instead of the vocabulary's logits. llama.cpp
 * copies a ubatch's logit rows whenever one of its rows belongs to a sequence without a sampler, so a
 * sequence that asks for logits or sampler rows has its sampler detached first (its rows stay exact).
 *
 * Ties: ggml's argmax resolves an exact tie of the largest logit by its own rule (the last id on the
 * CPU, the first one a thread reduction meets on a GPU), not the lowest id as the host-side argmax
 * does. Attaching or detaching a sampler makes llama.cpp reserve its graphs again on the next decode,
 * so a sequence keeps its sampler while it decodes no rows. A chain is initialised for the backend
 * when attached and cannot be attached twice: each attach takes a new one, and a detached chain is
 * freed once a decode has run after it (that decode's reservation drops the graphs that used it).
 *
 * Used with the context's lock held; llama_free of the context must come before this is destroyed.
 */
class DeviceSelection {
public:
    /** Most rows of one sequence a decode selects on the device (more: that sequence's rows are copied whole). */
    static constexpr uint32_t maxRowsPerSequence = 512;

    DeviceSelection() = default;
    DeviceSelection(const DeviceSelection&) = delete;
    DeviceSelection& operator=(const DeviceSelection&) = delete;
    ~DeviceSelection() {
        for (llama_sampler* chain : chains)
            if (chain != nullptr) llama_sampler_free(chain);
        ReleaseDetached();
    }

    /** `enabled`: whether argmax rows may be selected on the device at all (off: every row crosses whole). */
    void Init(llama_context* owner, uint32_t sequences, bool enabled) {
        context = owner;
        this->enabled = enabled;
        chains.assign(sequences, nullptr);
        attached.assign(sequences, 0);
    }

    bool Enabled() const { return enabled; }

    /** Takes every sampler off the context (before llama_free: the context must not outlive what it references). */
    void Detach() {
        for (size_t sequence = 0; sequence < attached.size(); sequence++)
            if (attached[sequence] != 0) DetachSequence(static_cast<llama_seq_id>(sequence));
    }

    /** After a decode: frees the chains detached before it, which no graph of the context uses any more. */
    void ReleaseDetached() {
        for (llama_sampler* chain : detached) llama_sampler_free(chain);
        detached.clear();
    }

    /**
     * Before a decode: `wantsArgmax[s]` is 1 when sequence s has rows in the batch and all of them are
     * argmax ids, 2 when it has a row of another kind, 0 when it has none. Attaches and detaches samplers
     * to match; a backend that cannot run the sampler turns selection off for this context.
     */
    void Prepare(const std::vector<uint8_t>& wantsArgmax) {
        if (!enabled) return;
        for (size_t sequence = 0; sequence < wantsArgmax.size() && sequence < attached.size(); sequence++) {
            if (wantsArgmax[sequence] == 1 && attached[sequence] == 0) {
                if (!Attach(static_cast<llama_seq_id>(sequence))) return;
            } else if (wantsArgmax[sequence] == 2 && attached[sequence] != 0) {
                DetachSequence(static_cast<llama_seq_id>(sequence));
            }
        }
    }

    /** Whether the decode selects this sequence's rows on the device. */
    bool Selects(llama_seq_id sequence) const {
        return enabled && sequence >= 0 && static_cast<size_t>(sequence) < attached.size() && attached[static_cast<size_t>(sequence)] != 0;
    }

private:
    llama_context* context = nullptr;
    bool enabled = false;
    std::vector<llama_sampler*> chains;   // per sequence: the attached chain, owned here
    std::vector<llama_sampler*> detached; // detached since the last decode, owned here
    std::vector<uint8_t> attached;

    bool Attach(llama_seq_id sequence) {
        llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
        llama_sampler_chain_add(chain, llama_sampler_init_greedy());
        if (!llama_set_sampler(context, sequence, chain)) {
            detached.push_back(chain);
            Disable();
            return false;
        }
        chains[static_cast<size_t>(sequence)] = chain;
        attached[static_cast<size_t>(sequence)] = 1;
        return true;
    }

    void DetachSequence(llama_seq_id sequence) {
        llama_set_sampler(context, sequence, nullptr);
        detached.push_back(chains[static_cast<size_t>(sequence)]);
        chains[static_cast<size_t>(sequence)] = nullptr;
        attached[static_cast<size_t>(sequence)] = 0;
    }

    /** The backend cannot run the sampler: every row crosses whole from now on, as without selection. */
    void Disable() {
        Detach();
        enabled = false;
    }
};

} // namespace specgate
