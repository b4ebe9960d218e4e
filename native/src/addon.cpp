// specgate's native backend: the hot path of decoding (llama_decode on a multi-sequence batch, logit
// rows written into caller-owned typed arrays, sampler rows, argmax, KV-cache removal) in a small
// Node-API addon built against the llama.cpp release bundled in node-llama-cpp. Everything else —
// tokenizer identity, policies, the speculative loop — stays in TypeScript (src/backend/NativeBackend.ts).
// This file: NativeContext (a llama_context and its decodes) and the module's exports.
//
// Threading: decodes run on libuv's worker pool (Napi::AsyncWorker) and are serialised by one
// process-wide mutex, because on a CPU two graphs computed at once only compete for the same
// cores. Contexts compute on persistent ggml threadpools, one per thread count (ggml built without OpenMP),
// so threads are created once and not per call, and a decode may start on any worker thread.
#include <napi.h>

#include <llama.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>

#include "DecodeWorker.h"
#include "NativeModel.h"
#include "runtime.h"
#include "samplerRow.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace specgate {
namespace {

enum class OutputMode { None = 0, Logits = 1, Argmax = 2, Distribution = 3 };

class NativeContext : public Napi::ObjectWrap<NativeContext> {
public:
    /** Run's result when it was told not to wait and another decode holds the CPU. */
    static constexpr int busy = -100;

    static Napi::Function Define(Napi::Env env) {
        return DefineClass(env, "NativeContext", {
            InstanceMethod<&NativeContext::Decode>("decode"),
            InstanceMethod<&NativeContext::DecodeNow>("decodeNow"),
            InstanceMethod<&NativeContext::RemoveTokens>("removeTokens"),
            InstanceMethod<&NativeContext::Clear>("clear"),
            InstanceMethod<&NativeContext::Dispose>("dispose"),
        });
    }

