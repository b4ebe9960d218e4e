// Eagle3Head: llama.cpp's draft-eagle3 (common/speculative.cpp) for one target sequence, on a worker
// thread per call. The head's decoder reads, at position P, the pair (token[P+1], g[P]), g being the
// encoder's projection of the target's hidden states at P (llama_encode on the captured rows). A draft
// writes the pairs of the positions the target decoded since the last one, the last pair with the
// pending token (the deferred boundary), then one position per drafted token with the previous
// position's pre-norm output as g. What those drafted positions wrote is dropped at the next draft,
// and every pair from the first position the target decoded again (its rollback) is written anew.
#include "Eagle3Head.h"

#include "DecodeWorker.h"
#include "runtime.h"
#include "validate.h"

#include <llama-ext.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>

namespace specgate {

void LayerTap::Enable(llama_context* context) const {
    for (int32_t layer : layers) llama_set_embeddings_layer_inp(context, static_cast<uint32_t>(layer), true);
}

std::vector<double> LayerTap::Capture(llama_context* context, const llama_batch& batch) {
    std::vector<double> bytes(stores.size(), 0);
    std::vector<const float*> sources;
    for (int32_t layer : layers) {
        const float* source = llama_get_embeddings_layer_inp(context, static_cast<uint32_t>(layer));
        if (source == nullptr) return bytes;
        sources.push_back(source);
    }
    const size_t rowFloats = RowFloats();
    const size_t layerFloats = static_cast<size_t>(width);
    std::lock_guard<std::mutex> lock(mutex);
    for (int32_t index = 0; index < batch.n_tokens; index++) {
        const llama_seq_id sequence = batch.seq_id[index][0];
        if (sequence < 0 || static_cast<size_t>(sequence) >= stores.size()) continue;
        bytes[static_cast<size_t>(sequence)] += static_cast<double>(rowFloats * sizeof(float));
        float* row = stores[static_cast<size_t>(sequence)].Place(batch.pos[index], batch.token[index], rowFloats);
        for (size_t layer = 0; layer < sources.size(); layer++)
            std::memcpy(row + layer * layerFloats, sources[layer] + static_cast<size_t>(index) * layerFloats, layerFloats * sizeof(float));
    }
    return bytes;
}

std::vector<int32_t> tapLayers(Napi::Env env, Napi::Value value, const std::string& name, const llama_model* target) {
    std::vector<int32_t> layers = int32ArrayArgument(env, value, name);
    const int32_t count = llama_model_n_layer(target);
    if (layers.size() != 3)
        throwRangeError(env, name + " must hold 3 layer ids (an EAGLE-3 head's target_layers), got " + std::to_string(layers.size()));
    for (size_t index = 0; index < layers.size(); index++)
        if (layers[index] < 0 || layers[index] >= count)
            throwRangeError(env, name + "[" + std::to_string(index) + "] = " + std::to_string(layers[index]) +
                                     " is not a layer of the target's " + std::to_string(count));
    return layers;
}

namespace {

/** A head's llama_context and its drafting state, shared by its Eagle3Head and the calls in flight. */
struct HeadState {
    std::shared_ptr<ModelHandle> model;
    TargetLink target;
    llama_seq_id sequence = 0;
    llama_context* context = nullptr;
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
    // The decoder's batch, owned here (llama_batch_init allocates tokens or embeddings, not both).
    std::vector<llama_token> tokens;
    std::vector<float> embeddings;
    std::vector<llama_pos> positions;
    std::vector<int32_t> sequenceCounts;
    std::vector<llama_seq_id> sequenceIds;
    std::vector<llama_seq_id*> sequencePointers;
    std::vector<int8_t> wanted;

    HeadState() = default;
    HeadState(const HeadState&) = delete;
    HeadState& operator=(const HeadState&) = delete;
    ~HeadState() {
        if (context != nullptr) llama_free(context);
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
    }

    void Add(llama_token token, const float* g, llama_pos position, bool output) {
        tokens.push_back(token);
        embeddings.insert(embeddings.end(), g, g + width);
        positions.push_back(position);
        wanted.push_back(output ? 1 : 0);
    }

