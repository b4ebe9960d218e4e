// specgate's native backend: the hot path of decoding (llama_decode on a multi-sequence batch, logit
// rows written into caller-owned typed arrays, sampler rows, argmax, KV-cache removal) in a small
// Node-API addon built against the llama.cpp release bundled in node-llama-cpp. Everything else —
// tokenizer identity, policies, the speculative loop — stays in TypeScript (src/backend/NativeBackend.ts).
// This file: NativeContext (a llama_context and its decodes) and the module's exports.
//
// Threading: decodes run on libuv's worker pool (Napi::AsyncWorker) and are serialised by one
// process-wide mutex, computeMutex, because on a CPU two graphs computed at once only compete for the
// same cores, and contexts of one thread count share a ggml threadpool (ggml built without OpenMP:
// threads are created once and not per call, and a decode may start on any worker thread), which
// computes one graph at a time. Each context has its own mutex: a decode and a KV-cache edit of it never
// overlap. The main (JS) thread never waits for a decode: decodeNow try-locks both (null when busy),
// removeTokens, clear, saveSequence and restoreSequence try-lock the context's (an Error when busy),
// and creating a context looks its threadpool up under a lock of its own (runtime.cpp).
//
// Trust: every argument from JS is checked (validate.h) before it reaches llama.cpp, whose asserts
// abort the process; every C++ exception becomes a JS error. A context holds its model's handle and
// each decode in flight holds its context's state, so nothing is freed under a decode whatever order
// JS disposes in. A worker thread never touches JS memory: JS may transfer (detach) or shrink an
// ArrayBuffer at any time after decode() returns, so a decode's rows go to memory it owns and are
// copied into the destination typed arrays on the main thread, each checked again first.
#include <napi.h>

#include <llama.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>

#include "DecodeWorker.h"
#include "DeviceSelection.h"
#include "Eagle3Head.h"
#include "chooseIndex.h"
#include "NativeGrammar.h"
#include "NativeModel.h"
#include "runtime.h"
#include "samplerRow.h"
#include "validate.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace specgate {
namespace {

/**
 * Distribution: logit rows, then sampler rows; Probabilities: sampler rows only (for callers that never read the logits);
 * Drawn: ids drawn from the sampler rows with the caller's uniforms (on the device where it can: DeviceSelection);
 * Verified: per row, the probability of a drafted id and a draw from the row without it (DeviceDraw's Verify);
 * Scored, Candidates, Gathered: a draft model's verification reads (DeviceResidual.h's Scored, Candidates, Gather).
 */
enum class OutputMode {
    None = 0,
    Logits = 1,
    Argmax = 2,
    Distribution = 3,
    Probabilities = 4,
    Drawn = 5,
    Verified = 6,
    Scored = 7,
    Candidates = 8,
    Gathered = 9
};

bool isResidual(OutputMode mode) { return mode == OutputMode::Scored || mode == OutputMode::Candidates || mode == OutputMode::Gathered; }

/** Modes whose rows come from a sampler chain's id (on the device where the context selects there). */
bool drawsIds(OutputMode mode) { return mode == OutputMode::Drawn || mode == OutputMode::Verified || isResidual(mode); }

ResidualKind residualKind(OutputMode mode) {
    return mode == OutputMode::Scored       ? ResidualKind::Scored
           : mode == OutputMode::Candidates ? ResidualKind::Candidates
                                            : ResidualKind::Gather;
}

/** Uniforms and drafted ids per output of a mode with `width` K (Candidates: K uniforms; Gathered: K ids, no uniform; Scored: K ids). */
size_t uniformsPerOutput(OutputMode mode, size_t width) {
    return mode == OutputMode::Gathered ? 0 : mode == OutputMode::Candidates ? width : drawsIds(mode) ? 1 : 0;
}
size_t idsPerOutput(OutputMode mode, size_t width) {
    return mode == OutputMode::Gathered || mode == OutputMode::Scored       ? width
           : mode == OutputMode::Verified || mode == OutputMode::Candidates ? 1
                                                                            : 0;
}

bool wantsSamplerRows(OutputMode mode) { return mode == OutputMode::Distribution || mode == OutputMode::Probabilities; }

/** Run's result when it was told not to wait and another decode holds the context or the CPU. */
constexpr int busy = -100;
/** Positions beyond any context; keeps llama.cpp's position arithmetic (X + 1, differences) far from overflow. */
constexpr int64_t maxPosition = int64_t{1} << 30;

/** Where one submitter's rows go: its batch indexes, what it wants of each, and its destination. */
struct OutputGroup {
    std::vector<int32_t> outputs;
    OutputMode mode = OutputMode::None;
    Sampling sampling;
    /** Drawn, Verified: a uniform in [0, 1) per output, drawn by the caller's seeded generator. */
    std::vector<double> uniforms;
    /** Verified, Candidates: the drafted id per output (−1: none, a plain draw); Gathered: `width` ids per output. */
    std::vector<int32_t> drafted;
    /** Candidates: draws per output; Gathered and Scored: ids per output. */
    size_t width = 1;
    /** The JS typed array the rows go to. */
    Napi::TypedArray destinationArray;
    /**
     * Where the rows are written: the typed array's memory for decodeNow (no JS runs before they are);
     * for decode, `staging`, memory the decode owns, copied into the typed array on the main thread
     * afterwards (JS may detach or shrink the typed array's buffer while the worker runs).
     */
    void* destination = nullptr;
    /** The rows' size: elements and bytes of the destination they fill. */
    size_t elements = 0;
    size_t bytes = 0;
    napi_typedarray_type type = napi_int8_array;
    bool wideDestination = false; // a Float64Array: logits are widened to double by the writer
    std::unique_ptr<double[]> staging;
};

/** Doubles per output of a residual group: Scored [id, q(id), q at its K ids], Candidates and Gathered their values (DeviceResidual.h). */
size_t ResidualStride(const OutputGroup& group) {
    const ResidualKind kind = residualKind(group.mode);
    return kind == ResidualKind::Scored ? 2 + group.width : kind == ResidualKind::Candidates ? 1 + 2 * group.width : group.width;
}

/** A decode request, copied out of its JS arguments and checked (NativeContext::ParseRequest). */
struct Request {
    std::vector<llama_token> tokens;
    std::vector<llama_seq_id> sequences;
    std::vector<llama_pos> positions;
    std::vector<OutputGroup> groups;
    /** (sequence, from) pairs: positions from `from` on are dropped from the KV cache before the decode. */
    std::vector<int32_t> removals;
    /**
     * (batch index, sequence) pairs: more sequences the token at that index belongs to (a token tree's
     * shared nodes), after its own `sequences` entry, which llama.cpp's attention mask reads.
     */
    std::vector<int32_t> shared;
};

/**
 * A llama_context and what its decodes reuse. Shared by its NativeContext and by the decodes in flight,
 * and freed with the last of them: disposing of a context while a worker decodes in it frees it after
 * that decode. It holds its model's handle, so the model is freed after it.
 */
struct ContextState {
    std::shared_ptr<ModelHandle> model;
    llama_context* context = nullptr;
    std::mutex mutex;                  // a decode and a KV-cache edit of this context never overlap
    std::atomic<bool> disposed{false}; // set by dispose: decodes that have not started are refused
    llama_batch batch{};
    int32_t batchCapacity = 0;
    int32_t vocabularySize = 0;
    uint32_t sequenceCount = 1;
    /** llama.cpp's KV streams: one per sequence, or one for all (unified); a saved sequence state lists them all. */
    uint32_t streams = 1;
    /**
     * The model's KV cache is llama.cpp's plain one (no recurrent or sliding-window part, no cell
     * extension): restoreSequence can check a state's cells and move it between stream counts.
     */
    bool plainCells = false;
    uint32_t batchSize = 1;        // llama.cpp's n_batch: most tokens in one llama_decode (it asserts on more)
    int threads = 1;               // requested
    int activeThreads = 1;         // what the last decode used (threadsForDecode; guarded by mutex)
    bool adaptiveThreads = true;   // fewer threads while other processes keep cores busy
    std::vector<double> scratch;   // top-k / top-p sorting, reused (guarded by mutex)
    std::vector<double> drawRow;   // a Drawn row's sampler row when drawn on the host, reused (guarded by mutex)
    DeviceSelection selection;     // argmax rows picked in the graph (guarded by mutex)
    std::shared_ptr<LayerTap> tap; // captureLayers: the layer inputs an EAGLE-3 head reads (Eagle3Tap.h)
    /** Per batch index of the decode running: its argmax id was picked on the device (guarded by mutex). */
    std::vector<uint8_t> selectedRows;
    /** Whether the decode running copies its logit rows out of the graph (guarded by mutex). */
    bool rowsCopied = true;

    ContextState() = default;
    ContextState(const ContextState&) = delete;
    ContextState& operator=(const ContextState&) = delete;
    ~ContextState() {
        if (batchCapacity > 0) llama_batch_free(batch);
        selection.Detach();
        if (context != nullptr) llama_free(context);
    }

