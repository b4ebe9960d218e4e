// Eagle3HeadArguments: what an EAGLE-3 head's constructors and calls check of their JS arguments, and
// the head's llama_context, shared by Eagle3Head (one target sequence) and Eagle3HeadGroup (a target's slots).
#pragma once

#include <napi.h>

#include <llama.h>

#include "Eagle3Draws.h"
#include "Eagle3Head.h"
#include "Eagle3HeadState.h"
#include "runtime.h"
#include "validate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace specgate {

/**
 * A head's state for `model` (an eagle3 NativeModel) reading `target`'s tap: a TypeError or RangeError
 * when the model is not a head, or its layers or width are not the tap's. No context yet (openHeadContext).
 */
inline std::shared_ptr<Eagle3HeadState> checkHead(Napi::Env env, Napi::Value model, Napi::Value target, TargetResolver resolve) {
    auto created = std::make_shared<Eagle3HeadState>();
    created->model = unwrapTagged<NativeModel>(env, model, "model")->Handle();
    if (created->model == nullptr) throw Napi::Error::New(env, "the model is disposed");
    created->target = resolve(env, target, "target");
    const llama_model* head = created->model->model;
    const llama_model* targetModel = created->target.model->model;
    char architecture[64] = {0};
    if (llama_model_meta_val_str(head, "general.architecture", architecture, sizeof architecture) < 0 ||
        std::string(architecture) != "eagle3" || llama_model_target_layer_ids_n(head) != 3)
        throwTypeError(env, "model must be an EAGLE-3 head (general.architecture eagle3), got \"" + std::string(architecture) + "\"");
    if (created->target.tap == nullptr) throwRangeError(env, "target: the context was created without captureLayers");
    const LayerTap& tap = *created->target.tap;
    const int32_t* layers = llama_model_target_layer_ids(head);
    for (size_t index = 0; index < 3; index++)
        if (layers[index] != tap.Layers()[index])
            throwRangeError(env, "target: the context captures layer " + std::to_string(tap.Layers()[index]) + " where the head reads " +
                                     std::to_string(layers[index]) + " (eagle3.target_layers[" + std::to_string(index) + "])");
    char hidden[32] = {0};
    const int32_t targetWidth = llama_model_n_embd(targetModel);
    if (llama_model_meta_val_str(head, "eagle3.target_hidden_size", hidden, sizeof hidden) < 0 || std::atoi(hidden) != targetWidth)
        throwRangeError(env, "model: the head reads hidden states of width " + std::string(hidden) +
                                 " (eagle3.target_hidden_size); the target's are " + std::to_string(targetWidth));
    if (tap.Width() != targetWidth) throwRangeError(env, "target: its tap's rows are not the target's hidden size");
    return created;
}

/**
 * Creates the head's llama_context: `sequences` head sequences of `contextSize` positions each (one KV
 * stream per sequence, as the target's shared context), batches of all of them at once.
 */
inline void openHeadContext(Napi::Env env, Eagle3HeadState& created, int64_t contextSize, int threads, uint32_t sequences) {
    llama_context_params params = llama_context_default_params();
    params.n_ctx = static_cast<uint32_t>(contextSize * sequences);
    params.n_batch = static_cast<uint32_t>(contextSize * sequences);
    params.n_ubatch = std::min<uint32_t>(params.n_batch, 512);
    params.n_seq_max = sequences;
    params.n_threads = threads;
    params.n_threads_batch = threads;
    params.no_perf = true;
    params.ctx_other = created.target.context;
    const uint64_t mark = logMark();
    created.context = llama_init_from_model(created.model->model, params);
    if (created.context == nullptr)
        throw Napi::Error::New(env, "llama.cpp could not create the EAGLE-3 head's context" + Eagle3HeadState::Details(mark));
    llama_set_embeddings_nextn(created.context, true, true);
    ggml_threadpool* pool = poolFor(threads);
    if (pool == nullptr) throw Napi::Error::New(env, "ggml could not start a threadpool");
    llama_attach_threadpool(created.context, pool, pool);
    created.threads = threads;
    created.activeThreads = threads;
    created.width = llama_model_n_embd(created.model->model);
    created.vocabulary = created.model->vocabularySize;
    created.contextSize = static_cast<int32_t>(llama_n_ctx(created.context) / sequences);
}

/** The destination's kind and length: an Int32Array of `ids` ids, or a Float64Array of one logit row. */
inline void CheckDestination(Napi::Env env, Napi::Value value, bool& argmax, size_t ids, const Eagle3HeadState& live) {
    if (!value.IsTypedArray()) throwTypeError(env, "destination must be an Int32Array or a Float64Array");
    const napi_typedarray_type type = value.As<Napi::TypedArray>().TypedArrayType();
    if (type != napi_int32_array && type != napi_float64_array) throwTypeError(env, "destination must be an Int32Array or a Float64Array");
    argmax = type == napi_int32_array;
    const size_t needed = argmax ? ids : static_cast<size_t>(live.vocabulary);
    if (value.As<Napi::TypedArray>().ElementLength() < needed)
        throwRangeError(env, "destination holds " + std::to_string(value.As<Napi::TypedArray>().ElementLength()) +
                                 " elements, fewer than the " + std::to_string(needed) + " it needs");
}

