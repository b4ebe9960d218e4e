// DeviceSelection: token ids picked inside the decode graph, on the device that computed the logits.
#pragma once

#include <llama.h>

#include "DeviceDraw.h"
#include "samplerRow.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace specgate {

/**
 * llama.cpp's backend sampling, used for the selections that need no state on the device: an argmax
 * chain, or a sampler chain (temperature, top-k, top-p, min-p, then an inverse-CDF draw from a uniform
 * the caller gives per row) per sequence, attached while every row the sequence asks of a decode is
 * such an id. The selection then runs in the graph and 4 bytes per row leave the device instead of the
 * vocabulary's logits (DeviceDraw ends every chain and leaves llama.cpp nothing else to copy). llama.cpp
 * copies a ubatch's logit rows whenever one of its rows belongs to a sequence without a sampler, so a
 * sequence that asks for logits or sampler rows has its sampler detached first (its rows stay exact).
 *
 * Ties: ggml's argmax resolves an exact tie of the largest logit by its own rule (the last id on the
 * CPU, the first one a thread reduction meets on a GPU), not the lowest id as the host-side argmax
 * does; ggml's top-k keeps exactly k ids where the host keeps every id tied with the k-th, and top-p
 * and min-p drop an id exactly at their threshold. Draws follow the host's inverse-CDF rule in float32,
 * over the candidates in the order top-k and top-p sort them (id order without them), so a uniform can
 * pick a different (equally likely) token than on the host. Attaching or detaching a sampler makes
 * llama.cpp reserve its graphs again on the next decode, so a sequence keeps its sampler while it
 * decodes no rows. A chain is initialised for the backend when attached and cannot be attached twice:
 * each attach takes a new one, and a detached chain is freed once a decode has run after it (that
 * decode's reservation drops the graphs that used it).
 *
 * The Vulkan build keeps one chain per sequence instead (fixedChains): under Mesa's llvmpipe, llama.cpp
 * reserving its graphs again after a context has decoded (a new ggml_backend_sched and compute buffers,
 * which llama_set_sampler asks for, as llama_set_causal_attn does) crashes the driver's queue thread or
 * corrupts the heap, with llama.cpp's own greedy sampler or no sampler at all. So there an argmax chain is
 * given for every sequence when the context is made (llama_context_params.samplers, FixedChains: llama.cpp
 * reserves once, with them) and stays until the context is freed; a
 * sequence that asks for rows has its chain keep them (DeviceDraw::KeepRow, read with
 * llama_get_sampled_logits_ith), and draws run on the host from those rows. A kept row changes the graph
 * without changing what llama.cpp compares to reuse one, so such a context is made without graph reuse.
 *
 * Used with the context's lock held; llama_free of the context must come before this is destroyed.
 */
class DeviceSelection {
public:
    /** Chains attached once, before the first decode, for the context's life (the Vulkan build; see above). */
    static constexpr bool fixedChains = std::string_view(SPECGATE_BUILD_NAME) == "vulkan";

    /**
     * Most rows of one sequence one decode of a context may select on the device (llama.cpp's
     * n_outputs_max_per_seq): with fixed chains every row of a sequence goes through its chain.
     */
    static uint32_t OutputsPerSequence(uint32_t batchSize, bool enabled) {
        return fixedChains && enabled ? batchSize : std::min(batchSize, maxRowsPerSequence);
    }

    /**
     * Held while a context that will select with fixed chains is made: llama.cpp reads
     * LLAMA_GRAPH_REUSE_DISABLE when it makes a context; the variable's value is restored after.
     */
    class GraphReuseOff {
    public:
        explicit GraphReuseOff(bool enabled) : active(fixedChains && enabled) {
            if (!active) return;
            const char* value = std::getenv(variable);
            hadValue = value != nullptr;
            if (hadValue) previous = value;
            setenv(variable, "1", 1);
        }
        ~GraphReuseOff() {
            if (!active) return;
            if (hadValue) {
                setenv(variable, previous.c_str(), 1);
            } else {
                unsetenv(variable);
            }
        }
        GraphReuseOff(const GraphReuseOff&) = delete;
        GraphReuseOff& operator=(const GraphReuseOff&) = delete;

    private:
        static constexpr const char* variable = "LLAMA_GRAPH_REUSE_DISABLE";
        bool active;
        bool hadValue = false;
        std::string previous;
    };

    /** Most rows of one sequence a decode selects on the device (more: that sequence's rows are copied whole). */
    static constexpr uint32_t maxRowsPerSequence = 512;

    /** What a sequence asks of one decode. */
    enum class Want : uint8_t { Nothing = 0, Argmax = 1, Rows = 2, Draw = 3, Verify = 4, Scored = 5, Candidates = 6, Gather = 7 };

    /** Whether `want` runs a sampler chain (every want but Nothing, Argmax and Rows). */
    static bool Sampled(Want want) { return want != Want::Nothing && want != Want::Argmax && want != Want::Rows; }