    /**
     * Decodes the batch, then copies or reduces each group's rows; on a worker thread (`wait`: it waits
     * for this context and for the CPU) or, inline, the main one (it never waits: `busy` when either is
     * held). A group whose sampler rows cannot be computed (NaN logits) fails alone, in its result.
     */
    int Run(const Request& request, DecodeTimings& timings, std::string& error, bool wait) {
        const std::vector<llama_token>& tokens = request.tokens;
        std::unique_lock<std::mutex> contextLock(mutex, std::defer_lock);
        std::unique_lock<std::mutex> computeLock(computeMutex, std::defer_lock);
        if (wait) {
            contextLock.lock();
            computeLock.lock();
        } else if (!contextLock.try_lock() || !computeLock.try_lock()) {
            return busy;
        }
        if (disposed) {
            error = "the context is disposed";
            return -1;
        }
        for (size_t index = 0; index + 1 < request.removals.size(); index += 2)
            llama_memory_seq_rm(llama_get_memory(context), request.removals[index], request.removals[index + 1], -1);
        const int32_t count = static_cast<int32_t>(tokens.size());
        if (batchCapacity < count) {
            if (batchCapacity > 0) llama_batch_free(batch);
            batchCapacity = 0;
            batch = llama_batch_init(count, 0, static_cast<int32_t>(sequenceCount));
            batchCapacity = count;
        }
        std::vector<int8_t> wanted(tokens.size(), 0);
        for (const OutputGroup& group : request.groups)
            for (int32_t index : group.outputs) wanted[static_cast<size_t>(index)] = 1;
        batch.n_tokens = count;
        for (int32_t index = 0; index < count; index++) {
            batch.token[index] = tokens[static_cast<size_t>(index)];
            batch.pos[index] = request.positions[static_cast<size_t>(index)];
            batch.n_seq_id[index] = 1;
            batch.seq_id[index][0] = request.sequences[static_cast<size_t>(index)];
            batch.logits[index] = wanted[static_cast<size_t>(index)];
        }
        for (size_t index = 0; index + 1 < request.shared.size(); index += 2) {
            const int32_t token = request.shared[index];
            batch.seq_id[token][batch.n_seq_id[token]++] = request.shared[index + 1];
        }
        PrepareSelection(request, wanted);
        UseThreads(adaptiveThreads ? threadsForDecode(threads) : threads);
        timings.threads = activeThreads;
        const uint64_t mark = logMark();
        auto start = std::chrono::steady_clock::now();
        const int32_t status = llama_decode(context, batch);
        decodeFinished();
        selection.ReleaseDetached();
        if (status != 0) {
            const std::string details = recentErrors(mark);
            error =
                status == 1 ? "llama_decode found no room in the KV cache" : "llama_decode failed with status " + std::to_string(status);
            if (!details.empty()) error += " (" + details + ")";
            return status;
        }
        llama_synchronize(context);
        timings.decodeMilliseconds = millisecondsSince(start);
        timings.groups.assign(request.groups.size(), GroupResult{});
        for (size_t index = 0; index < request.groups.size(); index++) {
            if (!WriteRows(request.groups[index], timings.groups[index], error)) return -1;
            timings.transferMilliseconds += timings.groups[index].transferMilliseconds;
            timings.samplingMilliseconds += timings.groups[index].samplingMilliseconds;
            timings.deviceToHostBytes += timings.groups[index].deviceToHostBytes;
        }
        if (tap != nullptr) CaptureLayers(request, timings);
        return 0;
    }

    /** The tapped layers' rows of every token (an EAGLE-3 head's input), their bytes counted to the groups of their sequences. */
    void CaptureLayers(const Request& request, DecodeTimings& timings) {
        const std::vector<double> bytes = tap->Capture(context, batch);
        for (size_t index = 0; index < request.groups.size(); index++) {
            std::vector<uint8_t> counted(bytes.size(), request.groups.size() == 1 ? 1 : 0);
            if (request.groups.size() == 1)
                for (double each : bytes) timings.groups[index].deviceToHostBytes += each;
            for (int32_t output : request.groups[index].outputs) {
                const auto sequence = static_cast<size_t>(request.sequences[static_cast<size_t>(output)]);
                if (counted[sequence] == 0) timings.groups[index].deviceToHostBytes += bytes[sequence];
                counted[sequence] = 1;
            }
        }
        for (double each : bytes) timings.deviceToHostBytes += each;
    }

    /**
     * Before a decode: which sequences get their ids from the graph (every row they ask of this batch is
     * an argmax id, or every one a draw with the same settings), whether llama.cpp will copy logit rows (a
     * row of some sequence without a sampler), and, per batch index, whether its id is picked on the
     * device. A token of several sequences (a tree's shared node) counts for each of them; a draw's row
     * there is copied.
     */
    void PrepareSelection(const Request& request, const std::vector<int8_t>& wanted) {
        const size_t count = request.tokens.size();
        selectedRows.assign(count, 0);
        rowsCopied = true;
        if (!selection.Enabled()) return;
        std::vector<const OutputGroup*> groupOf(count, nullptr);
        std::vector<size_t> rowOf(count, 0);
        for (const OutputGroup& group : request.groups) {
            for (size_t row = 0; row < group.outputs.size(); row++) {
                groupOf[static_cast<size_t>(group.outputs[row])] = &group;
                rowOf[static_cast<size_t>(group.outputs[row])] = row;
            }
        }
        using Want = DeviceSelection::Want;
        std::vector<DeviceSelection::SequenceWant> wants(sequenceCount);
        std::vector<const OutputGroup*> drawGroup(sequenceCount, nullptr);
        std::vector<uint32_t> rows(sequenceCount, 0);
        const uint32_t limit = std::min(llama_n_batch(context), DeviceSelection::maxRowsPerSequence);
        auto mark = [&](size_t index, int32_t sequence, bool shared) {
            DeviceSelection::SequenceWant& want = wants[static_cast<size_t>(sequence)];
            const OutputGroup* group = groupOf[index];
            const OutputMode mode = group == nullptr ? OutputMode::Logits : group->mode;
            const bool draws = drawsIds(mode) && group->sampling.temperature > 0 && !shared && group->sampling.limit == 0;
            const Want kind = mode == OutputMode::Argmax || (mode == OutputMode::Drawn && group->sampling.temperature == 0) ? Want::Argmax
                              : !draws                                                                                      ? Want::Rows
                              : mode == OutputMode::Drawn                                                                   ? Want::Draw
                              : mode == OutputMode::Verified                                                                ? Want::Verify
                              : mode == OutputMode::Scored                                                                  ? Want::Scored
                              : mode == OutputMode::Candidates ? Want::Candidates
                                                               : Want::Gather;
            const bool fits = ++rows[static_cast<size_t>(sequence)] <= limit;
            const bool sampled = DeviceSelection::Sampled(kind);
            const bool same =
                want.want == Want::Nothing || (want.want == kind && (!sampled || drawGroup[static_cast<size_t>(sequence)] == group));
            if (!fits || !same || kind == Want::Rows) {
                want.want = Want::Rows;
                return;
            }
            want.want = kind;
            if (!sampled) return;
            drawGroup[static_cast<size_t>(sequence)] = group;
            want.sampling = group->sampling;
            want.width = static_cast<uint32_t>(group->width);
            const size_t row = rowOf[index];
            const size_t uniforms = uniformsPerOutput(mode, group->width);
            const size_t ids = idsPerOutput(mode, group->width);
            want.uniforms.insert(want.uniforms.end(), group->uniforms.begin() + static_cast<std::ptrdiff_t>(row * uniforms),
                                 group->uniforms.begin() + static_cast<std::ptrdiff_t>((row + 1) * uniforms));
            if (ids == 0)
                want.drafted.push_back(-1);
            else
                want.drafted.insert(want.drafted.end(), group->drafted.begin() + static_cast<std::ptrdiff_t>(row * ids),
                                    group->drafted.begin() + static_cast<std::ptrdiff_t>((row + 1) * ids));
        };
        for (size_t index = 0; index < count; index++)
            if (wanted[index] != 0) mark(index, request.sequences[index], false);
        for (size_t index = 0; index + 1 < request.shared.size(); index += 2) {
            const size_t token = static_cast<size_t>(request.shared[index]);
            if (wanted[token] == 0) continue;
            mark(token, request.shared[index + 1], true);
            // The token's own sequence shares the row too: a draw there is copied as well.
            if (groupOf[token] != nullptr && drawsIds(groupOf[token]->mode))
                wants[static_cast<size_t>(request.sequences[token])].want = Want::Rows;
        }
        selection.Prepare(wants);
        rowsCopied = false;
        for (size_t index = 0; index < count; index++) {
            if (wanted[index] == 0) continue;
            selectedRows[index] = selection.Selects(request.sequences[index]) ? 1 : 0;
            if (selectedRows[index] == 0) rowsCopied = true;
        }
        for (size_t index = 0; index + 1 < request.shared.size(); index += 2)
            if (wanted[static_cast<size_t>(request.shared[index])] != 0 && !selection.Selects(request.shared[index + 1])) rowsCopied = true;
    }

