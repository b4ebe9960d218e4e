// GrammarJob: one piece of grammar work that may run for long (converting a JSON schema, building a
// grammar's first stacks) on a thread of its own, settling a promise on the JS thread when it ends.
//
// Such work cannot be interrupted once it is inside llama.cpp, so it runs on a detached thread rather
// than on libuv's worker pool (whose few threads the decodes need): a caller that stops waiting (a time
// budget, a shutdown) drops the promise, the thread finishes on its own and its result is freed. The
// thread keeps no reference on the event loop, so Node may exit while one runs; an exit that runs static
// destructors (llama.cpp's, the C++ runtime's, Node's) under a running job would be a use after free, so
// such an exit must skip them (exitWhileGrammarJobsRun, which src/backend/nativeAddon.ts calls from
// process "exit"). What a job uses it co-owns: the model's handle is a shared_ptr held by the job until
// its result is freed, so disposing of the model meanwhile only defers its release. At most `maxJobs` run at
// once, abandoned ones included: a job beyond that is refused at once (an Error whose code is
// "grammar_jobs_busy"), so hostile requests cannot pile up threads.
#pragma once

#include <napi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace specgate {

/** Grammar jobs whose work is still running, abandoned or not (process-wide): what `maxJobs` caps. */
inline std::atomic<int> runningGrammarJobs{0};

/**
 * Grammar job threads not yet ended: a job's thread still touches Node and the addon after its work
 * (handing the result over), so an exit must wait for this count, not runningGrammarJobs, to be 0.
 */
inline std::atomic<int> liveGrammarThreads{0};

/**
 * What a job's thread computes: `run` returns an error message (empty on success), and may name its
 * code in `code`, on the job's thread; `settle` turns the success into a JS value on the JS thread.
 */
struct GrammarJobBody {
    std::function<std::string(std::string& code)> run;
    std::function<Napi::Value(Napi::Env)> settle;
};

namespace grammarJobDetail {

struct Pending {
    Napi::Promise::Deferred deferred;
    GrammarJobBody body;
    std::string error;
    std::string code;
};

inline void settleOnJsThread(Napi::Env env, Napi::Function /*unused*/, void* /*context*/, Pending* pending) {
    std::unique_ptr<Pending> owned(pending);
    if (env == nullptr) return;
    try {
        if (!owned->error.empty()) {
            Napi::Error error = Napi::Error::New(env, owned->error);
            if (!owned->code.empty()) error.Set("code", Napi::String::New(env, owned->code));
            owned->deferred.Reject(error.Value());
            return;
        }
        owned->deferred.Resolve(owned->body.settle(env));
    } catch (const Napi::Error& error) {
        owned->deferred.Reject(error.Value());
    } catch (const std::exception& error) {
        owned->deferred.Reject(Napi::Error::New(env, error.what()).Value());
    }
}

using Channel = Napi::TypedThreadSafeFunction<void, Pending, settleOnJsThread>;

} // namespace grammarJobDetail

/** Starts `body` on a thread of its own (or refuses it: more than `maxJobs` running); the promise settles with its result. */
inline Napi::Promise startGrammarJob(Napi::Env env, int maxJobs, GrammarJobBody body) {
    using namespace grammarJobDetail;
    auto pending = std::make_unique<Pending>(Pending{Napi::Promise::Deferred::New(env), std::move(body), {}, {}});
    Napi::Promise promise = pending->deferred.Promise();
    if (runningGrammarJobs.fetch_add(1) >= maxJobs) {
        runningGrammarJobs.fetch_sub(1);
        Napi::Error error = Napi::Error::New(env, std::to_string(maxJobs) + " grammar jobs are running already; try again later");
        error.Set("code", Napi::String::New(env, "grammar_jobs_busy"));
        pending->deferred.Reject(error.Value());
        return promise;
    }
    Channel channel;
    try {
        channel = Channel::New(env, "specgate.grammar", 0, 1);
        channel.Unref(env);
    } catch (...) {
        runningGrammarJobs.fetch_sub(1);
        throw;
    }
    liveGrammarThreads.fetch_add(1);
    std::thread([channel, job = pending.release()]() mutable {
        try {
            job->error = job->body.run(job->code);
        } catch (const std::exception& error) {
            job->error = error.what();
        } catch (...) {
            job->error = "the grammar job failed with an unknown exception";
        }
        if (job->error.empty() && !job->body.settle) job->error = "the grammar job has no result";
        // Before the result is handed over: a caller that sees it may start the next job at once.
        runningGrammarJobs.fetch_sub(1);
        // The environment may be gone (Node exiting): the job is then only freed.
        if (channel.BlockingCall(job) != napi_ok) delete job;
        channel.Release();
        // Last: once no thread counts as live, exitWhileGrammarJobsRun lets the process exit normally,
        // so nothing of the addon, Node or llama.cpp may be touched from here on.
        liveGrammarThreads.fetch_sub(1);
    }).detach();
    return promise;
}

} // namespace specgate