/** The history argument: the pending token at least, within the head's context and the shared vocabulary. */
inline std::vector<llama_token> HistoryArgument(Napi::Env env, Napi::Value value, const Eagle3HeadState& live) {
    std::vector<llama_token> history = int32ArrayArgument(env, value, "history");
    if (history.empty()) throwRangeError(env, "history must hold at least the pending token");
    if (history.size() > static_cast<size_t>(live.contextSize))
        throwRangeError(env, "history: " + std::to_string(history.size()) + " tokens are more than the head's context of " +
                                 std::to_string(live.contextSize));
    const int32_t limit = std::min(live.vocabulary, live.target.model->vocabularySize);
    for (size_t index = 0; index < history.size(); index++)
        if (history[index] < 0 || history[index] >= limit)
            throwRangeError(env, "history[" + std::to_string(index) + "] = " + std::to_string(history[index]) +
                                     " is outside the vocabulary of " + std::to_string(limit) + " ids");
    return history;
}

/** A typed array of `type` holding at least `needed` elements, named `name`. */
inline Napi::Value ArrayArgument(Napi::Env env, Napi::Value value, const std::string& name, napi_typedarray_type type, size_t needed) {
    const bool typed = value.IsTypedArray() && value.As<Napi::TypedArray>().TypedArrayType() == type;
    if (!typed) throwTypeError(env, name + " must be " + (type == napi_int32_array ? "an Int32Array" : "a Float64Array"));
    const size_t length = value.As<Napi::TypedArray>().ElementLength();
    if (length < needed)
        throwRangeError(env,
                        name + " holds " + std::to_string(length) + " elements, fewer than the " + std::to_string(needed) + " it needs");
    return value;
}

inline HeadDrawSettings DrawSettingsArgument(Napi::Env env, Napi::Value value, const Eagle3HeadState& live) {
    Napi::Object options = objectArgument(env, value, "options");
    Napi::Object sampling = objectArgument(env, options.Get("sampling"), "options.sampling");
    HeadDrawSettings settings;
    settings.sampling.temperature = numberArgument(env, sampling.Get("temperature"), "options.sampling.temperature", 0, HUGE_VAL);
    settings.sampling.topK = static_cast<int32_t>(integerArgument(env, sampling.Get("topK"), "options.sampling.topK", 0, INT32_MAX));
    settings.sampling.topP = numberArgument(env, sampling.Get("topP"), "options.sampling.topP", 0, 1);
    settings.sampling.minP = numberArgument(env, sampling.Get("minP"), "options.sampling.minP", 0, 1);
    settings.size = static_cast<size_t>(integerArgument(env, options.Get("size"), "options.size", 1, live.vocabulary));
    settings.minConfidence = numberArgument(env, options.Get("minConfidence"), "options.minConfidence", 0, 1);
    return settings;
}

/** Copies `values` to the start of `array`, asked afresh (it may have been detached or shrunk); false when it no longer fits. */
template <typename Value> bool copyInto(Napi::TypedArray array, const std::vector<Value>& values) {
    if (array.ElementLength() < values.size()) return false;
    if (!values.empty())
        std::memcpy(static_cast<uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset(), values.data(), values.size() * sizeof(Value));
    return true;
}

/**
 * A draw's uniforms (`name`): a Float64Array of 1 or more values in [0, 1), no more than the head's
 * context holds past a history of `historySize` tokens.
 */
inline std::vector<double> uniformsArgument(Napi::Env env, Napi::Value value, const std::string& name, const Eagle3HeadState& head,
                                            size_t historySize) {
    ArrayArgument(env, value, name, napi_float64_array, 1);
    Napi::Float64Array given = value.As<Napi::Float64Array>();
    std::vector<double> uniforms(given.Data(), given.Data() + given.ElementLength());
    const auto length = static_cast<int32_t>(historySize) - 1;
    if (uniforms.size() > static_cast<size_t>(head.contextSize - length))
        throwRangeError(env, name + ": " + std::to_string(uniforms.size()) + " tokens past a history of " + std::to_string(historySize) +
                                 " overflow the head's context of " + std::to_string(head.contextSize));
    for (size_t index = 0; index < uniforms.size(); index++)
        if (!(uniforms[index] >= 0 && uniforms[index] < 1))
            throwRangeError(env, name + "[" + std::to_string(index) + "] must be in [0, 1)");
    return uniforms;
}

/** options.keepRows of a draw (`name` names the options): its rows stay in the head for drawnAt, and only ids and q(x) are written. */
inline bool keepRowsArgument(Napi::Env env, Napi::Value options, const std::string& name) {
    const Napi::Value keepRows = options.As<Napi::Object>().Get("keepRows");
    if (!keepRows.IsUndefined() && !keepRows.IsBoolean()) throwTypeError(env, name + ".keepRows must be a boolean");
    return keepRows.IsBoolean() && keepRows.As<Napi::Boolean>().Value();
}

/**
 * drawnAt's work, on the calling thread: row `row` of `kept` (read under `mutex`) at `ids` (an Int32Array)
 * or, with null, whole, written to `destination` (a Float64Array); a RangeError where the row is not a
 * drawn token's or the destination is too short.
 */
inline void readDrawnAt(Napi::Env env, const HeadDraws& kept, std::mutex& mutex, Napi::Value row, Napi::Value ids, Napi::Value destination,
                        int32_t contextSize) {
    const auto index = static_cast<size_t>(integerArgument(env, row, "row", 0, contextSize));
    const std::vector<int32_t> wanted = ids.IsNull() ? std::vector<int32_t>{} : int32ArrayArgument(env, ids, "ids");
    std::vector<double> values;
    std::string error;
    {
        std::lock_guard<std::mutex> lock(mutex);
        error = drawnAt(kept, index, wanted, values);
    }
    if (!error.empty()) throwRangeError(env, "drawnAt: " + error);
    ArrayArgument(env, destination, "destination", napi_float64_array, values.size());
    if (!copyInto(destination.As<Napi::TypedArray>(), values)) throwRangeError(env, "drawnAt: destination is too short");
}

} // namespace specgate