    /**
     * A Drawn row whose logits were copied: its sampler row (processRow), then the host's inverse-CDF
     * rule (SeededChance.choose): the first id whose running sum exceeds uniform × total, else the last
     * id of positive probability.
     */
    std::string DrawOnHost(const float* logits, const OutputGroup& group, size_t row, int32_t& token,
                           double* draftedProbability = nullptr) {
        const size_t length = static_cast<size_t>(vocabularySize);
        const size_t covered = group.sampling.limit == 0 ? length : std::min(group.sampling.limit, length);
        drawRow.resize(length);
        const std::string error = processRow(logits, drawRow.data(), covered, group.sampling, scratch);
        if (!error.empty()) return error;
        // Verified: the drafted id's probability, then the draw from the row without it (the residual of q = δ at it).
        const int32_t drafted = group.mode == OutputMode::Verified ? group.drafted[row] : -1;
        if (draftedProbability != nullptr)
            *draftedProbability = drafted >= 0 && static_cast<size_t>(drafted) < covered ? drawRow[static_cast<size_t>(drafted)] : 0;
        if (drafted >= 0 && static_cast<size_t>(drafted) < covered) drawRow[static_cast<size_t>(drafted)] = 0;
        int32_t lastPositive = chooseIndex(drawRow.data(), covered, group.uniforms[row]);
        // Only the drafted id had probability (it is then always accepted): it stands in for the draw.
        if (lastPositive < 0 && drafted >= 0) lastPositive = drafted;
        if (lastPositive < 0) return "no token has a positive probability";
        token = lastPositive;
        return "";
    }

    /** A residual row selected on the device: its id and the values its chain copied, in the group's layout. */
    bool WriteResidualRow(const OutputGroup& group, size_t row, llama_token token, std::string& error) {
        const ResidualKind kind = residualKind(group.mode);
        const size_t count = ResidualValues(kind, group.width);
        const int32_t index = group.outputs[row];
        const float* values = llama_get_sampled_probs_ith(context, index);
        const bool candidates = kind == ResidualKind::Candidates;
        const llama_token* ids = candidates ? llama_get_sampled_candidates_ith(context, index) : nullptr;
        if (values == nullptr || llama_get_sampled_probs_count_ith(context, index) != count ||
            (candidates && (ids == nullptr || llama_get_sampled_candidates_count_ith(context, index) != group.width))) {
            error = "llama.cpp copied no verification values for batch index " + std::to_string(index);
            return false;
        }
        double* out = static_cast<double*>(group.destination) + row * ResidualStride(group);
        // Scored [id, q(id)]; Candidates [p(drafted), y_1..y_K, p(y_1)..p(y_K)]; Gathered the values.
        if (kind == ResidualKind::Scored) *out++ = token;
        for (size_t value = 0; value < count; value++) out[value < 1 || !candidates ? value : value + group.width] = values[value];
        for (size_t draw = 0; candidates && draw < group.width; draw++) out[1 + draw] = ids[draw];
        return true;
    }

    /** A residual row from copied logits: its sampler row, then DeviceResidual's reads on the host. */
    std::string ResidualOnHostRow(const float* logits, const OutputGroup& group, size_t row) {
        const size_t length = static_cast<size_t>(vocabularySize);
        const size_t covered = group.sampling.limit == 0 ? length : std::min(group.sampling.limit, length);
        drawRow.resize(length);
        const std::string error = processRow(logits, drawRow.data(), covered, group.sampling, scratch);
        if (!error.empty()) return error;
        const ResidualKind kind = residualKind(group.mode);
        const size_t uniforms = uniformsPerOutput(group.mode, group.width);
        const size_t ids = idsPerOutput(group.mode, group.width);
        double* out = static_cast<double*>(group.destination) + row * ResidualStride(group);
        const int32_t token = ResidualOnHost(kind, drawRow.data(), covered, group.uniforms.data() + row * uniforms,
                                             group.drafted.data() + row * ids, group.width, kind == ResidualKind::Scored ? out + 1 : out);
        if (token < 0) return "no token has a positive probability";
        if (kind == ResidualKind::Scored) out[0] = token;
        return "";
    }

    /** Computes with `count` threads from now on: that many threads' pool, and llama.cpp told so (both cheap). */
    void UseThreads(int count) {
        if (count == activeThreads) return;
        ggml_threadpool* pool = poolFor(count);
        if (pool == nullptr) return;
        llama_attach_threadpool(context, pool, pool);
        llama_set_n_threads(context, count, count);
        activeThreads = count;
    }

    /** One group's rows: logits copied or widened, argmax ids, or logits and sampler rows. False: llama.cpp kept no row. */
    bool WriteRows(const OutputGroup& group, GroupResult& result, std::string& error) {
        const std::vector<int32_t>& outputs = group.outputs;
        const OutputMode mode = group.mode;
        void* destination = group.destination;
        auto start = std::chrono::steady_clock::now();
        const size_t rowLength = static_cast<size_t>(vocabularySize);
        if (rowsCopied && !selection.RowsFromChains())
            result.deviceToHostBytes += static_cast<double>(outputs.size() * rowLength * sizeof(float));
        for (size_t row = 0; row < outputs.size(); row++) {
            if (selectedRows[static_cast<size_t>(outputs[row])] != 0) {
                result.deviceToHostBytes += DeviceSelection::CopiedBytes(context, outputs[row]);
                if (mode == OutputMode::Argmax || drawsIds(mode)) {
                    const llama_token token = llama_get_sampled_token_ith(context, outputs[row]);
                    if (token < 0 || token >= vocabularySize) {
                        error = "llama.cpp selected no token on the device for batch index " + std::to_string(outputs[row]);
                        return false;
                    }
                    if (isResidual(mode)) {
                        if (!WriteResidualRow(group, row, token, error)) return false;
                    } else if (mode == OutputMode::Verified) {
                        // Ids, then the drafted ids' probabilities (one float per row).
                        const float* probability = llama_get_sampled_probs_ith(context, outputs[row]);
                        static_cast<double*>(destination)[row] = token;
                        static_cast<double*>(destination)[outputs.size() + row] = probability != nullptr ? *probability : 0;
                    } else {
                        static_cast<int32_t*>(destination)[row] = token;
                    }
                    continue;
                }
            }
            if (!rowsCopied) {
                error = "llama.cpp copied no logits for batch index " + std::to_string(outputs[row]);
                return false;
            }
            const float* logits = selection.Logits(outputs[row]);
            if (selection.RowsFromChains()) result.deviceToHostBytes += DeviceSelection::CopiedBytes(context, outputs[row]);
            if (logits == nullptr) {
                error = "llama.cpp returned no logits for batch index " + std::to_string(outputs[row]);
                return false;
            }
            if (isResidual(mode)) {
                result.hostRows++;
                const std::string rowError = ResidualOnHostRow(logits, group, row);
                if (!rowError.empty()) {
                    result.error = "row " + std::to_string(row) + ": " + rowError;
                    break;
                }
            } else if (drawsIds(mode)) {
                result.hostRows++;
                int32_t token = 0;
                double probability = 0;
                const std::string rowError = DrawOnHost(logits, group, row, token, &probability);
                if (mode == OutputMode::Verified) {
                    static_cast<double*>(destination)[row] = token;
                    static_cast<double*>(destination)[outputs.size() + row] = probability;
                } else {
                    static_cast<int32_t*>(destination)[row] = token;
                }
                if (!rowError.empty()) {
                    result.error = "row " + std::to_string(row) + ": " + rowError;
                    break;
                }
            } else if ((mode == OutputMode::Logits && group.wideDestination) || mode == OutputMode::Distribution) {
                double* target = static_cast<double*>(destination) + row * rowLength;
                for (size_t token = 0; token < rowLength; token++) target[token] = logits[token];
            } else if (mode == OutputMode::Logits) {
                std::memcpy(static_cast<float*>(destination) + row * rowLength, logits, rowLength * sizeof(float));
            } else if (mode == OutputMode::Argmax) {
                // First maximum: the lowest id wins ties, as llama.cpp's greedy sampler.
                int32_t best = 0;
                float bestValue = logits[0];
                for (size_t token = 1; token < rowLength; token++) {
                    if (logits[token] > bestValue) {
                        bestValue = logits[token];
                        best = static_cast<int32_t>(token);
                    }
                }
                static_cast<int32_t*>(destination)[row] = best;
            }
        }
        result.transferMilliseconds = millisecondsSince(start);

        start = std::chrono::steady_clock::now();
        if (wantsSamplerRows(mode)) {
            // Distribution: outputs × vocabulary logits, then outputs × vocabulary sampler rows; Probabilities: the sampler rows alone.
            double* probabilities = static_cast<double*>(destination) + (mode == OutputMode::Distribution ? outputs.size() * rowLength : 0);
            const size_t covered = group.sampling.limit == 0 ? rowLength : std::min(group.sampling.limit, rowLength);
            for (size_t row = 0; row < outputs.size(); row++) {
                double* target = probabilities + row * rowLength;
                const std::string rowError = processRow(selection.Logits(outputs[row]), target, covered, group.sampling, scratch);
                std::fill(target + covered, target + rowLength, 0.0);
                if (!rowError.empty()) {
                    result.error = "row " + std::to_string(row) + ": " + rowError;
                    break;
                }
            }
        }
        result.samplingMilliseconds = millisecondsSince(start);
        return true;
    }
};

class NativeContext : public Napi::ObjectWrap<NativeContext> {
public:
    static constexpr napi_type_tag typeTag{0x3d5e7f9102a4c6e8, 0x1b2c3d4e5f607182};
    static constexpr const char* className = "NativeContext";