    /** Decodes the batch; with `output`, its one token's row is kept (logits and pre-norm). */
    bool Decode(std::string& error, bool output) {
        const size_t count = tokens.size();
        sequenceCounts.assign(count, 1);
        sequenceIds.assign(count, 0);
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
        const float* row = llama_get_embeddings_nextn_ith(context, 0);
        if (row == nullptr) {
            error = "the EAGLE-3 head gave no pre-norm row";
            return false;
        }
        prenorm.assign(row, row + width);
        return true;
    }

    /** The last output's logits: copied (`logits` non-null) or reduced to their first maximum. */
    bool Row(double* logits, int32_t& argmax, std::string& error) {
        const float* row = llama_get_logits_ith(context, -1);
        if (row == nullptr) {
            error = "the EAGLE-3 head gave no logits";
            return false;
        }
        if (logits != nullptr) {
            for (int32_t token = 0; token < vocabulary; token++) logits[token] = row[token];
            return true;
        }
        int32_t best = 0;
        for (int32_t token = 1; token < vocabulary; token++)
            if (row[token] > row[best]) best = token;
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
     * Brings the head up to a target holding history[0, length) with history[length] the token after
     * them (`length` = history.size() − 1), and decodes the boundary pair. Pairs from the first position
     * the target decoded again, or whose token changed, are written anew. False with an empty error: the
     * tap lacks rows the head needs, or holds another history's (the target's cells came from a
     * restored state): no draft this time.
     */
    bool Sync(const std::vector<llama_token>& history, std::string& error) {
        next = -1;
        const auto length = static_cast<int32_t>(history.size()) - 1;
        LayerTap& tap = *target.tap;
        const int32_t rewritten = tap.Rewritten(sequence);
        const int32_t from =
            std::max(0, std::min({committed - 1, rewritten == INT32_MAX ? INT32_MAX : rewritten - 1, Agreed(history) - 1, length - 1}));
        LayerTap::Span span;
        int32_t ignored = 0;
        llama_memory_t memory = llama_get_memory(context);
        const bool present = length > 0 && tap.Read(sequence, from, length, span, ignored) &&
                             std::equal(span.tokens.begin(), span.tokens.end(), history.begin() + from);
        if (!present) {
            llama_memory_seq_rm(memory, 0, -1, -1);
            committed = 0;
            known.clear();
            return false;
        }
        const size_t count = static_cast<size_t>(length - from);
        std::vector<float> g;
        if (!Encode(span.rows, count, g, error)) return false;
        llama_memory_seq_rm(memory, 0, from, -1);
        committed = from;
        known.resize(static_cast<size_t>(from));
        // The pairs, then the boundary pair alone: the head's graph keeps every token's row, and
        // llama.cpp copies out the first rows of a batch as its outputs, so an output must be a batch's only token.
        ClearBatch();
        for (size_t index = 0; index + 1 < count; index++)
            Add(span.tokens[index + 1], g.data() + index * static_cast<size_t>(width), from + static_cast<llama_pos>(index), false);
        if (!tokens.empty() && !Decode(error, false)) return false;
        ClearBatch();
        Add(history.back(), g.data() + (count - 1) * static_cast<size_t>(width), length - 1, true);
        if (!Decode(error, true)) return false;
        committed = length;
        known = history;
        next = length;
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

/** A call's result, staged in memory the call owns until it reaches the destination on the main thread. */
struct Staged {
    std::vector<int32_t> ids;
    std::vector<double> logits;
    int32_t rows = 0;
    /** Why there is no draft (the tap lacks the rows the head needs); empty: there is one. */
    std::string unavailable;
};

class Eagle3Head : public Napi::ObjectWrap<Eagle3Head> {
public:
    static constexpr napi_type_tag typeTag{0x6e1a3c5b7d9f0e21, 0x4b6d8f0a2c4e6f81};
    static constexpr const char* className = "Eagle3Head";
    static TargetResolver resolve;

    static Napi::Function Define(Napi::Env env) {
        return DefineClass(env, className,
                           {
                               taggedGetter<Eagle3Head, &Eagle3Head::VocabularySize>("vocabularySize"),
                               taggedGetter<Eagle3Head, &Eagle3Head::Committed>("committed"),
                               taggedMethod<Eagle3Head, &Eagle3Head::Draft>("draft"),
                               taggedMethod<Eagle3Head, &Eagle3Head::Next>("next"),
                               taggedMethod<Eagle3Head, &Eagle3Head::Dispose>("dispose"),
                           });
    }

    /**
     * new Eagle3Head(model: NativeModel (eagle3), target: NativeContext (created with captureLayers),
     * sequence: the target's sequence id it drafts for, {contextSize, threads}).
     */
    explicit Eagle3Head(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Eagle3Head>(info) {
        constructing(info.Env(), [&] { Create(info); });
        info.This().As<Napi::Object>().TypeTag(&typeTag);
    }

private:
    std::shared_ptr<HeadState> state;

    void Create(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        auto created = std::make_shared<HeadState>();
        created->model = unwrapTagged<NativeModel>(env, info[0], "model")->Handle();
        if (created->model == nullptr) throw Napi::Error::New(env, "the model is disposed");
        created->target = resolve(env, info[1], "target");
        const llama_model* head = created->model->model;
        const llama_model* target = created->target.model->model;
        char architecture[64] = {0};
        if (llama_model_meta_val_str(head, "general.architecture", architecture, sizeof architecture) < 0 ||
            std::string(architecture) != "eagle3" || llama_model_target_layer_ids_n(head) != 3)
            throwTypeError(env, "model must be an EAGLE-3 head (general.architecture eagle3), got \"" + std::string(architecture) + "\"");
        if (created->target.tap == nullptr) throwRangeError(env, "target: the context was created without captureLayers");
        const LayerTap& tap = *created->target.tap;
        const int32_t* layers = llama_model_target_layer_ids(head);
        for (size_t index = 0; index < 3; index++)
            if (layers[index] != tap.Layers()[index])
                throwRangeError(env, "target: the context captures layer " + std::to_string(tap.Layers()[index]) +
                                         " where the head reads " + std::to_string(layers[index]) + " (eagle3.target_layers[" +
                                         std::to_string(index) + "])");
        char hidden[32] = {0};
        const int32_t targetWidth = llama_model_n_embd(target);
        if (llama_model_meta_val_str(head, "eagle3.target_hidden_size", hidden, sizeof hidden) < 0 || std::atoi(hidden) != targetWidth)
            throwRangeError(env, "model: the head reads hidden states of width " + std::string(hidden) +
                                     " (eagle3.target_hidden_size); the target's are " + std::to_string(targetWidth));
        if (tap.Width() != targetWidth) throwRangeError(env, "target: its tap's rows are not the target's hidden size");
        created->sequence =
            static_cast<llama_seq_id>(integerArgument(env, info[2], "sequence", 0, static_cast<int64_t>(created->target.sequences) - 1));
        Napi::Object options = objectArgument(env, info[3], "options");
        const int64_t contextSize = integerArgument(env, options.Get("contextSize"), "options.contextSize", 1, INT32_MAX / 2);
        const int threads = static_cast<int>(integerArgument(env, options.Get("threads"), "options.threads", 1, GGML_MAX_N_THREADS));
        llama_context_params params = llama_context_default_params();
        params.n_ctx = static_cast<uint32_t>(contextSize);
        params.n_batch = static_cast<uint32_t>(contextSize);
        params.n_ubatch = std::min<uint32_t>(params.n_batch, 512);
        params.n_seq_max = 1;
        params.n_threads = threads;
        params.n_threads_batch = threads;
        params.no_perf = true;
        params.ctx_other = created->target.context;
        const uint64_t mark = logMark();
        created->context = llama_init_from_model(created->model->model, params);
        if (created->context == nullptr)
            throw Napi::Error::New(env, "llama.cpp could not create the EAGLE-3 head's context" + HeadState::Details(mark));
        llama_set_embeddings_nextn(created->context, true, true);
        ggml_threadpool* pool = poolFor(threads);
        if (pool == nullptr) throw Napi::Error::New(env, "ggml could not start a threadpool");
        llama_attach_threadpool(created->context, pool, pool);
        created->threads = threads;
        created->activeThreads = threads;
        created->width = llama_model_n_embd(head);
        created->vocabulary = created->model->vocabularySize;
        created->contextSize = static_cast<int32_t>(llama_n_ctx(created->context));
        state = std::move(created);
    }

    std::shared_ptr<HeadState> Live(Napi::Env env) const {
        if (state == nullptr) throw Napi::Error::New(env, "the head is disposed");
        return state;
    }

    Napi::Value VocabularySize(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), Live(info.Env())->vocabulary); }

    /** Positions of the target the head's KV cache holds pairs of (until the next draft). */
    Napi::Value Committed(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), Live(info.Env())->committed); }

