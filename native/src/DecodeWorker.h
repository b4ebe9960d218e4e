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
    std::string error;
};

/** Native wall time of one decode, by part: llama_decode for the whole batch, then each output group's rows. */
struct DecodeTimings {
    double decodeMilliseconds = 0;
    double transferMilliseconds = 0;
    double samplingMilliseconds = 0;
    /** The threads llama_decode computed with (fewer than requested under contention: threadsForDecode). */
    int threads = 0;
    std::vector<GroupResult> groups;
};

inline Napi::Object timingsObject(Napi::Env env, const DecodeTimings& timings) {
    Napi::Object result = Napi::Object::New(env);
    result.Set("decodeMilliseconds", timings.decodeMilliseconds);
    result.Set("transferMilliseconds", timings.transferMilliseconds);
    result.Set("samplingMilliseconds", timings.samplingMilliseconds);
    result.Set("threads", timings.threads);
    Napi::Array groups = Napi::Array::New(env, timings.groups.size());
    for (size_t index = 0; index < timings.groups.size(); index++) {
        Napi::Object group = Napi::Object::New(env);
        group.Set("transferMilliseconds", timings.groups[index].transferMilliseconds);
        group.Set("samplingMilliseconds", timings.groups[index].samplingMilliseconds);
        if (!timings.groups[index].error.empty()) group.Set("error", timings.groups[index].error);
        groups.Set(static_cast<uint32_t>(index), group);
    }
    result.Set("groups", groups);
    return result;
}

/**
 * Runs `job` off the main thread (it returns 0 or fills `error`); the job holds what it computes with.
 * The objects in `keepAlive` (the destination typed arrays) stay referenced until the promise settles;
 * JS must not touch (or detach) a destination before then.
 */
class DecodeWorker : public Napi::AsyncWorker {
public:
    using Job = std::function<int(DecodeTimings&, std::string&)>;

    DecodeWorker(Napi::Env env, std::vector<Napi::Value> keepAlive, Job job)
        : Napi::AsyncWorker(env, "specgate.decode"), deferred(Napi::Promise::Deferred::New(env)), job(std::move(job)) {
        for (const Napi::Value& value : keepAlive)
            if (value.IsObject()) references.push_back(Napi::Persistent(value.As<Napi::Object>()));
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
    void OnOK() override { deferred.Resolve(timingsObject(Env(), timings)); }
    void OnError(const Napi::Error& error) override { deferred.Reject(error.Value()); }

private:
    Napi::Promise::Deferred deferred;
    Job job;
    std::vector<Napi::ObjectReference> references;
    DecodeTimings timings;
};

} // namespace specgate