    static Napi::Function Define(Napi::Env env) {
        return DefineClass(env, className,
                           {
                               taggedMethod<NativeContext, &NativeContext::Decode>("decode"),
                               taggedMethod<NativeContext, &NativeContext::DecodeNow>("decodeNow"),
                               taggedMethod<NativeContext, &NativeContext::RemoveTokens>("removeTokens"),
                               taggedMethod<NativeContext, &NativeContext::CopyTokens>("copyTokens"),
                               taggedMethod<NativeContext, &NativeContext::Clear>("clear"),
                               taggedMethod<NativeContext, &NativeContext::SaveSequence>("saveSequence"),
                               taggedMethod<NativeContext, &NativeContext::RestoreSequence>("restoreSequence"),
                               taggedMethod<NativeContext, &NativeContext::Dispose>("dispose"),
                           });
    }

    /**
     * new NativeContext(model, {contextSize, sequences, batchSize, threads, unified?, adaptiveThreads?, deviceSelection?}):
     * adaptiveThreads (default true) lets a decode use fewer than `threads` while other processes keep
     * cores busy, or when `threads` exceeds the cores this process may use (runtime.h, threadsForDecode);
     * deviceSelection (default true) picks argmax rows inside the graph (DeviceSelection.h).
     */
    explicit NativeContext(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeContext>(info) {
        constructing(info.Env(), [&] { Create(info); });
        info.This().As<Napi::Object>().TypeTag(&typeTag);
    }

private:
    std::shared_ptr<ContextState> state; // null once disposed

    void Create(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        auto created = std::make_shared<ContextState>();
        // Taken before the options are read: a getter among them may dispose of the model.
        created->model = unwrapTagged<NativeModel>(env, info[0], "model")->Handle();
        if (created->model == nullptr) throw Napi::Error::New(env, "the model is disposed");
        Napi::Object options = objectArgument(env, info[1], "options");
        const int64_t sequences =
            integerArgument(env, options.Get("sequences"), "options.sequences", 1, static_cast<int64_t>(llama_max_parallel_sequences()));
        // Cells in all: llama.cpp counts them in 32 bits.
        const int64_t contextSize = integerArgument(env, options.Get("contextSize"), "options.contextSize", 1, INT32_MAX / sequences);
        const int64_t batchSize = integerArgument(env, options.Get("batchSize"), "options.batchSize", 1, INT32_MAX);
        const int threads = static_cast<int>(integerArgument(env, options.Get("threads"), "options.threads", 1, GGML_MAX_N_THREADS));
        bool unified = options.Get("unified").ToBoolean().Value();
        const Napi::Value adaptive = options.Get("adaptiveThreads");
        const bool adaptiveThreads = adaptive.IsUndefined() || adaptive.ToBoolean().Value();
        const Napi::Value onDevice = options.Get("deviceSelection");
        const bool deviceSelection = onDevice.IsUndefined() || onDevice.ToBoolean().Value();
        const Napi::Value capture = options.Get("captureLayers");
        const std::vector<int32_t> layers =
            capture.IsUndefined() ? std::vector<int32_t>{} : tapLayers(env, capture, "options.captureLayers", created->model->model);

        llama_context_params params = llama_context_default_params();
        params.n_ctx = static_cast<uint32_t>(contextSize * sequences);
        params.n_batch = static_cast<uint32_t>(batchSize);
        params.n_ubatch = std::min<uint32_t>(params.n_batch, 512);
        params.n_seq_max = static_cast<uint32_t>(sequences);
        // llama.cpp's default is one KV stream per sequence: a unified buffer slows a tiny model's
        // single-token decode (BENCHMARKS.md, "specgate against native llama.cpp"), and makes every token of a shared batch
        // attend over all sequences' cells. Unified on request (see
        // NativeBackendOptions.unifiedKvCache for the trade-off).
        // A tap reads a decode's layer inputs by batch index, an order llama.cpp keeps only on a unified
        // cache: with a stream per sequence it regroups a batch of several sequences into equal-length
        // ubatches, and the rows would reach the wrong sequences.
        if (!layers.empty() && sequences > 1) unified = true;
        params.kv_unified = unified;
        params.n_threads = threads;
        params.n_threads_batch = threads;
        params.no_perf = true;
        // Rows one sequence may have selected on the device in one decode (llama.cpp's default is 1): a
        // verification's γ + 1, a tree's nodes. A sequence asking for more gets them from the host.
        params.n_outputs_max_per_seq = DeviceSelection::OutputsPerSequence(params.n_batch, deviceSelection);
        std::vector<llama_sampler_seq_config> chains = created->selection.FixedChains(static_cast<uint32_t>(sequences), deviceSelection);
        params.samplers = chains.empty() ? nullptr : chains.data();
        params.n_samplers = chains.size();
        {
            const DeviceSelection::GraphReuseOff reuseOff(deviceSelection);
            created->context = llama_init_from_model(created->model->model, params);
        }
        if (created->context == nullptr) throw Napi::Error::New(env, "llama.cpp could not create a context");
        created->vocabularySize = created->model->vocabularySize;
        created->sequenceCount = static_cast<uint32_t>(sequences);
        created->streams = unified ? 1 : static_cast<uint32_t>(sequences);
        const llama_model* loaded = created->model->model;
        const llama_rope_type rope = llama_model_rope_type(loaded);
        created->plainCells = !llama_model_is_recurrent(loaded) && !llama_model_is_hybrid(loaded) && llama_model_n_swa(loaded) == 0 &&
                              rope != LLAMA_ROPE_TYPE_MROPE && rope != LLAMA_ROPE_TYPE_IMROPE;
        created->batchSize = llama_n_batch(created->context);
        created->threads = threads;
        created->activeThreads = threads;
        created->adaptiveThreads = adaptiveThreads;
        created->selection.Init(created->context, created->sequenceCount, deviceSelection);
        ggml_threadpool* pool = poolFor(threads);
        if (pool == nullptr) throw Napi::Error::New(env, "ggml could not start a threadpool");
        llama_attach_threadpool(created->context, pool, pool);
        if (created->plainCells) CheckEmptyState(env, *created);
        if (!layers.empty()) {
            created->tap = std::make_shared<LayerTap>(layers, llama_model_n_embd(loaded), created->sequenceCount);
            created->tap->Enable(created->context);
        }
        state = std::move(created);
    }

public:
    /** What an EAGLE-3 head needs of the context `value` (Eagle3Head.h), or a TypeError naming `name`. */
    static TargetLink ResolveTarget(Napi::Env env, Napi::Value value, const std::string& name) {
        std::shared_ptr<ContextState> live = unwrapTagged<NativeContext>(env, value, name)->Live(env);
        return TargetLink{live->context, live, live->model, live->tap, live->sequenceCount};
    }

private:
    /**
     * This context's state, for the length of one call (a getter run while its arguments are read may
     * dispose of the context: the call keeps what it uses).
     */
    std::shared_ptr<ContextState> Live(Napi::Env env) const {
        if (state == nullptr) throw Napi::Error::New(env, "the context is disposed");
        return state;
    }

    /** Parses and checks decode's arguments (a TypeError or RangeError naming the argument otherwise). */
    static Request ParseRequest(const Napi::CallbackInfo& info, const ContextState& state) {
        Napi::Env env = info.Env();
        Request request;
        request.tokens = int32ArrayArgument(env, info[0], "tokens");
        request.sequences = int32ArrayArgument(env, info[1], "sequences");
        request.positions = int32ArrayArgument(env, info[2], "positions");
        const size_t count = request.tokens.size();
        if (count == 0) throwRangeError(env, "tokens must not be empty");
        if (request.sequences.size() != count) throwRangeError(env, "sequences must be as long as tokens (" + std::to_string(count) + ")");
        if (request.positions.size() != count) throwRangeError(env, "positions must be as long as tokens (" + std::to_string(count) + ")");
        if (count > state.batchSize)
            throwRangeError(env, "tokens: " + std::to_string(count) + " are more than the context's batch size " +
                                     std::to_string(state.batchSize));
        for (size_t index = 0; index < count; index++) {
            const std::string at = "[" + std::to_string(index) + "] = ";
            if (request.tokens[index] < 0 || request.tokens[index] >= state.vocabularySize)
                throwRangeError(env, "tokens" + at + std::to_string(request.tokens[index]) + " is outside the vocabulary of " +
                                         std::to_string(state.vocabularySize) + " ids");
            if (request.sequences[index] < 0 || static_cast<uint32_t>(request.sequences[index]) >= state.sequenceCount)
                throwRangeError(env, "sequences" + at + std::to_string(request.sequences[index]) + " is not one of this context's " +
                                         std::to_string(state.sequenceCount) + " sequences");
            if (request.positions[index] < 0 || request.positions[index] >= maxPosition)
                throwRangeError(env, "positions" + at + std::to_string(request.positions[index]) + " is outside [0, " +
                                         std::to_string(maxPosition) + ")");
        }
        if (!info[3].IsArray()) throwTypeError(env, "groups must be an array");
        Napi::Array groups = info[3].As<Napi::Array>();
        std::vector<int32_t> claimed(count, 0);
        for (uint32_t index = 0; index < groups.Length(); index++) {
            request.groups.push_back(ParseGroup(env, groups.Get(index), "groups[" + std::to_string(index) + "]", count,
                                                static_cast<int32_t>(index) + 1, claimed));
        }
        if (!info[4].IsUndefined()) {
            request.removals = int32ArrayArgument(env, info[4], "removals");
            if (request.removals.size() % 2 != 0) throwRangeError(env, "removals must be (sequence, from) pairs");
            for (size_t index = 0; index < request.removals.size(); index += 2) {
                if (request.removals[index] < 0 || static_cast<uint32_t>(request.removals[index]) >= state.sequenceCount)
                    throwRangeError(env, "removals[" + std::to_string(index) + "] = " + std::to_string(request.removals[index]) +
                                             " is not one of this context's sequences");
                if (request.removals[index + 1] < 0)
                    throwRangeError(env, "removals[" + std::to_string(index + 1) + "] must not be negative");
            }
        }
        if (info.Length() > 5 && !info[5].IsUndefined()) request.shared = ParseShared(env, info[5], request, state);
        for (size_t index = 0; index < request.groups.size(); index++)
            RefuseResizable(env, request.groups[index], "groups[" + std::to_string(index) + "].destination");
        // Last, after every getter of the arguments has run (one could detach a buffer read earlier).
        for (size_t index = 0; index < request.groups.size(); index++)
            LocateDestination(env, request.groups[index], "groups[" + std::to_string(index) + "].destination", state.vocabularySize);
        return request;
    }

    /**
     * shared: (batch index, sequence) pairs, each adding a sequence to a token, never its own one or one
     * it already has. Several sequences per token need one KV stream for all of them (a unified cache):
     * llama.cpp refuses a token whose sequences live in different streams.
     */
    static std::vector<int32_t> ParseShared(Napi::Env env, Napi::Value value, const Request& request, const ContextState& state) {
        std::vector<int32_t> shared = int32ArrayArgument(env, value, "shared");
        if (shared.size() % 2 != 0) throwRangeError(env, "shared must be (batch index, sequence) pairs");
        if (!shared.empty() && state.streams != 1)
            throwRangeError(env, "shared: tokens of several sequences need a context with a unified KV cache");
        const size_t count = request.tokens.size();
        std::vector<std::vector<int32_t>> members(count);
        for (size_t index = 0; index < shared.size(); index += 2) {
            const std::string at = "shared[" + std::to_string(index) + "]";
            const int32_t token = shared[index];
            const int32_t sequence = shared[index + 1];
            if (token < 0 || static_cast<size_t>(token) >= count)
                throwRangeError(env, at + " = " + std::to_string(token) + " is not a batch index");
            if (sequence < 0 || static_cast<uint32_t>(sequence) >= state.sequenceCount)
                throwRangeError(env, "shared[" + std::to_string(index + 1) + "] = " + std::to_string(sequence) +
                                         " is not one of this context's sequences");
            std::vector<int32_t>& of = members[static_cast<size_t>(token)];
            if (sequence == request.sequences[static_cast<size_t>(token)] || std::find(of.begin(), of.end(), sequence) != of.end())
                throwRangeError(env, at + ": batch index " + std::to_string(token) + " already has sequence " + std::to_string(sequence));
            of.push_back(sequence);
        }
        return shared;
    }

    /** {outputs: Int32Array, mode, destination?, sampling?}: each batch index in at most one group (`claimed` holds its group's number). */
    static OutputGroup ParseGroup(Napi::Env env, Napi::Value value, const std::string& name, size_t count, int32_t number,
                                  std::vector<int32_t>& claimed) {
        Napi::Object object = objectArgument(env, value, name);
        OutputGroup group;
        group.outputs = int32ArrayArgument(env, object.Get("outputs"), name + ".outputs");
        group.mode = static_cast<OutputMode>(integerArgument(env, object.Get("mode"), name + ".mode", 0, 9));
        if (group.mode == OutputMode::Candidates || group.mode == OutputMode::Gathered)
            group.width = static_cast<size_t>(integerArgument(env, object.Get("width"), name + ".width", 1, 64));
        // Scored: K ids to read q at beside the draw, none unless given.
        if (group.mode == OutputMode::Scored)
            group.width = object.Get("width").IsUndefined()
                              ? 0
                              : static_cast<size_t>(integerArgument(env, object.Get("width"), name + ".width", 0, 64));
        for (int32_t index : group.outputs) {
            if (index < 0 || static_cast<size_t>(index) >= count ||
                (claimed[static_cast<size_t>(index)] != 0 && claimed[static_cast<size_t>(index)] != number))
                throwRangeError(env, name + ".outputs: batch index " + std::to_string(index) + " is outside the batch or in two groups");
            claimed[static_cast<size_t>(index)] = number;
        }
        if (group.mode != OutputMode::None) {
            const Napi::Value destination = object.Get("destination");
            if (!destination.IsTypedArray()) throwTypeError(env, name + ".destination must be a typed array");
            group.destinationArray = destination.As<Napi::TypedArray>();
        }
        const size_t uniforms = uniformsPerOutput(group.mode, group.width);
        if (uniforms > 0)
            group.uniforms = UniformsArgument(env, object.Get("uniforms"), name + ".uniforms", group.outputs.size(), uniforms);
        const size_t ids = idsPerOutput(group.mode, group.width);
        if (ids > 0) {
            group.drafted = int32ArrayArgument(env, object.Get("drafted"), name + ".drafted");
            if (group.drafted.size() != group.outputs.size() * ids)
                throwRangeError(env, name + ".drafted holds " + std::to_string(group.drafted.size()) + " ids, not " + countPerOutput(ids) +
                                         " per output (" + std::to_string(group.outputs.size()) + ")");
        }
        if (wantsSamplerRows(group.mode) || drawsIds(group.mode)) {
            Napi::Object options = objectArgument(env, object.Get("sampling"), name + ".sampling");
            group.sampling.temperature = numberArgument(env, options.Get("temperature"), name + ".sampling.temperature", 0, HUGE_VAL);
            group.sampling.topK = static_cast<int32_t>(integerArgument(env, options.Get("topK"), name + ".sampling.topK", 0, INT32_MAX));
            group.sampling.topP = numberArgument(env, options.Get("topP"), name + ".sampling.topP", 0, 1);
            group.sampling.minP = numberArgument(env, options.Get("minP"), name + ".sampling.minP", 0, 1);
            const Napi::Value limit = options.Get("limit");
            if (!limit.IsUndefined())
                group.sampling.limit = static_cast<size_t>(integerArgument(env, limit, name + ".sampling.limit", 0, INT32_MAX));
        }
        return group;
    }

    /** "one", or the count: how many values per output a message names. */
    static std::string countPerOutput(size_t count) { return count == 1 ? "one" : std::to_string(count); }

    /** A drawing group's uniforms: a Float64Array of `perOutput` values in [0, 1) per output. */
    static std::vector<double> UniformsArgument(Napi::Env env, Napi::Value value, const std::string& name, size_t outputs,
                                                size_t perOutput) {
        if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
            throwTypeError(env, name + " must be a Float64Array");
        Napi::Float64Array array = value.As<Napi::Float64Array>();
        if (array.ElementLength() != outputs * perOutput)
            throwRangeError(env, name + " holds " + std::to_string(array.ElementLength()) + " values, not " + countPerOutput(perOutput) +
                                     " per output (" + std::to_string(outputs) + ")");
        std::vector<double> uniforms(array.Data(), array.Data() + array.ElementLength());
        for (size_t index = 0; index < uniforms.size(); index++)
            if (!(uniforms[index] >= 0 && uniforms[index] < 1))
                throwRangeError(env, name + "[" + std::to_string(index) + "] = " + std::to_string(uniforms[index]) + " is outside [0, 1)");
        return uniforms;
    }

    /**
     * Refuses a destination on a resizable ArrayBuffer (`new ArrayBuffer(n, {maxByteLength})`): rows
     * need memory of a fixed length. Memory safety does not rest on this check (JS can lie to it by
     * redefining the getter): decode writes into its own memory and copies out after checking the
     * destination again, decodeNow writes before any JS runs.
     */
    static void RefuseResizable(Napi::Env env, const OutputGroup& group, const std::string& name) {
        if (group.mode == OutputMode::None) return;
        napi_value buffer = nullptr;
        if (napi_get_typedarray_info(env, group.destinationArray, nullptr, nullptr, nullptr, &buffer, nullptr) != napi_ok ||
            buffer == nullptr)
            throwTypeError(env, name + " must be a typed array");
        const Napi::Value resizable = Napi::Object(env, buffer).Get("resizable");
        if (resizable.IsBoolean() && resizable.As<Napi::Boolean>().Value())
            throwTypeError(env, name + " must not be a view of a resizable ArrayBuffer (its rows need a fixed length)");
    }

    /** Checks a group's destination (element type and length for its mode) and takes the address its rows go to. */
    static void LocateDestination(Napi::Env env, OutputGroup& group, const std::string& name, int32_t vocabularySize) {
        if (group.mode == OutputMode::None) return;
        const size_t rows = group.outputs.size() * static_cast<size_t>(vocabularySize);
        const size_t needed = group.mode == OutputMode::Logits || group.mode == OutputMode::Probabilities ? rows
                              : group.mode == OutputMode::Distribution                                    ? 2 * rows
                              : group.mode == OutputMode::Verified                                        ? 2 * group.outputs.size()
                              : isResidual(group.mode) ? ResidualStride(group) * group.outputs.size()
                                                       : group.outputs.size();
        for (size_t index = 0; index < group.drafted.size(); index++)
            if (group.drafted[index] < -1 || group.drafted[index] >= vocabularySize)
                throwRangeError(env, name.substr(0, name.size() - std::string(".destination").size()) + ".drafted[" +
                                         std::to_string(index) + "] = " + std::to_string(group.drafted[index]) +
                                         " is neither -1 nor an id of the vocabulary of " + std::to_string(vocabularySize));
        // Asked afresh (Napi::TypedArray keeps what was true when it was made): a getter may have detached the buffer since.
        napi_typedarray_type type = napi_int8_array;
        size_t length = 0;
        void* data = nullptr;
        if (napi_get_typedarray_info(env, group.destinationArray, &type, &length, &data, nullptr, nullptr) != napi_ok)
            throwTypeError(env, name + " must be a typed array");
        const bool wide = wantsSamplerRows(group.mode) || group.mode == OutputMode::Verified || isResidual(group.mode);
        if (group.mode == OutputMode::Logits ? type != napi_float32_array && type != napi_float64_array
                                             : type != (wide ? napi_float64_array : napi_int32_array))
            throwTypeError(env, name + " must be " +
                                    (group.mode == OutputMode::Logits ? "a Float32Array or Float64Array"
                                     : wide                           ? "a Float64Array"
                                                                      : "an Int32Array") +
                                    " for its mode");
        if (length < needed || (needed > 0 && data == nullptr))
            throwRangeError(env, name + " holds " + std::to_string(length) + " elements, fewer than the " + std::to_string(needed) +
                                     " its rows need");
        group.destination = data; // napi_get_typedarray_info's data starts at the array's first element
        group.elements = needed;
        group.type = type;
        group.bytes = needed * (type == napi_float64_array ? sizeof(double) : sizeof(int32_t)); // Float32Array, Int32Array: 4 bytes
        group.wideDestination = type == napi_float64_array;
    }

    /** Points each group's rows at memory of its own, allocated on the worker thread (decode). */
    static void Stage(Request& request) {
        for (OutputGroup& group : request.groups) {
            if (group.mode == OutputMode::None || group.bytes == 0) continue;
            group.staging.reset(new double[(group.bytes + sizeof(double) - 1) / sizeof(double)]);
            group.destination = group.staging.get();
        }
    }

    /**
     * On the main thread after a decode: copies each group's staged rows into its typed array, asked
     * afresh, since JS may have detached (transferred) or shrunk its buffer since decode() returned. A
     * destination no longer of its type and length gets nothing and the decode rejects, naming it; the
     * other groups still get their rows. The copy's time joins each group's transfer time.
     */
    static std::string Deliver(Napi::Env env, const Request& request, const std::vector<Napi::ObjectReference>& destinations,
                               DecodeTimings& timings) {
        std::string error;
        size_t next = 0;
        for (size_t index = 0; index < request.groups.size(); index++) {
            const OutputGroup& group = request.groups[index];
            if (group.mode == OutputMode::None) continue;
            const Napi::ObjectReference& reference = destinations[next++];
            auto start = std::chrono::steady_clock::now();
            napi_typedarray_type type = napi_int8_array;
            size_t length = 0;
            void* data = nullptr;
            const bool found = napi_get_typedarray_info(env, reference.Value(), &type, &length, &data, nullptr, nullptr) == napi_ok;
            if (!found || type != group.type || length < group.elements || (group.bytes > 0 && data == nullptr)) {
                if (error.empty())
                    error = "groups[" + std::to_string(index) + "].destination was detached or shrunk while the decode ran: it holds " +
                            std::to_string(found ? length : 0) + " elements, fewer than the " + std::to_string(group.elements) +
                            " its rows need";
                continue;
            }
            if (group.bytes > 0) std::memcpy(data, group.staging.get(), group.bytes);
            const double copied = millisecondsSince(start);
            if (index < timings.groups.size()) timings.groups[index].transferMilliseconds += copied;
            timings.transferMilliseconds += copied;
        }
        return error;
    }

    /**
     * decode(tokens: Int32Array, sequences: Int32Array, positions: Int32Array, groups: Array<{outputs: Int32Array,
     *        mode: 0|1|2|3|4|5, destination?: Float32Array or Float64Array (mode 1, outputs × vocabulary) | Int32Array
     *        (mode 2, outputs; mode 5, outputs: ids drawn with `uniforms`, a Float64Array of one uniform per output) | Float64Array (mode
     * 3, 2 × outputs × vocabulary: logits, then sampler rows; mode 4, outputs × vocabulary: sampler rows only), sampling?: {temperature,
     * topK, topP, minP, limit?}}>, removals?: Int32Array of (sequence, from) pairs dropped from the KV cache before the decode — a shared
     * context's rollbacks, applied on the worker) → Promise<{decodeMilliseconds, transferMilliseconds, samplingMilliseconds, groups:
     * [{transferMilliseconds, samplingMilliseconds, error?}]}>, computed on a libuv worker thread. Row r of a group's destination belongs
     * to its outputs[r]; groups let the submitters of one batch (sequences of a shared context) each get their own kind of rows. At most
     * batchSize tokens; positions in [0, 2^30).
     */
    Napi::Value Decode(const Napi::CallbackInfo& info) {
        std::shared_ptr<ContextState> live = Live(info.Env());
        auto request = std::make_shared<Request>(ParseRequest(info, *live));
        // The worker writes only into memory the request owns; the rows reach the destinations on the main thread.
        std::vector<Napi::Value> destinations;
        for (OutputGroup& group : request->groups) {
            if (group.mode != OutputMode::None) destinations.push_back(group.destinationArray);
            group.destination = nullptr;
            group.destinationArray = Napi::TypedArray();
        }
        auto* worker = new DecodeWorker(
            info.Env(), std::move(destinations),
            [live, request](DecodeTimings& timings, std::string& error) {
                Stage(*request);
                return live->Run(*request, timings, error, true);
            },
            [request](Napi::Env env, const std::vector<Napi::ObjectReference>& references, DecodeTimings& timings) {
                return Deliver(env, *request, references, timings);
            });
        Napi::Promise promise = worker->Promise();
        worker->Queue();
        return promise;
    }

    /**
     * decodeNow(…same arguments…) → {decodeMilliseconds, transferMilliseconds, samplingMilliseconds} | null: the same decode on
     * the calling (main) thread, for calls shorter than a thread hop (tiny models), where handing the
     * work to a worker and back costs more than the work. It blocks the event loop for the call's
     * duration, never longer: null (nothing done) when another decode holds this context or the CPU.
     */
    Napi::Value DecodeNow(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<ContextState> live = Live(env);
        const Request request = ParseRequest(info, *live);
        DecodeTimings timings;
        std::string error;
        const int status = live->Run(request, timings, error, false);
        if (status == busy) return env.Null();
        if (status != 0) throw Napi::Error::New(env, error);
        return timingsObject(env, timings);
    }

    /** The state's lock for a KV-cache edit on the main thread, which never waits for a decode: an Error while one runs. */
    static std::unique_lock<std::mutex> EditLock(Napi::Env env, ContextState& live, const char* method) {
        std::unique_lock<std::mutex> lock(live.mutex, std::try_to_lock);
        if (!lock.owns_lock())
            throw Napi::Error::New(env,
                                   std::string(method) + ": a decode of this context is running (await it, or pass removals to decode)");
        return lock;
    }

    /** removeTokens(sequence, from, to): drops positions [from, to) of a sequence from the KV cache (to = -1: to the end). */
    Napi::Value RemoveTokens(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<ContextState> live = Live(env);
        const auto sequence =
            static_cast<llama_seq_id>(integerArgument(env, info[0], "sequence", 0, static_cast<int64_t>(live->sequenceCount) - 1));
        const auto from = static_cast<llama_pos>(integerArgument(env, info[1], "from", 0, INT32_MAX));
        const auto to = static_cast<llama_pos>(integerArgument(env, info[2], "to", -1, INT32_MAX));
        std::unique_lock<std::mutex> lock = EditLock(env, *live, "removeTokens");
        return Napi::Boolean::New(env, llama_memory_seq_rm(llama_get_memory(live->context), sequence, from, to));
    }

    /**
     * copyTokens(source, destination, from, to): the destination sequence also holds the source's cells at
     * positions [from, to) (to = -1: to the end), sharing them (llama_memory_seq_cp); a token tree's
     * branches share their prefix so. Only on a unified KV cache, where the cells are shared rather than
     * whole streams copied.
     */
    Napi::Value CopyTokens(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<ContextState> live = Live(env);
        const int64_t last = static_cast<int64_t>(live->sequenceCount) - 1;
        const auto source = static_cast<llama_seq_id>(integerArgument(env, info[0], "source", 0, last));
        const auto destination = static_cast<llama_seq_id>(integerArgument(env, info[1], "destination", 0, last));
        const auto from = static_cast<llama_pos>(integerArgument(env, info[2], "from", 0, INT32_MAX));
        const auto to = static_cast<llama_pos>(integerArgument(env, info[3], "to", -1, INT32_MAX));
        if (source == destination) throwRangeError(env, "copyTokens: source and destination are the same sequence");
        if (to != -1 && to <= from) throwRangeError(env, "copyTokens: to must be -1 or greater than from");
        if (live->streams != 1) throwRangeError(env, "copyTokens needs a context with a unified KV cache");
        std::unique_lock<std::mutex> lock = EditLock(env, *live, "copyTokens");
        llama_memory_seq_cp(llama_get_memory(live->context), source, destination, from, to);
        if (live->tap != nullptr) live->tap->Copy(source, destination, from, to);
        return env.Undefined();
    }

    Napi::Value Clear(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<ContextState> live = Live(env);
        std::unique_lock<std::mutex> lock = EditLock(env, *live, "clear");
        llama_memory_clear(llama_get_memory(live->context), true);
        if (live->tap != nullptr) live->tap->Forget(-1);
        return env.Undefined();
    }

    /**
     * saveSequence(sequence) → Uint8Array: the sequence's KV cells (positions and K/V rows), as
     * llama_state_seq_get_data writes them, then (captureLayers) its captured layer rows, for
     * restoreSequence. Throws, rather than wait, while a decode of this context runs.
     */
    Napi::Value SaveSequence(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<ContextState> live = Live(env);
        const auto sequence =
            static_cast<llama_seq_id>(integerArgument(env, info[0], "sequence", 0, static_cast<int64_t>(live->sequenceCount) - 1));
        std::unique_lock<std::mutex> lock = EditLock(env, *live, "saveSequence");
        const size_t size = llama_state_seq_get_size(live->context, sequence);
        if (size == 0) throw Napi::Error::New(env, "saveSequence: llama.cpp could not size the sequence's state");
        // With a tap, the sequence's layer rows follow llama.cpp's bytes (LayerTap::Split reads them back).
        const std::vector<uint8_t> rows =
            live->tap == nullptr ? std::vector<uint8_t>{}
                                 : live->tap->Save(sequence, llama_memory_seq_pos_max(llama_get_memory(live->context), sequence) + 1);
        const size_t extra = rows.empty() ? 0 : rows.size() + LayerTap::footerBytes;
        Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, size + extra);
        uint8_t* data = static_cast<uint8_t*>(buffer.Data());
        const size_t written = llama_state_seq_get_data(live->context, data, size, sequence);
        if (written == 0 || written > size) throw Napi::Error::New(env, "saveSequence: llama.cpp could not copy the sequence's state");
        if (live->plainCells) {
            CanonicalStreams(data, written, live->streams);
            CheckSavedCells(env, data, written, *live, sequence);
        }
        if (extra == 0) return Napi::Uint8Array::New(env, written, buffer, 0);
        std::memcpy(data + written, rows.data(), rows.size());
        LayerTap::AppendFooter(data + written + rows.size(), written);
        return Napi::Uint8Array::New(env, written + extra, buffer, 0);
    }