    /** The destination's kind and length: an Int32Array of `ids` ids, or a Float64Array of one logit row. */
    static void CheckDestination(Napi::Env env, Napi::Value value, bool& argmax, size_t ids, const HeadState& live) {
        if (!value.IsTypedArray()) throwTypeError(env, "destination must be an Int32Array or a Float64Array");
        const napi_typedarray_type type = value.As<Napi::TypedArray>().TypedArrayType();
        if (type != napi_int32_array && type != napi_float64_array)
            throwTypeError(env, "destination must be an Int32Array or a Float64Array");
        argmax = type == napi_int32_array;
        const size_t needed = argmax ? ids : static_cast<size_t>(live.vocabulary);
        if (value.As<Napi::TypedArray>().ElementLength() < needed)
            throwRangeError(env, "destination holds " + std::to_string(value.As<Napi::TypedArray>().ElementLength()) +
                                     " elements, fewer than the " + std::to_string(needed) + " it needs");
    }

    /** Queues `job` on a worker; its staged result reaches `destination` on the main thread, checked again. */
    static Napi::Value Run(Napi::Env env, const std::shared_ptr<HeadState>& live, Napi::Value destination, bool argmax,
                           std::function<bool(HeadState&, Staged&, std::string&)> job) {
        auto staged = std::make_shared<Staged>();
        auto* worker = new DecodeWorker(
            env, {destination},
            [live, staged, job](DecodeTimings& timings, std::string& error) {
                std::lock_guard<std::mutex> lock(live->mutex);
                std::lock_guard<std::mutex> compute(computeMutex);
                if (live->disposed) {
                    error = "the head is disposed";
                    return -1;
                }
                live->UseThreads();
                timings.threads = live->activeThreads;
                const auto start = std::chrono::steady_clock::now();
                const bool done = job(*live, *staged, error);
                decodeFinished();
                timings.decodeMilliseconds = millisecondsSince(start);
                // Each row given crossed from the graph whole: its logits and its pre-norm state.
                timings.deviceToHostBytes = static_cast<double>(staged->rows) * (live->vocabulary + live->width) * sizeof(float);
                return done || error.empty() ? 0 : -1;
            },
            [staged, argmax](Napi::Env, const std::vector<Napi::ObjectReference>& references, DecodeTimings& timings) -> std::string {
                Napi::TypedArray array = references[0].Value().As<Napi::TypedArray>();
                const size_t needed = argmax ? staged->ids.size() : staged->logits.size();
                if (array.ElementLength() < needed) return "destination was detached or shrunk while the head drafted";
                if (argmax && needed > 0) std::memcpy(array.As<Napi::Int32Array>().Data(), staged->ids.data(), needed * sizeof(int32_t));
                if (!argmax && needed > 0)
                    std::memcpy(array.As<Napi::Float64Array>().Data(), staged->logits.data(), needed * sizeof(double));
                timings.groups.assign(1, GroupResult{});
                timings.groups[0].deviceToHostBytes = timings.deviceToHostBytes;
                timings.groups[0].error = staged->unavailable;
                return "";
            });
        Napi::Promise promise = worker->Promise();
        worker->Queue();
        return promise;
    }

