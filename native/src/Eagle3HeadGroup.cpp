// Eagle3HeadGroup: the N-API class of a head context shared by a target's slots (Eagle3BatchDraft.h),
// its calls checked on the main thread and run on libuv's worker pool, one at a time.
#include "Eagle3HeadGroup.h"

#include "DecodeWorker.h"
#include "Eagle3BatchDraft.h"
#include "Eagle3HeadArguments.h"
#include "Eagle3HeadState.h"
#include "runtime.h"
#include "validate.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>

namespace specgate {

namespace {

/** The group's head sequences, each an Eagle3HeadState on the first one's context, and which of them are open. */
struct GroupState {
    std::vector<std::shared_ptr<Eagle3HeadState>> slots;
    /** Each slot's last draw with options.keepRows: its sampler rows, read by drawnAt (guarded by `keptMutex`, never by a call). */
    std::vector<HeadDraws> kept;
    std::mutex keptMutex;
    std::vector<bool> open;
    std::mutex mutex; // one call at a time
    std::atomic<bool> disposed{false};

    Eagle3HeadState& Batch() { return *slots[0]; }

    double CopiedFloats() const {
        double total = 0;
        for (const auto& slot : slots) total += slot->copiedFloats;
        return total;
    }
};

/** A draft request's destinations: ids (Ids), one row (Row), or ids, sampler rows and logits (Drawn). */
struct Destinations {
    std::vector<Napi::Value> values;
    std::vector<size_t> first; // each request's first value
};

/** llama.cpp's LLAMA_MAX_SEQ: the sequences one context holds at most. */
constexpr int64_t maxSlots = 256;

class Eagle3HeadGroup : public Napi::ObjectWrap<Eagle3HeadGroup> {
public:
    static constexpr napi_type_tag typeTag{0x2f4c6e8a0b1d3f57, 0x7a9c1e3f5b7d9f13};
    static constexpr const char* className = "Eagle3HeadGroup";
    static TargetResolver resolve;

    static Napi::Function Define(Napi::Env env) {
        return DefineClass(env, className,
                           {
                               taggedGetter<Eagle3HeadGroup, &Eagle3HeadGroup::VocabularySize>("vocabularySize"),
                               taggedGetter<Eagle3HeadGroup, &Eagle3HeadGroup::Slots>("slots"),
                               taggedMethod<Eagle3HeadGroup, &Eagle3HeadGroup::Open>("open"),
                               taggedMethod<Eagle3HeadGroup, &Eagle3HeadGroup::Close>("close"),
                               taggedMethod<Eagle3HeadGroup, &Eagle3HeadGroup::Draft>("draft"),
                               taggedMethod<Eagle3HeadGroup, &Eagle3HeadGroup::Next>("next"),
                               taggedMethod<Eagle3HeadGroup, &Eagle3HeadGroup::DrawnAt>("drawnAt"),
                               taggedMethod<Eagle3HeadGroup, &Eagle3HeadGroup::Dispose>("dispose"),
                           });
    }