    /**
     * restoreSequence(sequence, data: Uint8Array): replaces what the sequence holds by a state from
     * saveSequence (of this context or another of the same model), and what a tap holds of it by the
     * rows saved with it (none where the state has none of this tap's layers). Throws, rather than
     * wait, while a decode of this context runs; a state llama.cpp refuses is an Error and leaves the
     * sequence empty.
     */
    Napi::Value RestoreSequence(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<ContextState> live = Live(env);
        const auto sequence =
            static_cast<llama_seq_id>(integerArgument(env, info[0], "sequence", 0, static_cast<int64_t>(live->sequenceCount) - 1));
        if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
            throwTypeError(env, "data must be a Uint8Array");
        Napi::Uint8Array array = info[1].As<Napi::Uint8Array>();
        // No JS runs from here on: the view's bytes stay where they are for the length of the call.
        const uint8_t* data = array.ElementLength() == 0 ? nullptr : array.Data();
        size_t size = array.ElementLength();
        std::vector<uint8_t> rewritten;
        if (size < stateHeaderBytes || readU32(data) != stateMagic) throwRangeError(env, "data is not a sequence state (saveSequence's)");
        const uint8_t* rows = nullptr;
        size_t rowBytes = 0;
        size_t stateBytes = size;
        if (!LayerTap::Split(data, size, stateBytes, rows, rowBytes)) throwRangeError(env, "data's layer rows do not fit in it");
        size = stateBytes;
        if (live->plainCells) {
            CheckedStreams(env, data, size, *live, rewritten);
            if (!rewritten.empty()) {
                data = rewritten.data();
                size = rewritten.size();
            }
        }
        std::unique_lock<std::mutex> lock = EditLock(env, *live, "restoreSequence");
        llama_memory_t memory = llama_get_memory(live->context);
        // llama.cpp empties the destination only for a stream the state has cells in: an empty state would leave it as it was.
        llama_memory_seq_rm(memory, sequence, -1, -1);
        // Without rows (a state saved with no tap, or another tap's) the tap holds none: a head there does not draft.
        if (live->tap != nullptr) live->tap->Restore(sequence, rows, rowBytes);
        if (llama_state_seq_set_data(live->context, data, size, sequence) == 0) {
            llama_memory_seq_rm(memory, sequence, -1, -1);
            if (live->tap != nullptr) live->tap->Forget(sequence);
            throw Napi::Error::New(env, "restoreSequence: llama.cpp refused the state (another model's, or a context of other KV "
                                        "types); the sequence is now empty");
        }
        return env.Undefined();
    }

