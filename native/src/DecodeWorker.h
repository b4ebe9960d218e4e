// DecodeWorker: one decode on libuv's worker pool, settling a promise with its native timings.
#pragma once

#include <napi.h>

#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace specgate {

/** What one output group of a decode cost, and why it failed (empty: it did not). */
struct GroupResult {
    double transferMilliseconds = 0;
    double samplingMilliseconds = 0;
    /** Bytes of this group's rows copied out of the graph's output (logit rows, device-selected ids). */
    double deviceToHostBytes = 0;
    /** Drawn rows whose ids were drawn on the host from copied logits (not on the device). */
    uint32_t hostRows = 0;
    std::string error;
};

/** Native wall time of one decode, by part: llama_decode for the whole batch, then each output group's rows. */
struct DecodeTimings {
    double decodeMilliseconds = 0;
    double transferMilliseconds = 0;
    double samplingMilliseconds = 0;
    double deviceToHostBytes = 0;
    /** The threads llama_decode computed with (fewer than requested under contention: threadsForDecode). */
    int threads = 0;
    std::vector<GroupResult> groups;
};

inline Napi::Object timingsObject(Napi::Env env, const DecodeTimings& timings) {
    Napi::Object result = Napi::Object::New(env);
    result.Set("decodeMilliseconds", timings.decodeMilliseconds);
    result.Set("transferMilliseconds", timings.transferMilliseconds);
    result.Set("samplingMilliseconds", timings.samplingMilliseconds);
    result.Set("deviceToHostBytes", timings.deviceToHostBytes);
    result.Set("threads", timings.threads);
    Napi::Array groups = Napi::Array::New(env, timings.groups.size());
    for (size_t index = 0; index < timings.groups.size(); index++) {
        Napi::Object group = Napi::Object::New(env);
        group.Set("transferMilliseconds", timings.groups[index].transferMilliseconds);
        group.Set("samplingMilliseconds", timings.groups[index].samplingMilliseconds);
        group.Set("deviceToHostBytes", timings.groups[index].deviceToHostBytes);
        group.Set("hostRows", timings.groups[index].hostRows);
        if (!timings.groups[index].error.empty()) group.Set("error", timings.groups[index].error);
        groups.Set(static_cast<uint32_t>(index), group);
    }
    result.Set("groups", groups);
    return result;
}

/**
 * Runs `job` off the main thread (it returns 0 or fills `error`), then, on the main thread, `deliver`,
 * which hands the results to the JS objects in `destinations` (the typed arrays the rows go to), kept
 * referenced until the promise settles. The job computes only with memory the addon owns: JS may
 * detach or shrink a destination's buffer at any time, so `deliver` checks each one again before it
 * writes; its error message (empty: none) rejects the promise with a RangeError.
 */
class DecodeWorker : public Napi::AsyncWorker {
public:
    using Job = std::function<int(DecodeTimings&, std::string&)>;
    using Deliver = std::function<std::string(Napi::Env, const std::vector<Napi::ObjectReference>&, DecodeTimings&)>;

    DecodeWorker(Napi::Env env, std::vector<Napi::Value> destinations, Job job, Deliver deliver)
        : Napi::AsyncWorker(env, "specgate.decode"), deferred(Napi::Promise::Deferred::New(env)), job(std::move(job)),
          deliver(std::move(deliver)) {
        for (const Napi::Value& value : destinations) references.push_back(Napi::Persistent(value.As<Napi::Object>()));
    }

    Napi::Promise Promise() { return deferred.Promise(); }

protected:
    void Execute() override {
        // Nothing may escape a worker thread: a C++ exception rejects the promise instead.
        try {
            std::string error;
            if (job(timings, error) != 0) SetError(error);
        } catch (const std::exception& exception) {
            SetError(exception.what());
        } catch (...) {
            SetError("the decode failed with an unknown exception");
        }
    }
    void OnOK() override {
        std::string error;
        try {
            error = deliver(Env(), references, timings);
        } catch (const std::exception& exception) {
            error = exception.what();
        }
        if (!error.empty()) {
            deferred.Reject(Napi::RangeError::New(Env(), error).Value());
            return;
        }
        deferred.Resolve(timingsObject(Env(), timings));
    }
    void OnError(const Napi::Error& error) override { deferred.Reject(error.Value()); }

private:
    Napi::Promise::Deferred deferred;
    Job job;
    Deliver deliver;
    std::vector<Napi::ObjectReference> references;
    DecodeTimings timings;
};

} // namespace specgate