    /** new Eagle3HeadGroup(model: NativeModel (eagle3), target: NativeContext (captureLayers), {contextSize, threads, slots}). */
    explicit Eagle3HeadGroup(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Eagle3HeadGroup>(info) {
        constructing(info.Env(), [&] { Create(info); });
        info.This().As<Napi::Object>().TypeTag(&typeTag);
    }

private:
    std::shared_ptr<GroupState> state;

    void Create(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<Eagle3HeadState> first = checkHead(env, info[0], info[1], resolve);
        Napi::Object options = objectArgument(env, info[2], "options");
        const int64_t contextSize = integerArgument(env, options.Get("contextSize"), "options.contextSize", 1, INT32_MAX / 2);
        const int threads = static_cast<int>(integerArgument(env, options.Get("threads"), "options.threads", 1, GGML_MAX_N_THREADS));
        const auto slots = static_cast<uint32_t>(
            integerArgument(env, options.Get("slots"), "options.slots", 1, std::min<int64_t>(first->target.sequences, maxSlots)));
        if (contextSize * slots > INT32_MAX / 2)
            throwRangeError(env,
                            "options.contextSize × options.slots = " + std::to_string(contextSize * slots) + " positions are too many");
        openHeadContext(env, *first, contextSize, threads, slots);
        auto created = std::make_shared<GroupState>();
        created->slots.push_back(first);
        for (uint32_t slot = 1; slot < slots; slot++) {
            auto shared = std::make_shared<Eagle3HeadState>();
            shared->model = first->model;
            shared->target = first->target;
            shared->context = first->context;
            shared->ownsContext = false;
            shared->slot = static_cast<llama_seq_id>(slot);
            shared->width = first->width;
            shared->vocabulary = first->vocabulary;
            shared->contextSize = first->contextSize;
            shared->threads = first->threads;
            shared->activeThreads = first->activeThreads;
            created->slots.push_back(shared);
        }
        created->open.assign(slots, false);
        created->kept.resize(slots);
        state = std::move(created);
    }

    std::shared_ptr<GroupState> Live(Napi::Env env) const {
        if (state == nullptr) throw Napi::Error::New(env, "the head group is disposed");
        return state;
    }

    Napi::Value VocabularySize(const Napi::CallbackInfo& info) {
        return Napi::Number::New(info.Env(), Live(info.Env())->Batch().vocabulary);
    }

    Napi::Value Slots(const Napi::CallbackInfo& info) {
        return Napi::Number::New(info.Env(), static_cast<double>(Live(info.Env())->slots.size()));
    }

    /** An open slot's index, or a RangeError naming `name`. */
    static size_t SlotArgument(Napi::Env env, Napi::Value value, const std::string& name, const GroupState& live) {
        const auto slot = static_cast<size_t>(integerArgument(env, value, name, 0, static_cast<int64_t>(live.slots.size()) - 1));
        if (!live.open[slot]) throwRangeError(env, name + ": slot " + std::to_string(slot) + " is not open");
        return slot;
    }

    /**
     * open(targetSequence) → slot: a free head sequence drafting for `targetSequence` of the target,
     * holding nothing of any earlier request. A RangeError when every slot is open.
     */
    Napi::Value Open(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<GroupState> live = Live(env);
        const auto sequence = static_cast<llama_seq_id>(
            integerArgument(env, info[0], "targetSequence", 0, static_cast<int64_t>(live->Batch().target.sequences) - 1));
        for (size_t slot = 0; slot < live->open.size(); slot++) {
            if (live->open[slot]) continue;
            live->open[slot] = true;
            // A call of the slot's last request may still be queued: it reads the new sequence's rows, finds
            // they are not its history's, and drafts nothing.
            live->slots[slot]->sequence = sequence;
            live->slots[slot]->reset = true;
            {
                std::lock_guard<std::mutex> lock(live->keptMutex);
                live->kept[slot] = HeadDraws{};
            }
            return Napi::Number::New(env, static_cast<double>(slot));
        }
        throwRangeError(env, "all " + std::to_string(live->open.size()) + " slots of the head group are open");
    }

    /** close(slot): frees the slot; what its head sequence holds is dropped before its next request drafts. Idempotent. */
    Napi::Value Close(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<GroupState> live = Live(env);
        const auto slot = static_cast<size_t>(integerArgument(env, info[0], "slot", 0, static_cast<int64_t>(live->slots.size()) - 1));
        live->open[slot] = false;
        live->slots[slot]->reset = true;
        return env.Undefined();
    }

    using Job = std::function<bool(GroupState&, std::string&)>;

    /** Runs `job` on a worker with the group's and the compute lock held (a promise); `deliver` then writes its results. */
    static Napi::Value Run(Napi::Env env, const std::shared_ptr<GroupState>& live, std::vector<Napi::Value> destinations, Job job,
                           std::function<std::string(const std::vector<Napi::TypedArray>&, DecodeTimings&)> deliver) {
        auto* worker = new DecodeWorker(
            env, std::move(destinations),
            [live, job = std::move(job)](DecodeTimings& timings, std::string& error) {
                std::lock_guard<std::mutex> lock(live->mutex);
                std::lock_guard<std::mutex> compute(computeMutex);
                if (live->disposed) {
                    error = "the head group is disposed";
                    return -1;
                }
                Eagle3HeadState& batch = live->Batch();
                batch.UseThreads();
                timings.threads = batch.activeThreads;
                const auto start = std::chrono::steady_clock::now();
                const double copied = live->CopiedFloats();
                const bool done = job(*live, error);
                decodeFinished();
                timings.decodeMilliseconds = millisecondsSince(start);
                timings.deviceToHostBytes = (live->CopiedFloats() - copied) * sizeof(float);
                return done ? 0 : -1;
            },
            [deliver = std::move(deliver)](Napi::Env, const std::vector<Napi::ObjectReference>& references, DecodeTimings& timings) {
                std::vector<Napi::TypedArray> arrays;
                for (const Napi::ObjectReference& reference : references) arrays.push_back(reference.Value().As<Napi::TypedArray>());
                return deliver(arrays, timings);
            });
        Napi::Promise promise = worker->Promise();
        worker->Queue();
        return promise;
    }

    /** One request of draft: its slot's history and what it asks for, its destinations appended to `destinations`. */
    static SlotDraft RequestArgument(Napi::Env env, Napi::Value value, const std::string& name, GroupState& live, std::vector<bool>& taken,
                                     Destinations& destinations) {
        Napi::Object request = objectArgument(env, value, name);
        const size_t slot = SlotArgument(env, request.Get("slot"), name + ".slot", live);
        if (taken[slot]) throwRangeError(env, name + ".slot: slot " + std::to_string(slot) + " is asked for twice");
        taken[slot] = true;
        SlotDraft draft;
        draft.head = live.slots[slot].get();
        const Eagle3HeadState& head = *draft.head;
        draft.history = HistoryArgument(env, request.Get("history"), head);
        const auto length = static_cast<int32_t>(draft.history.size()) - 1;
        destinations.first.push_back(destinations.values.size());
        if (!request.Get("uniforms").IsUndefined()) {
            draft.uniforms = uniformsArgument(env, request.Get("uniforms"), name + ".uniforms", head, draft.history.size());
            draft.settings = DrawSettingsArgument(env, request.Get("options"), head);
            draft.settings.withoutLogits = keepRowsArgument(env, request.Get("options"), name + ".options");
            draft.kind = SlotDraft::Kind::Drawn;
            const size_t rows = draft.uniforms.size() * (draft.settings.withoutLogits ? 1 : draft.settings.size);
            destinations.values.push_back(ArrayArgument(env, request.Get("ids"), name + ".ids", napi_int32_array, draft.uniforms.size()));
            destinations.values.push_back(
                ArrayArgument(env, request.Get("probabilities"), name + ".probabilities", napi_float64_array, rows));
            destinations.values.push_back(
                ArrayArgument(env, request.Get("logits"), name + ".logits", napi_float64_array, draft.settings.withoutLogits ? 0 : rows));
            return draft;
        }
        draft.count = static_cast<int32_t>(integerArgument(env, request.Get("count"), name + ".count", 1, head.contextSize - length));
        bool argmax = true;
        CheckDestination(env, request.Get("destination"), argmax, static_cast<size_t>(draft.count), head);
        if (!argmax && draft.count != 1)
            throwRangeError(env, name + ".count must be 1 for a logit row (drafted tokens follow through next)");
        draft.kind = argmax ? SlotDraft::Kind::Ids : SlotDraft::Kind::Row;
        destinations.values.push_back(request.Get("destination"));
        return draft;
    }

    /**
     * draft(requests) → Promise<timings>: each request ({slot, history, count, destination}, as
     * Eagle3Head.draft, or {slot, history, uniforms, options, ids, probabilities, logits}, as drawDrafts)
     * drafts for its own open slot, all of them in shared decodes. timings.groups[i] is request i's:
     * its error says why it has no draft (its destinations are then left as they were).
     */
    Napi::Value Draft(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<GroupState> live = Live(env);
        if (!info[0].IsArray()) throwTypeError(env, "requests must be an array");
        Napi::Array given = info[0].As<Napi::Array>();
        if (given.Length() < 1 || given.Length() > live->slots.size())
            throwRangeError(env, "requests must hold 1 to " + std::to_string(live->slots.size()) + " requests, got " +
                                     std::to_string(given.Length()));
        auto drafts = std::make_shared<std::vector<SlotDraft>>();
        std::vector<bool> taken(live->slots.size(), false);
        Destinations destinations;
        for (uint32_t index = 0; index < given.Length(); index++)
            drafts->push_back(
                RequestArgument(env, given.Get(index), "requests[" + std::to_string(index) + "]", *live, taken, destinations));
        return Run(
            env, live, destinations.values,
            [drafts](GroupState& group, std::string& error) {
                if (!draftTogether(group.Batch(), *drafts, error)) {
                    for (SlotDraft& draft : *drafts) draft.head->next = -1;
                    return false;
                }
                Keep(group, *drafts);
                return true;
            },
            [drafts, first = destinations.first](const std::vector<Napi::TypedArray>& arrays, DecodeTimings& timings) {
                timings.groups.assign(drafts->size(), GroupResult{});
                for (size_t index = 0; index < drafts->size(); index++) {
                    const SlotDraft& draft = (*drafts)[index];
                    timings.groups[index].error = draft.unavailable;
                    if (!draft.unavailable.empty()) continue;
                    const size_t at = first[index];
                    const bool fits = draft.kind == SlotDraft::Kind::Ids ? copyInto(arrays[at], draft.ids)
                                      : draft.kind == SlotDraft::Kind::Row
                                          ? copyInto(arrays[at], draft.logits)
                                          : copyInto(arrays[at], draft.drawn.ids) && copyInto(arrays[at + 1], draft.drawn.probabilities) &&
                                                copyInto(arrays[at + 2], draft.drawn.logits);
                    if (!fits)
                        return std::string("requests[") + std::to_string(index) +
                               "]: a destination was detached or shrunk while the head drafted";
                }
                return std::string();
            });
    }

    /** Moves the rows of the draws made with keepRows to their slots' kept draws; the draws then write ids and q(x). */
    static void Keep(GroupState& group, std::vector<SlotDraft>& drafts) {
        for (SlotDraft& draft : drafts) {
            if (draft.kind != SlotDraft::Kind::Drawn || !draft.settings.withoutLogits) continue;
            const auto slot = static_cast<size_t>(draft.head->slot);
            std::vector<double> probabilities = drawnProbabilities(draft.drawn);
            std::lock_guard<std::mutex> lock(group.keptMutex);
            group.kept[slot] = std::move(draft.drawn);
            draft.drawn.ids = group.kept[slot].ids;
            draft.drawn.probabilities = std::move(probabilities);
        }
    }

    /**
     * drawnAt(slot, row, ids: Int32Array | null, destination: Float64Array) → undefined: the sampler row
     * `row` of the slot's last draw with options.keepRows, at `ids` or, with null, whole, as
     * Eagle3Head.drawnAt; on the calling thread, never waiting for a call.
     */
    Napi::Value DrawnAt(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<GroupState> live = Live(env);
        const size_t slot = SlotArgument(env, info[0], "slot", *live);
        readDrawnAt(env, live->kept[slot], live->keptMutex, info[1], info[2], info[3], live->slots[slot]->contextSize);
        return env.Undefined();
    }

    /** next(slot, token, destination) → Promise<timings>: the drafted `token` at the slot's next position, as Eagle3Head.next. */
    Napi::Value Next(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        std::shared_ptr<GroupState> live = Live(env);
        const size_t slot = SlotArgument(env, info[0], "slot", *live);
        Eagle3HeadState& head = *live->slots[slot];
        const auto token = static_cast<llama_token>(
            integerArgument(env, info[1], "token", 0, std::min(head.vocabulary, head.target.model->vocabularySize) - 1));
        bool argmax = true;
        CheckDestination(env, info[2], argmax, 1, head);
        auto staged = std::make_shared<std::vector<double>>();
        auto id = std::make_shared<std::vector<int32_t>>();
        return Run(
            env, live, {info[2]},
            [slot, token, argmax, staged, id](GroupState& group, std::string& error) {
                Eagle3HeadState& head = *group.slots[slot];
                if (head.next < 0) {
                    error = "next: no draft is open (call draft first)";
                    return false;
                }
                if (head.next >= head.contextSize) {
                    error = "next: the EAGLE-3 head's context of " + std::to_string(head.contextSize) + " positions is full";
                    return false;
                }
                if (!head.Step(token, error)) return false;
                int32_t best = 0;
                if (!argmax) staged->resize(static_cast<size_t>(head.vocabulary));
                if (!head.Row(argmax ? nullptr : staged->data(), best, error)) return false;
                if (argmax) id->push_back(best);
                return true;
            },
            [staged, id, argmax](const std::vector<Napi::TypedArray>& arrays, DecodeTimings& timings) {
                timings.groups.assign(1, GroupResult{});
                const bool fits = argmax ? copyInto(arrays[0], *id) : copyInto(arrays[0], *staged);
                return fits ? std::string() : std::string("destination was detached or shrunk while the head drafted");
            });
    }

    /** Drops this object's share of the group (freed now, or after the call in flight). Idempotent. */
    Napi::Value Dispose(const Napi::CallbackInfo& info) {
        if (state != nullptr) state->disposed = true;
        state.reset();
        return info.Env().Undefined();
    }
};

TargetResolver Eagle3HeadGroup::resolve = nullptr;

} // namespace

void registerEagle3Group(Napi::Env env, Napi::Object exports, TargetResolver resolve) {
    Eagle3HeadGroup::resolve = resolve;
    exports.Set(Eagle3HeadGroup::className, Eagle3HeadGroup::Define(env));
}

} // namespace specgate