    /**
     * The self-check at context creation of the sequence-state layout saveSequence and restoreSequence
     * read (llama.cpp's, not a public format): an empty sequence's state is the header, the stream count
     * and one zero cell count per stream. A llama.cpp whose layout differs fails here, loudly, rather
     * than in a restore.
     */
    static void CheckEmptyState(Napi::Env env, ContextState& created) {
        const size_t size = llama_state_seq_get_size(created.context, 0);
        std::vector<uint8_t> data(size);
        const size_t written = size == 0 ? 0 : llama_state_seq_get_data(created.context, data.data(), size, 0);
        bool plain = written == stateHeaderBytes + 4 + 4 * static_cast<size_t>(created.streams) && readU32(data.data()) == stateMagic &&
                     readU32(data.data() + stateHeaderBytes) == created.streams;
        for (uint32_t stream = 0; plain && stream < created.streams; stream++)
            plain = readU32(data.data() + stateHeaderBytes + 4 + 4 * static_cast<size_t>(stream)) == 0;
        if (!plain) throw Napi::Error::New(env, StateLayoutMismatch("an empty sequence's state of " + std::to_string(written) + " bytes"));
    }

    /**
     * saveSequence's check of the cells it read: as many as the sequence has positions, each at one of
     * them, of this one sequence (the layout CheckedStreams relies on when the state comes back).
     */
    static void CheckSavedCells(Napi::Env env, const uint8_t* data, size_t size, ContextState& live, llama_seq_id sequence) {
        llama_memory_t memory = llama_get_memory(live.context);
        const llama_pos first = llama_memory_seq_pos_min(memory, sequence);
        const llama_pos last = llama_memory_seq_pos_max(memory, sequence);
        const uint32_t expected = first < 0 ? 0 : static_cast<uint32_t>(last - first + 1);
        if (expected == 0) return;
        const size_t at = stateHeaderBytes + 4 + 4 * (static_cast<size_t>(live.streams) - 1);
        if (size < at + 4 + static_cast<size_t>(expected) * cellBytes || readU32(data + at) != expected)
            throw Napi::Error::New(env, StateLayoutMismatch("a saved sequence of " + std::to_string(expected) + " positions"));
        for (uint32_t index = 0; index < expected; index++) {
            const SavedCell cell = ReadCell(data + at + 4, index);
            if (cell.position < first || cell.position > last || cell.sequences != 1 || cell.sequence != static_cast<uint32_t>(sequence))
                throw Napi::Error::New(env, StateLayoutMismatch("cell " + std::to_string(index) + " of a saved sequence"));
        }
    }