    /**
     * draft(history, count, destination) → Promise<timings>: the head catches up with a target sequence
     * holding every token of `history` (Int32Array) but the last, the pending one, then gives `count` greedy ids
     * (Int32Array) or the first draft position's logits (Float64Array, count 1). timings.groups[0].error
     * says why there is no draft when the target's layers were not captured for the positions the head
     * needs (its cells were restored from a saved state): the destination is then left as it was.
     */
    Napi::Value Draft(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<HeadState> live = Live(env);
        std::vector<llama_token> history = int32ArrayArgument(env, info[0], "history");
        if (history.empty()) throwRangeError(env, "history must hold at least the pending token");
        if (history.size() > static_cast<size_t>(live->contextSize))
            throwRangeError(env, "history: " + std::to_string(history.size()) + " tokens are more than the head's context of " +
                                     std::to_string(live->contextSize));
        const int32_t limit = std::min(live->vocabulary, live->target.model->vocabularySize);
        for (size_t index = 0; index < history.size(); index++)
            if (history[index] < 0 || history[index] >= limit)
                throwRangeError(env, "history[" + std::to_string(index) + "] = " + std::to_string(history[index]) +
                                         " is outside the vocabulary of " + std::to_string(limit) + " ids");
        const auto length = static_cast<int32_t>(history.size()) - 1;
        const auto count = static_cast<int32_t>(integerArgument(env, info[1], "count", 1, live->contextSize - length));
        bool argmax = true;
        CheckDestination(env, info[2], argmax, static_cast<size_t>(count), *live);
        if (!argmax && count != 1) throwRangeError(env, "count must be 1 for a logit row (drafted tokens follow through next)");
        return Run(env, live, info[2], argmax,
                   [history = std::move(history), length, count, argmax](HeadState& head, Staged& staged, std::string& error) {
                       if (!head.Sync(history, error)) {
                           if (error.empty())
                               staged.unavailable =
                                   "the target's hidden states for positions below " + std::to_string(length) + " were not captured";
                           return false;
                       }
                       int32_t id = 0;
                       if (!argmax) {
                           staged.logits.resize(static_cast<size_t>(head.vocabulary));
                           if (!head.Row(staged.logits.data(), id, error)) return false;
                           staged.rows = 1;
                           return true;
                       }
                       for (int32_t index = 0; index < count; index++) {
                           if (index > 0 && !head.Step(id, error)) return false;
                           if (!head.Row(nullptr, id, error)) return false;
                           staged.ids.push_back(id);
                           staged.rows++;
                       }
                       return true;
                   });
    }