    /** new NativeContext(model, {contextSize, sequences, batchSize, threads, unified?}) */
    explicit NativeContext(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeContext>(info) {
        Napi::Env env = info.Env();
        Napi::Object modelObject = info[0].As<Napi::Object>();
        NativeModel* owner = Napi::ObjectWrap<NativeModel>::Unwrap(modelObject);
        if (owner->Model() == nullptr) {
            Napi::Error::New(env, "the model is disposed").ThrowAsJavaScriptException();
            return;
        }
        modelReference = Napi::Persistent(modelObject);
        Napi::Object options = info[1].As<Napi::Object>();
        sequenceCount = options.Get("sequences").As<Napi::Number>().Uint32Value();
        const uint32_t contextSize = options.Get("contextSize").As<Napi::Number>().Uint32Value();
        threads = options.Get("threads").As<Napi::Number>().Int32Value();
        vocabularySize = llama_vocab_n_tokens(owner->Vocab());

        llama_context_params params = llama_context_default_params();
        params.n_ctx = contextSize * sequenceCount;
        params.n_batch = options.Get("batchSize").As<Napi::Number>().Uint32Value();
        params.n_ubatch = std::min<uint32_t>(params.n_batch, 512);
        params.n_seq_max = sequenceCount;
        // llama.cpp's default is one KV stream per sequence: a unified buffer made a tiny model's
        // single-token decode 1.55× slower (0.170 vs 0.109 ms on the family target), and makes every
        // token of a shared batch attend over all sequences' cells. Unified on request (see
        // NativeBackendOptions.unifiedKvCache for the trade-off).
        params.kv_unified = options.Has("unified") && options.Get("unified").ToBoolean().Value();
        params.n_threads = threads;
        params.n_threads_batch = threads;
        params.no_perf = true;
        context = llama_init_from_model(owner->Model(), params);
        if (context == nullptr) {
            Napi::Error::New(env, "llama.cpp could not create a context").ThrowAsJavaScriptException();
            return;
        }
        std::lock_guard<std::mutex> lock(computeMutex);
        ggml_threadpool* pool = poolFor(threads);
        if (pool == nullptr) {
            llama_free(context);
            context = nullptr;
            Napi::Error::New(env, "ggml could not start a threadpool").ThrowAsJavaScriptException();
            return;
        }
        llama_attach_threadpool(context, pool, pool);
    }

    ~NativeContext() override { Free(); }

    /** Where one submitter's rows go: its batch indexes, what it wants of each, and its destination. */
    struct OutputGroup {
        std::vector<int32_t> outputs;
        OutputMode mode = OutputMode::None;
        Sampling sampling;
        /** The JS typed array the rows go to, kept referenced while a worker writes into it. */
        Napi::TypedArray destinationArray;
        void* destination = nullptr;
        bool wideDestination = false; // a Float64Array: logits are widened to double by the writer
    };

    /** A decode request, copied out of its JS arguments and checked (ParseRequest). */
    struct Request {
        std::vector<llama_token> tokens;
        std::vector<llama_seq_id> sequences;
        std::vector<llama_pos> positions;
        std::vector<OutputGroup> groups;
        /** (sequence, from) pairs: positions from `from` on are dropped from the KV cache before the decode. */
        std::vector<int32_t> removals;
    };

    /**
     * Decodes the batch, then copies or reduces each group's rows; on a worker thread or, inline, the
     * main one. A group whose sampler rows cannot be computed (NaN logits) fails alone, in its result.
     */
    int Run(const Request& request, DecodeTimings& timings, std::string& error, bool waitForCompute = true) {
        const std::vector<llama_token>& tokens = request.tokens;
        std::lock_guard<std::mutex> contextLock(contextMutex);
        if (context == nullptr) {
            error = "the context is disposed";
            return -1;
        }
        std::unique_lock<std::mutex> computeLock(computeMutex, std::defer_lock);
        if (waitForCompute) {
            computeLock.lock();
        } else if (!computeLock.try_lock()) {
            return busy;
        }
        for (size_t index = 0; index + 1 < request.removals.size(); index += 2)
            llama_memory_seq_rm(llama_get_memory(context), request.removals[index], request.removals[index + 1], -1);
        const int32_t count = static_cast<int32_t>(tokens.size());
        if (batchCapacity < count) {
            if (batchCapacity > 0) llama_batch_free(batch);
            batch = llama_batch_init(count, 0, 1);
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
        auto start = std::chrono::steady_clock::now();
        const int32_t status = llama_decode(context, batch);
        if (status != 0) {
            error = status == 1 ? "llama_decode found no room in the KV cache" : "llama_decode failed with status " + std::to_string(status);
            return status;
        }
        llama_synchronize(context);
        timings.decodeMilliseconds = millisecondsSince(start);
        timings.groups.assign(request.groups.size(), GroupResult{});
        for (size_t index = 0; index < request.groups.size(); index++) {
            if (!WriteRows(request.groups[index], timings.groups[index], error)) return -1;
            timings.transferMilliseconds += timings.groups[index].transferMilliseconds;
            timings.samplingMilliseconds += timings.groups[index].samplingMilliseconds;
        }
        return 0;
    }

    /** One group's rows: logits copied or widened, argmax ids, or logits and sampler rows. False: llama.cpp kept no row. */
    bool WriteRows(const OutputGroup& group, GroupResult& result, std::string& error) {
        const std::vector<int32_t>& outputs = group.outputs;
        const OutputMode mode = group.mode;
        void* destination = group.destination;
        auto start = std::chrono::steady_clock::now();
        const size_t rowLength = static_cast<size_t>(vocabularySize);
        for (size_t row = 0; row < outputs.size(); row++) {
            const float* logits = llama_get_logits_ith(context, outputs[row]);
            if (logits == nullptr) {
                error = "llama.cpp returned no logits for batch index " + std::to_string(outputs[row]);
                return false;
            }
            if ((mode == OutputMode::Logits && group.wideDestination) || mode == OutputMode::Distribution) {
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
        if (mode == OutputMode::Distribution) {
            // Rows: outputs × vocabulary logits, then outputs × vocabulary sampler rows.
            double* probabilities = static_cast<double*>(destination) + outputs.size() * rowLength;
            const size_t covered = group.sampling.limit == 0 ? rowLength : std::min(group.sampling.limit, rowLength);
            for (size_t row = 0; row < outputs.size(); row++) {
                double* target = probabilities + row * rowLength;
                const std::string rowError = processRow(llama_get_logits_ith(context, outputs[row]), target, covered, group.sampling, scratch);
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

private:
    llama_context* context = nullptr;
    Napi::ObjectReference modelReference;
    std::mutex contextMutex; // a decode and a KV-cache edit of this context never overlap
    llama_batch batch{};
    int32_t batchCapacity = 0;
    int32_t threads = 1;
    int32_t vocabularySize = 0;
    uint32_t sequenceCount = 1;
    std::vector<double> scratch; // top-k / top-p sorting, reused (guarded by contextMutex)

    void Free() {
        std::lock_guard<std::mutex> lock(contextMutex);
        if (batchCapacity > 0) llama_batch_free(batch);
        batchCapacity = 0;
        if (context != nullptr) llama_free(context);
        context = nullptr;
        if (!modelReference.IsEmpty()) modelReference.Reset();
    }

    bool Check(Napi::Env env) {
        if (context != nullptr) return true;
        Napi::Error::New(env, "the context is disposed").ThrowAsJavaScriptException();
        return false;
    }

    /** Parses decode's arguments; false (with a JS exception pending) when they are malformed. */
    bool ParseRequest(const Napi::CallbackInfo& info, Request& request) {
        Napi::Env env = info.Env();
        if (!Check(env)) return false;
        request.tokens = copyInt32(info[0].As<Napi::Int32Array>());
        request.sequences = copyInt32(info[1].As<Napi::Int32Array>());
        request.positions = copyInt32(info[2].As<Napi::Int32Array>());
        const size_t count = request.tokens.size();
        if (count == 0 || request.sequences.size() != count || request.positions.size() != count) {
            Napi::TypeError::New(env, "decode needs equally long, non-empty tokens, sequences and positions").ThrowAsJavaScriptException();
            return false;
        }
        for (llama_token token : request.tokens) {
            if (token < 0 || token >= vocabularySize) {
                Napi::RangeError::New(env, "token " + std::to_string(token) + " is outside the vocabulary").ThrowAsJavaScriptException();
                return false;
            }
        }
        for (llama_seq_id sequence : request.sequences) {
            if (sequence < 0 || static_cast<uint32_t>(sequence) >= sequenceCount) {
                Napi::RangeError::New(env, "sequence " + std::to_string(sequence) + " is outside this context's " + std::to_string(sequenceCount)).ThrowAsJavaScriptException();
                return false;
            }
        }
        if (!info[3].IsArray()) {
            Napi::TypeError::New(env, "decode's fourth argument is an array of output groups").ThrowAsJavaScriptException();
            return false;
        }
        if (info.Length() > 4 && info[4].IsTypedArray()) {
            request.removals = copyInt32(info[4].As<Napi::Int32Array>());
            for (size_t index = 0; index < request.removals.size(); index += 2) {
                const int32_t sequence = request.removals[index];
                if (index + 1 >= request.removals.size() || sequence < 0 || static_cast<uint32_t>(sequence) >= sequenceCount || request.removals[index + 1] < 0) {
                    Napi::RangeError::New(env, "removals are (sequence, from) pairs of this context's sequences").ThrowAsJavaScriptException();
                    return false;
                }
            }
        }
        Napi::Array groups = info[3].As<Napi::Array>();
        std::vector<int32_t> claimed(count, 0);
        for (uint32_t index = 0; index < groups.Length(); index++) {
            OutputGroup group;
            if (!ParseGroup(env, groups.Get(index).As<Napi::Object>(), count, static_cast<int32_t>(index) + 1, claimed, group)) return false;
            request.groups.push_back(std::move(group));
        }
        return true;
    }

    /** {outputs: Int32Array, mode, destination?, sampling?}: each batch index in at most one group (`claimed` holds its group's number). */
    bool ParseGroup(Napi::Env env, Napi::Object object, size_t count, int32_t number, std::vector<int32_t>& claimed, OutputGroup& group) {
        group.outputs = copyInt32(object.Get("outputs").As<Napi::Int32Array>());
        group.mode = static_cast<OutputMode>(object.Get("mode").As<Napi::Number>().Int32Value());
        for (int32_t index : group.outputs) {
            if (index < 0 || static_cast<size_t>(index) >= count || (claimed[static_cast<size_t>(index)] != 0 && claimed[static_cast<size_t>(index)] != number)) {
                Napi::RangeError::New(env, "output index " + std::to_string(index) + " is outside the batch or in two groups").ThrowAsJavaScriptException();
                return false;
            }
            claimed[static_cast<size_t>(index)] = number;
        }
        if (group.mode != OutputMode::None) {
            group.destinationArray = object.Get("destination").As<Napi::TypedArray>();
            const size_t rows = group.outputs.size() * static_cast<size_t>(vocabularySize);
            const size_t needed = group.mode == OutputMode::Logits ? rows : group.mode == OutputMode::Distribution ? 2 * rows : group.outputs.size();
            const napi_typedarray_type type = group.destinationArray.TypedArrayType();
            const bool rightType = group.mode == OutputMode::Logits ? type == napi_float32_array || type == napi_float64_array
                                 : group.mode == OutputMode::Distribution ? type == napi_float64_array
                                                                          : type == napi_int32_array;
            if (!rightType || group.destinationArray.ElementLength() < needed) {
                Napi::TypeError::New(env, "decode's destination has the wrong type or is too short").ThrowAsJavaScriptException();
                return false;
            }
            group.destination = static_cast<uint8_t*>(group.destinationArray.ArrayBuffer().Data()) + group.destinationArray.ByteOffset();
            group.wideDestination = type == napi_float64_array;
        }
        if (group.mode == OutputMode::Distribution) {
            Napi::Object options = object.Get("sampling").As<Napi::Object>();
            group.sampling.temperature = options.Get("temperature").As<Napi::Number>().DoubleValue();
            group.sampling.topK = options.Get("topK").As<Napi::Number>().Int32Value();
            group.sampling.topP = options.Get("topP").As<Napi::Number>().DoubleValue();
            group.sampling.minP = options.Get("minP").As<Napi::Number>().DoubleValue();
            if (options.Has("limit")) group.sampling.limit = options.Get("limit").As<Napi::Number>().Uint32Value();
        }
        return true;
    }

    static std::vector<int32_t> copyInt32(Napi::Int32Array array) {
        return std::vector<int32_t>(array.Data(), array.Data() + array.ElementLength());
    }

    /**
     * decode(tokens: Int32Array, sequences: Int32Array, positions: Int32Array, groups: Array<{outputs: Int32Array,
     *        mode: 0|1|2|3, destination?: Float32Array or Float64Array (mode 1, outputs × vocabulary) | Int32Array
     *        (mode 2, outputs) | Float64Array (mode 3, 2 × outputs × vocabulary: logits, then sampler rows),
     *        sampling?: {temperature, topK, topP, minP, limit?}}>, removals?: Int32Array of (sequence, from) pairs
     *        dropped from the KV cache before the decode — a shared context's rollbacks, applied on the worker)
     * → Promise<{decodeMilliseconds, transferMilliseconds, samplingMilliseconds, groups: [{transferMilliseconds,
     * samplingMilliseconds, error?}]}>, computed on a libuv worker thread. Row r of a group's destination
     * belongs to its outputs[r]; groups let the submitters of one batch (sequences of a shared context)
     * each get their own kind of rows.
     */
    Napi::Value Decode(const Napi::CallbackInfo& info) {
        Request request;
        if (!ParseRequest(info, request)) return info.Env().Undefined();
        // The worker keeps this context and the destinations alive; the request moves into its job.
        std::vector<Napi::Value> keepAlive{Value()};
        for (const OutputGroup& group : request.groups) keepAlive.push_back(group.destinationArray);
        auto* worker = new DecodeWorker(info.Env(), std::move(keepAlive), [this, request = std::move(request)](DecodeTimings& timings, std::string& error) {
            return Run(request, timings, error);
        });
        Napi::Promise promise = worker->Promise();
        worker->Queue();
        return promise;
    }

    /**
     * decodeNow(…same arguments…) → {decodeMilliseconds, transferMilliseconds, samplingMilliseconds} | null: the same decode on
     * the calling (main) thread, for calls shorter than a thread hop (tiny models), where handing the
     * work to a worker and back costs more than the work. It blocks the event loop for the call's
     * duration, never longer: null (nothing done) when another decode holds the CPU.
     */
    Napi::Value DecodeNow(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        Request request;
        if (!ParseRequest(info, request)) return env.Undefined();
        DecodeTimings timings;
        std::string error;
        const int status = Run(request, timings, error, false);
        if (status == busy) return env.Null();
        if (status != 0) {
            Napi::Error::New(env, error).ThrowAsJavaScriptException();
            return env.Undefined();
        }
        return timingsObject(env, timings);
    }

    /** removeTokens(sequence, from, to): drops positions [from, to) of a sequence from the KV cache (to = -1: to the end). */
    Napi::Value RemoveTokens(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        if (!Check(env)) return env.Undefined();
        std::lock_guard<std::mutex> lock(contextMutex);
        const bool removed = llama_memory_seq_rm(llama_get_memory(context), info[0].As<Napi::Number>().Int32Value(),
                                                 info[1].As<Napi::Number>().Int32Value(), info[2].As<Napi::Number>().Int32Value());
        return Napi::Boolean::New(env, removed);
    }

    Napi::Value Clear(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        if (!Check(env)) return env.Undefined();
        std::lock_guard<std::mutex> lock(contextMutex);
        llama_memory_clear(llama_get_memory(context), true);
        return env.Undefined();
    }

    Napi::Value Dispose(const Napi::CallbackInfo& info) {
        Free();
        return info.Env().Undefined();
    }
};

const char* deviceTypeName(enum ggml_backend_dev_type type) {
    switch (type) {
        case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
        case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
        case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
        default: return "accelerator";
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

Napi::Object Init(Napi::Env env, Napi::Object exports) {
    exports.Set("NativeModel", NativeModel::Define(env));
    exports.Set("NativeContext", NativeContext::Define(env));
    exports.Set("backendInfo", Napi::Function::New(env, BackendInfo, "backendInfo"));
    return exports;
}

} // namespace
} // namespace specgate

static Napi::Object InitSpecgateNative(Napi::Env env, Napi::Object exports) {
    return specgate::Init(env, exports);
}

NODE_API_MODULE(specgate_native, InitSpecgateNative)