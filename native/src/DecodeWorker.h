// DecodeWorker: one decode on libuv's worker pool, settling a promise with its native timings.
#pragma once

#include <napi.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace specgate {

/** Native wall time of one decode, by part. */
struct DecodeTimings {
    double decodeMilliseconds = 0;
    double transferMilliseconds = 0;
    double samplingMilliseconds = 0;
};

inline Napi::Object timingsObject(Napi::Env env, const DecodeTimings& timings) {
    Napi::Object result = Napi::Object::New(env);
    result.Set("decodeMilliseconds", timings.decodeMilliseconds);
    result.Set("transferMilliseconds", timings.transferMilliseconds);
    result.Set("samplingMilliseconds", timings.samplingMilliseconds);
    return result;
}

/**
 * Runs `job` off the main thread (it returns 0 or fills `error`). The objects in `keepAlive` (the
 * context, the destination typed array) stay referenced until the promise settles; JS must not touch
 * the destination before then.
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
        std::string error;
        if (job(timings, error) != 0) SetError(error);
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