    struct SequenceWant {
        Want want = Want::Nothing;
        /**
         * For Draw and Verify: the sampler settings (every row of the sequence the same) and a uniform per row, in batch
         * order; for Verify also the drafted id per row (−1: none).
         */
        Sampling sampling;
        std::vector<double> uniforms;
        std::vector<int32_t> drafted;
        /** Candidates: uniforms per row; Gather: ids per row (DeviceResidual.h). */
        uint32_t width = 1;
    };

    DeviceSelection() = default;
    DeviceSelection(const DeviceSelection&) = delete;
    DeviceSelection& operator=(const DeviceSelection&) = delete;
    ~DeviceSelection() {
        for (Attached& entry : attached)
            if (entry.chain != nullptr) llama_sampler_free(entry.chain);
        ReleaseDetached();
    }

    /**
     * `enabled`: whether ids may be selected on the device at all (off: every row crosses whole). Before
     * the context's first decode (fixed chains are attached here).
     */
    void Init(llama_context* owner, uint32_t sequences, bool enabled) {
        context = owner;
        this->enabled = enabled;
        selecting.assign(sequences, 0);
        if (!fixedChains) {
            attached.assign(sequences, Attached{});
            return;
        }
        drawsDeclined = true;
        if (attached.size() != sequences) {
            attached.assign(sequences, Attached{});
            this->enabled = false;
            return;
        }
        // The chains FixedChains made, which llama.cpp attached while it made the context; a backend that
        // could not take one turns selection off before the first decode.
        for (const Attached& entry : attached)
            if (enabled && (entry.draw == nullptr || !entry.draw->OnDevice())) Disable();
    }

    /**
     * Fixed chains: an argmax chain per sequence, for llama_context_params.samplers (before the context
     * is made: llama.cpp then reserves its graphs once, with them); none where selection is off.
     */
    std::vector<llama_sampler_seq_config> FixedChains(uint32_t sequences, bool enabled) {
        std::vector<llama_sampler_seq_config> configs;
        if (!fixedChains || !enabled) return configs;
        attached.assign(sequences, Attached{});
        for (uint32_t sequence = 0; sequence < sequences; sequence++) {
            DeviceDraw* draw = nullptr;
            llama_sampler* chain = Chain(Want::Argmax, Sampling{}, &draw, 1);
            attached[sequence] = Attached{chain, Want::Argmax, Sampling{}, draw, 1};
            configs.push_back(llama_sampler_seq_config{static_cast<llama_seq_id>(sequence), chain});
        }
        return configs;
    }

    /** Whether rows come from the chains' data (llama_get_sampled_logits_ith) rather than llama_get_logits_ith. */
    bool RowsFromChains() const { return fixedChains && enabled; }

    /** Batch index `index`'s logits, copied by llama.cpp (RowsFromChains: through its sequence's chain). */
    const float* Logits(int32_t index) const {
        return RowsFromChains() ? llama_get_sampled_logits_ith(context, index) : llama_get_logits_ith(context, index);
    }

    bool Enabled() const { return enabled; }

    /** Whether draws run on the device (false once the device declined a sampler chain: sampled rows are then copied). */
    bool Draws() const { return enabled && !drawsDeclined; }

    /** Takes every sampler off the context (before llama_free: the context must not outlive what it references). */
    void Detach() {
        if (context == nullptr) return; // never made: no chain is attached
        for (size_t sequence = 0; sequence < attached.size(); sequence++)
            if (attached[sequence].chain != nullptr) DetachSequence(static_cast<llama_seq_id>(sequence));
    }

    /** After a decode: frees the chains detached before it, which no graph of the context uses any more. */
    void ReleaseDetached() {
        for (llama_sampler* chain : detached) llama_sampler_free(chain);
        detached.clear();
    }

    /**
     * Before a decode, one entry per sequence: attaches and detaches samplers to match (a sequence that
     * wants nothing keeps its sampler) and hands each draw chain its uniforms. A backend that cannot run
     * the argmax turns selection off for this context; one that cannot run a sampler chain, draws.
     */
    void Prepare(const std::vector<SequenceWant>& wants) {
        if (!enabled) return;
        if (fixedChains) {
            PrepareFixed(wants);
            return;
        }
        for (size_t sequence = 0; sequence < wants.size() && sequence < attached.size(); sequence++) {
            const SequenceWant& want = wants[sequence];
            const llama_seq_id id = static_cast<llama_seq_id>(sequence);
            Attached& entry = attached[sequence];
            const bool sampled = Sampled(want.want);
            if (want.want == Want::Rows || (sampled && !Draws())) {
                if (entry.chain != nullptr) DetachSequence(id);
            } else if (want.want == Want::Argmax && entry.kind != Want::Argmax) {
                if (entry.chain != nullptr) DetachSequence(id);
                if (!Attach(id, Want::Argmax, Sampling{})) return;
            } else if (sampled) {
                if (entry.kind != want.want || entry.width != want.width || !SameSettings(entry.sampling, want.sampling)) {
                    if (entry.chain != nullptr) DetachSequence(id);
                    if (!Attach(id, want.want, want.sampling, want.width)) continue;
                }
                entry.draw->SetUniforms(want.uniforms);
                entry.draw->SetDrafted(want.drafted);
            }
        }
    }

