// Eagle3Head: the N-API class of an EAGLE-3 head (Eagle3HeadState.h), its calls checked on the main
// thread and run on libuv's worker pool, their rows staged in memory the call owns.
#include "Eagle3Head.h"

#include "DecodeWorker.h"
#include "Eagle3Draws.h"
#include "Eagle3HeadArguments.h"
#include "Eagle3HeadGroup.h"
#include "Eagle3HeadState.h"
#include "runtime.h"
#include "validate.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>

namespace specgate {

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

/** What a call writes: greedy ids (an Int32Array), one logit row (a Float64Array), or sampled drafts (ids, sampler rows, logit rows). */
enum class Output { Ids, Row, Drawn };

/** A call's result, staged in memory the call owns until it reaches the destinations on the main thread. */
struct Staged {
    std::vector<int32_t> ids;
    std::vector<double> logits;
    HeadDraws drawn;
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
                               taggedMethod<Eagle3Head, &Eagle3Head::Draft>("draft"),
                               taggedMethod<Eagle3Head, &Eagle3Head::Next>("next"),
                               taggedMethod<Eagle3Head, &Eagle3Head::DraftNow>("draftNow"),
                               taggedMethod<Eagle3Head, &Eagle3Head::NextNow>("nextNow"),
                               taggedMethod<Eagle3Head, &Eagle3Head::DrawDrafts>("drawDrafts"),
                               taggedMethod<Eagle3Head, &Eagle3Head::DrawDraftsNow>("drawDraftsNow"),
                               taggedMethod<Eagle3Head, &Eagle3Head::DrawnAt>("drawnAt"),
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
    std::shared_ptr<Eagle3HeadState> state;
    /** The last drawDrafts with options.keepRows: its sampler rows, read by drawnAt (guarded by the state's mutex). */
    std::shared_ptr<HeadDraws> kept = std::make_shared<HeadDraws>();

    void Create(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<Eagle3HeadState> created = checkHead(env, info[0], info[1], resolve);
        created->sequence =
            static_cast<llama_seq_id>(integerArgument(env, info[2], "sequence", 0, static_cast<int64_t>(created->target.sequences) - 1));
        Napi::Object options = objectArgument(env, info[3], "options");
        const int64_t contextSize = integerArgument(env, options.Get("contextSize"), "options.contextSize", 1, INT32_MAX / 2);
        const int threads = static_cast<int>(integerArgument(env, options.Get("threads"), "options.threads", 1, GGML_MAX_N_THREADS));
        openHeadContext(env, *created, contextSize, threads, 1);
        state = std::move(created);
    }

    std::shared_ptr<Eagle3HeadState> Live(Napi::Env env) const {
        if (state == nullptr) throw Napi::Error::New(env, "the head is disposed");
        return state;
    }