    /** next(token, destination) → Promise<timings>: the drafted `token` at the next position; its row as draft gives it. */
    Napi::Value Next(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<HeadState> live = Live(env);
        const auto token = static_cast<llama_token>(
            integerArgument(env, info[0], "token", 0, std::min(live->vocabulary, live->target.model->vocabularySize) - 1));
        bool argmax = true;
        CheckDestination(env, info[1], argmax, 1, *live);
        return Run(env, live, info[1], argmax, [token, argmax](HeadState& head, Staged& staged, std::string& error) {
            if (head.next < 0) {
                error = "next: no draft is open (call draft first)";
                return false;
            }
            if (head.next >= head.contextSize) {
                error = "next: the EAGLE-3 head's context of " + std::to_string(head.contextSize) + " positions is full";
                return false;
            }
            if (!head.Step(token, error)) return false;
            int32_t id = 0;
            if (!argmax) staged.logits.resize(static_cast<size_t>(head.vocabulary));
            if (!head.Row(argmax ? nullptr : staged.logits.data(), id, error)) return false;
            if (argmax) staged.ids.push_back(id);
            staged.rows = 1;
            return true;
        });
    }

    /** Drops this object's share of the head (freed now, or after the call in flight). Idempotent. */
    Napi::Value Dispose(const Napi::CallbackInfo& info) {
        if (state != nullptr) state->disposed = true;
        state.reset();
        return info.Env().Undefined();
    }
};

TargetResolver Eagle3Head::resolve = nullptr;

} // namespace

void registerEagle3(Napi::Env env, Napi::Object exports, TargetResolver resolve) {
    Eagle3Head::resolve = resolve;
    exports.Set(Eagle3Head::className, Eagle3Head::Define(env));
}

} // namespace specgate