    /** A plain KV cell's metadata as a sequence state stores it (cellBytes): position, sequence count, first sequence id. */
    struct SavedCell {
        int32_t position = 0;
        uint32_t sequences = 0;
        uint32_t sequence = 0;
    };

    /** Cell `index` of a stream's cells, which start at `cells` (after the stream's cell count). */
    static SavedCell ReadCell(const uint8_t* cells, uint32_t index) {
        const uint8_t* meta = cells + static_cast<size_t>(index) * cellBytes;
        SavedCell cell;
        std::memcpy(&cell.position, meta, sizeof cell.position);
        cell.sequences = readU32(meta + 4);
        cell.sequence = readU32(meta + 8);
        return cell;
    }

    static std::string StateLayoutMismatch(const std::string& what) {
        return "llama.cpp's sequence-state layout is not the one this addon reads (" + what +
               "): saveSequence and restoreSequence (prompt caching) cannot work with this llama.cpp release; build the addon against "
               "the release node-llama-cpp bundles (npx specgate build)";
    }

    /** llama.cpp's sequence state starts with its magic and the saved sequence id, then (plain KV cache) the stream count. */
    static constexpr uint32_t stateMagic = 0xaf143cd8;
    static constexpr size_t stateHeaderBytes = 8;
    /** A plain KV cell's metadata: position, sequence count (1), sequence id. */
    static constexpr size_t cellBytes = 12;