    /** Whether the decode selects this sequence's rows on the device. */
    bool Selects(llama_seq_id sequence) const {
        if (!enabled || sequence < 0 || static_cast<size_t>(sequence) >= attached.size()) return false;
        return fixedChains ? selecting[static_cast<size_t>(sequence)] != 0 : attached[static_cast<size_t>(sequence)].chain != nullptr;
    }

    /**
     * Bytes llama.cpp copied out of the graph for batch index `index`, selected on the device: the id,
     * and whatever rows a chain left (none with DeviceDraw last, which this counts rather than assumes).
     */
    static double CopiedBytes(llama_context* context, int32_t index) {
        const double rows = static_cast<double>(llama_get_sampled_logits_count_ith(context, index)) +
                            static_cast<double>(llama_get_sampled_probs_count_ith(context, index));
        return sizeof(llama_token) + rows * sizeof(float) +
               static_cast<double>(llama_get_sampled_candidates_count_ith(context, index)) * sizeof(llama_token);
    }

private:
    struct Attached {
        llama_sampler* chain = nullptr; // owned here
        Want kind = Want::Nothing;
        Sampling sampling;
        DeviceDraw* draw = nullptr; // the chain's last link, owned by the chain
        uint32_t width = 1;
    };

    llama_context* context = nullptr;
    bool enabled = false;
    bool drawsDeclined = false;
    std::vector<Attached> attached;       // per sequence
    std::vector<uint8_t> selecting;       // fixed chains: per sequence, whether this decode takes its ids
    std::vector<llama_sampler*> detached; // detached since the last decode, owned here

    static bool SameSettings(const Sampling& a, const Sampling& b) {
        return a.temperature == b.temperature && a.topK == b.topK && a.topP == b.topP && a.minP == b.minP;
    }

    /** The chain for `kind`: DeviceDraw alone (argmax), or the sampler links in the host's order, then DeviceDraw. */
    llama_sampler* Chain(Want kind, const Sampling& sampling, DeviceDraw** draw, uint32_t width) const {
        llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
        if (kind != Want::Argmax) {
            llama_sampler_chain_add(chain, llama_sampler_init_temp(static_cast<float>(sampling.temperature)));
            const int32_t vocabulary = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(context)));
            if (sampling.topK > 0 && sampling.topK < vocabulary) llama_sampler_chain_add(chain, llama_sampler_init_top_k(sampling.topK));
            if (sampling.topP < 1) llama_sampler_chain_add(chain, llama_sampler_init_top_p(static_cast<float>(sampling.topP), 1));
            if (sampling.minP > 0) llama_sampler_chain_add(chain, llama_sampler_init_min_p(static_cast<float>(sampling.minP), 1));
        }
        const DeviceDraw::Mode mode = kind == Want::Argmax       ? DeviceDraw::Mode::Argmax
                                      : kind == Want::Draw       ? DeviceDraw::Mode::Draw
                                      : kind == Want::Verify     ? DeviceDraw::Mode::Verify
                                      : kind == Want::Scored     ? DeviceDraw::Mode::Scored
                                      : kind == Want::Candidates ? DeviceDraw::Mode::Candidates
                                                                 : DeviceDraw::Mode::Gather;
        llama_sampler_chain_add(chain, DeviceDraw::Create(mode, draw, width));
        return chain;
    }

    bool Attach(llama_seq_id sequence, Want kind, const Sampling& sampling, uint32_t width = 1) {
        DeviceDraw* draw = nullptr;
        llama_sampler* chain = Chain(kind, sampling, &draw, width);
        // llama.cpp attaches a chain whose links it could not all initialise for the backend (it would run the rest on
        // the host after copying rows): such a chain is taken off again.
        if (!llama_set_sampler(context, sequence, chain) || !draw->OnDevice()) {
            llama_set_sampler(context, sequence, nullptr);
            detached.push_back(chain);
            if (kind != Want::Argmax) {
                drawsDeclined = true;
            } else {
                Disable();
            }
            return false;
        }
        attached[static_cast<size_t>(sequence)] = Attached{chain, kind, sampling, draw, width};
        return true;
    }

    void DetachSequence(llama_seq_id sequence) {
        llama_set_sampler(context, sequence, nullptr);
        detached.push_back(attached[static_cast<size_t>(sequence)].chain);
        attached[static_cast<size_t>(sequence)] = Attached{};
    }

    /** Fixed chains: argmax ids for a sequence that wants them, its rows kept for any other want. */
    void PrepareFixed(const std::vector<SequenceWant>& wants) {
        for (size_t sequence = 0; sequence < wants.size() && sequence < attached.size(); sequence++) {
            const Want want = wants[sequence].want;
            selecting[sequence] = want == Want::Argmax ? 1 : 0;
            if (attached[sequence].draw != nullptr) attached[sequence].draw->KeepRow(want != Want::Argmax && want != Want::Nothing);
        }
    }

    /** The backend cannot run the sampler: every row crosses whole from now on, as without selection. */
    void Disable() {
        Detach();
        enabled = false;
    }
};

} // namespace specgate