    Napi::Value VocabularySize(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), Live(info.Env())->vocabulary); }

    using Job = std::function<bool(Eagle3HeadState&, Staged&, std::string&)>;

    /** Runs `job` with the head's and the compute lock held; its timings, and the rows' bytes. */
    static int Execute(Eagle3HeadState& live, Staged& staged, const Job& job, DecodeTimings& timings, std::string& error) {
        if (live.disposed) {
            error = "the head is disposed";
            return -1;
        }
        live.UseThreads();
        timings.threads = live.activeThreads;
        const auto start = std::chrono::steady_clock::now();
        const double copied = live.copiedFloats;
        const bool done = job(live, staged, error);
        decodeFinished();
        timings.decodeMilliseconds = millisecondsSince(start);
        // What crossed from the graphs: the encoder's g rows, and each output's logits and pre-norm state.
        timings.deviceToHostBytes = (live.copiedFloats - copied) * sizeof(float);
        return done || error.empty() ? 0 : -1;
    }

    /** Writes the staged results into the destinations (a call that found no draft leaves them as they were). */
    static std::string Deliver(const Staged& staged, Output output, const std::vector<Napi::TypedArray>& arrays, DecodeTimings& timings) {
        const bool fits = !staged.unavailable.empty() || (output == Output::Ids   ? copyInto(arrays[0], staged.ids)
                                                          : output == Output::Row ? copyInto(arrays[0], staged.logits)
                                                                                  : copyInto(arrays[0], staged.drawn.ids) &&
                                                                                        copyInto(arrays[1], staged.drawn.probabilities) &&
                                                                                        copyInto(arrays[2], staged.drawn.logits));
        if (!fits) return "destination was detached or shrunk while the head drafted";
        timings.groups.assign(1, GroupResult{});
        timings.groups[0].deviceToHostBytes = timings.deviceToHostBytes;
        timings.groups[0].error = staged.unavailable;
        return "";
    }

    /**
     * Runs `job` on a worker (a promise; its staged rows reach `destination` on the main thread), or,
     * `now`, on the calling thread: null when another call holds the head or the CPU, which it never waits for.
     */
    static Napi::Value Run(Napi::Env env, const std::shared_ptr<Eagle3HeadState>& live, std::vector<Napi::Value> destinations,
                           Output output, Job job, bool now) {
        auto staged = std::make_shared<Staged>();
        if (now) {
            std::unique_lock<std::mutex> lock(live->mutex, std::try_to_lock);
            if (!lock.owns_lock()) return env.Null();
            std::unique_lock<std::mutex> compute(computeMutex, std::try_to_lock);
            if (!compute.owns_lock()) return env.Null();
            DecodeTimings timings;
            std::string error;
            if (Execute(*live, *staged, job, timings, error) != 0) throw Napi::Error::New(env, error);
            compute.unlock();
            lock.unlock();
            std::vector<Napi::TypedArray> arrays;
            for (const Napi::Value& value : destinations) arrays.push_back(value.As<Napi::TypedArray>());
            const std::string failed = Deliver(*staged, output, arrays, timings);
            if (!failed.empty()) throw Napi::RangeError::New(env, failed);
            return timingsObject(env, timings);
        }
        auto* worker = new DecodeWorker(
            env, destinations,
            [live, staged, job](DecodeTimings& timings, std::string& error) {
                std::lock_guard<std::mutex> lock(live->mutex);
                std::lock_guard<std::mutex> compute(computeMutex);
                return Execute(*live, *staged, job, timings, error);
            },
            [staged, output](Napi::Env, const std::vector<Napi::ObjectReference>& references, DecodeTimings& timings) {
                std::vector<Napi::TypedArray> arrays;
                for (const Napi::ObjectReference& reference : references) arrays.push_back(reference.Value().As<Napi::TypedArray>());
                return Deliver(*staged, output, arrays, timings);
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
    Napi::Value Draft(const Napi::CallbackInfo& info) { return DraftOn(info, false); }

    /** draftNow(…same arguments…) → timings | null: the same on the calling thread, for calls shorter than a thread hop. */
    Napi::Value DraftNow(const Napi::CallbackInfo& info) { return DraftOn(info, true); }

    /** Syncs the head with `history`; false with `staged.unavailable` set when the target's layers for it were not captured. */
    static bool Synced(Eagle3HeadState& head, const std::vector<llama_token>& history, int32_t length, Staged& staged, std::string& error) {
        if (head.Sync(history, error)) return true;
        if (error.empty())
            staged.unavailable = "the target's hidden states for positions below " + std::to_string(length) + " were not captured";
        return false;
    }

    Napi::Value DraftOn(const Napi::CallbackInfo& info, bool now) {
        Napi::Env env = info.Env();
        std::shared_ptr<Eagle3HeadState> live = Live(env);
        std::vector<llama_token> history = HistoryArgument(env, info[0], *live);
        const auto length = static_cast<int32_t>(history.size()) - 1;
        const auto count = static_cast<int32_t>(integerArgument(env, info[1], "count", 1, live->contextSize - length));
        bool argmax = true;
        CheckDestination(env, info[2], argmax, static_cast<size_t>(count), *live);
        if (!argmax && count != 1) throwRangeError(env, "count must be 1 for a logit row (drafted tokens follow through next)");
        return Run(
            env, live, {info[2]}, argmax ? Output::Ids : Output::Row,
            [history = std::move(history), length, count, argmax](Eagle3HeadState& head, Staged& staged, std::string& error) {
                if (!Synced(head, history, length, staged, error)) return false;
                int32_t id = 0;
                if (!argmax) {
                    staged.logits.resize(static_cast<size_t>(head.vocabulary));
                    if (!head.Row(staged.logits.data(), id, error)) return false;
                    return true;
                }
                for (int32_t index = 0; index < count; index++) {
                    if (index > 0 && !head.Step(id, error)) return false;
                    if (!head.Row(nullptr, id, error)) return false;
                    staged.ids.push_back(id);
                }
                return true;
            },
            now);
    }

    /**
     * drawDrafts(history, uniforms, options, ids, probabilities, logits) → Promise<timings>: the head catches
     * up as draft does, then draws uniforms.length tokens (Eagle3Draws.h), each from the sampler row of its
     * logits over ids [0, options.size) with options.sampling, with one uniform each, stopping early where a
     * row's top probability is below options.minConfidence. Writes the ids (−1 past the draft's end) and,
     * options.size values per token, the sampler rows and the logits.
     */
    Napi::Value DrawDrafts(const Napi::CallbackInfo& info) { return DrawOn(info, false); }

    /** drawDraftsNow(…same arguments…) → timings | null: the same on the calling thread. */
    Napi::Value DrawDraftsNow(const Napi::CallbackInfo& info) { return DrawOn(info, true); }

    Napi::Value DrawOn(const Napi::CallbackInfo& info, bool now) {
        Napi::Env env = info.Env();
        std::shared_ptr<Eagle3HeadState> live = Live(env);
        std::vector<llama_token> history = HistoryArgument(env, info[0], *live);
        const auto length = static_cast<int32_t>(history.size()) - 1;
        std::vector<double> uniforms = uniformsArgument(env, info[1], "uniforms", *live, history.size());
        HeadDrawSettings settings = DrawSettingsArgument(env, info[2], *live);
        settings.withoutLogits = keepRowsArgument(env, info[2], "options");
        const size_t rows = settings.withoutLogits ? uniforms.size() : uniforms.size() * settings.size;
        std::vector<Napi::Value> destinations{ArrayArgument(env, info[3], "ids", napi_int32_array, uniforms.size()),
                                              ArrayArgument(env, info[4], "probabilities", napi_float64_array, rows),
                                              ArrayArgument(env, info[5], "logits", napi_float64_array, settings.withoutLogits ? 0 : rows)};
        return Run(
            env, live, std::move(destinations), Output::Drawn,
            [history = std::move(history), length, uniforms = std::move(uniforms), settings,
             kept = kept](Eagle3HeadState& head, Staged& staged, std::string& error) {
                if (!settings.withoutLogits)
                    return Synced(head, history, length, staged, error) && drawDrafts(head, settings, uniforms, staged.drawn, error);
                kept->ids.clear();
                if (!Synced(head, history, length, staged, error) || !drawDrafts(head, settings, uniforms, *kept, error)) return false;
                staged.drawn.ids = kept->ids;
                staged.drawn.probabilities = drawnProbabilities(*kept);
                return true;
            },
            now);
    }

    /**
     * drawnAt(row, ids: Int32Array | null, destination: Float64Array) → undefined: the sampler row `row` of
     * the last drawDrafts with options.keepRows, at `ids` (one value each, 0 outside the rows' ids) or, with
     * null, whole; read from the rows that draw kept, on the calling thread.
     */
    Napi::Value DrawnAt(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<Eagle3HeadState> live = Live(env);
        readDrawnAt(env, *kept, live->mutex, info[0], info[1], info[2], live->contextSize);
        return env.Undefined();
    }

    /** next(token, destination) → Promise<timings>: the drafted `token` at the next position; its row as draft gives it. */
    Napi::Value Next(const Napi::CallbackInfo& info) { return NextOn(info, false); }

    /** nextNow(…same arguments…) → timings | null: the same on the calling thread. */
    Napi::Value NextNow(const Napi::CallbackInfo& info) { return NextOn(info, true); }

    Napi::Value NextOn(const Napi::CallbackInfo& info, bool now) {
        Napi::Env env = info.Env();
        std::shared_ptr<Eagle3HeadState> live = Live(env);
        const auto token = static_cast<llama_token>(
            integerArgument(env, info[0], "token", 0, std::min(live->vocabulary, live->target.model->vocabularySize) - 1));
        bool argmax = true;
        CheckDestination(env, info[1], argmax, 1, *live);
        return Run(
            env, live, {info[1]}, argmax ? Output::Ids : Output::Row,
            [token, argmax](Eagle3HeadState& head, Staged& staged, std::string& error) {
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
                return true;
            },
            now);
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
    registerEagle3Group(env, exports, resolve);
}

} // namespace specgate