    static uint32_t readU32(const uint8_t* at) {
        uint32_t value = 0;
        std::memcpy(&value, at, sizeof value);
        return value;
    }

    /**
     * A saved plain KV state lists every stream's cell count, each non-empty one followed by its cells;
     * one sequence's cells are all in one stream. Moves that stream to the last place, after the empty
     * ones: restoreSequence then knows where the cells end without parsing the K/V rows.
     */
    static void CanonicalStreams(uint8_t* data, size_t size, uint32_t streams) {
        const size_t counts = stateHeaderBytes + 4;
        if (size < counts || readU32(data + stateHeaderBytes) != streams) return;
        size_t at = counts;
        uint32_t stream = 0;
        while (stream < streams && at + 4 <= size && readU32(data + at) == 0) {
            at += 4;
            stream++;
        }
        const size_t trailing = streams - 1 - std::min(stream, streams - 1);
        if (stream >= streams || trailing == 0 || size < at + 4 * trailing) return;
        // [counts][0 × stream][section][0 × trailing] → [counts][0 × (streams − 1)][section]
        const size_t section = size - at - 4 * trailing;
        std::memmove(data + at + 4 * trailing, data + at, section);
        std::memset(data + at, 0, 4 * trailing);
    }

    /**
     * Checks a plain KV state's one stream of cells (as many as a stream holds, positions in [0, 2^30),
     * one sequence each) and, where its streams are not the context's (a state of an own context
     * restored into a shared one, or back) or not in CanonicalStreams' order, writes the context's form
     * into `rewritten`. llama.cpp then reads exactly that stream and checks the K/V rows itself.
     */
    static void CheckedStreams(Napi::Env env, const uint8_t* data, size_t size, const ContextState& live, std::vector<uint8_t>& rewritten) {
        const size_t counts = stateHeaderBytes + 4;
        if (size < counts) throwRangeError(env, "data is too short for a sequence state");
        const uint32_t saved = readU32(data + stateHeaderBytes);
        if (saved == 0 || saved > llama_max_parallel_sequences())
            throwRangeError(env, "data lists " + std::to_string(saved) + " KV streams, not a sequence state's");
        size_t at = counts;
        uint32_t stream = 0;
        while (stream < saved && at + 4 <= size && readU32(data + at) == 0) {
            at += 4;
            stream++;
        }
        if (stream < saved && at + 4 > size) throwRangeError(env, "data ends inside its stream list");
        const uint32_t cells = stream < saved ? readU32(data + at) : 0;
        const uint64_t capacity = llama_n_ctx(live.context) / live.streams;
        if (cells > capacity)
            throwRangeError(env, "data holds " + std::to_string(cells) + " cells, more than the " + std::to_string(capacity) +
                                     " of a KV stream of this context");
        if (static_cast<uint64_t>(size - at - (cells > 0 ? 4 : 0)) < static_cast<uint64_t>(cells) * cellBytes)
            throwRangeError(env, "data ends inside its cells");
        for (uint32_t index = 0; index < cells; index++) {
            const SavedCell cell = ReadCell(data + at + 4, index);
            if (cell.position < 0 || cell.position >= maxPosition || cell.sequences != 1)
                throwRangeError(env, "data's cell " + std::to_string(index) + " is not a cell of one sequence at a position in [0, " +
                                         std::to_string(maxPosition) + ")");
        }
        // The context's form: its stream count, its empty streams, then this one.
        const bool canonical = saved == live.streams && (cells == 0 || stream == live.streams - 1);
        if (canonical) return;
        const size_t tail = cells == 0 ? 0 : size - at;
        rewritten.assign(counts + 4 * (live.streams - (cells == 0 ? 0 : 1)) + tail, 0);
        std::memcpy(rewritten.data(), data, stateHeaderBytes);
        std::memcpy(rewritten.data() + stateHeaderBytes, &live.streams, 4);
        if (tail > 0) std::memcpy(rewritten.data() + rewritten.size() - tail, data + at, tail);
    }

    /** Drops this object's share of the context (freed now, or after the decode in flight). Idempotent. */
    Napi::Value Dispose(const Napi::CallbackInfo& info) {
        if (state != nullptr) state->disposed = true;
        state.reset();
        return info.Env().Undefined();
    }
};

const char* deviceTypeName(enum ggml_backend_dev_type type) {
    switch (type) {
    case GGML_BACKEND_DEVICE_TYPE_CPU:
        return "cpu";
    case GGML_BACKEND_DEVICE_TYPE_GPU:
        return "gpu";
    case GGML_BACKEND_DEVICE_TYPE_IGPU:
        return "igpu";
    default:
        return "accelerator";
    }
}

/**
 * backendInfo() → {build, ggmlVersion, ggmlCommit, systemInfo, backends: string[], devices: [{name, description,
 * type, backend, memoryFree, memoryTotal}]}: what this addon computes with, as `llama-cli --list-devices` shows it.
 * Loads ggml's backends first (initBackendOnce), as loading a model would.
 */
Napi::Value BackendInfo(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    initBackendOnce();
    Napi::Object result = Napi::Object::New(env);
    result.Set("build", buildName());
    result.Set("ggmlVersion", ggml_version());
    result.Set("ggmlCommit", ggml_commit());
    result.Set("systemInfo", llama_print_system_info());
    Napi::Array backends = Napi::Array::New(env);
    for (size_t index = 0; index < ggml_backend_reg_count(); index++)
        backends.Set(static_cast<uint32_t>(index), ggml_backend_reg_name(ggml_backend_reg_get(index)));
    result.Set("backends", backends);
    Napi::Array devices = Napi::Array::New(env);
    for (size_t index = 0; index < ggml_backend_dev_count(); index++) {
        ggml_backend_dev_t device = ggml_backend_dev_get(index);
        size_t memoryFree = 0;
        size_t memoryTotal = 0;
        ggml_backend_dev_memory(device, &memoryFree, &memoryTotal);
        Napi::Object entry = Napi::Object::New(env);
        entry.Set("name", ggml_backend_dev_name(device));
        entry.Set("description", ggml_backend_dev_description(device));
        entry.Set("type", deviceTypeName(ggml_backend_dev_type(device)));
        entry.Set("backend", ggml_backend_reg_name(ggml_backend_dev_backend_reg(device)));
        entry.Set("memoryFree", Napi::Number::New(env, static_cast<double>(memoryFree)));
        entry.Set("memoryTotal", Napi::Number::New(env, static_cast<double>(memoryTotal)));
        devices.Set(static_cast<uint32_t>(index), entry);
    }
    result.Set("devices", devices);
    return result;
}

napi_value BackendInfoEntry(napi_env env, napi_callback_info callbackInfo) {
    return guarded(env, [&]() -> napi_value { return BackendInfo(Napi::CallbackInfo(env, callbackInfo)); });
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
    exports.Set("NativeModel", NativeModel::Define(env));
    exports.Set("NativeContext", NativeContext::Define(env));
    registerEagle3(env, exports, &NativeContext::ResolveTarget);
    registerGrammar(env, exports);
    napi_value backendInfo = nullptr;
    NAPI_THROW_IF_FAILED(env, napi_create_function(env, "backendInfo", NAPI_AUTO_LENGTH, BackendInfoEntry, nullptr, &backendInfo), exports);
    exports.Set("backendInfo", backendInfo);
    return exports;
}

} // namespace
} // namespace specgate

static Napi::Object InitSpecgateNative(Napi::Env env, Napi::Object exports) { return specgate::Init(env, exports); }

NODE_API_MODULE(specgate_native, InitSpecgateNative)