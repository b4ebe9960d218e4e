// NativeModel: a GGUF loaded by llama.cpp, its vocabulary and tokenizer, for JavaScript.
#pragma once

#include <napi.h>

#include <llama.h>

#include "runtime.h"
#include "validate.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace specgate {

/**
 * A loaded llama_model, shared by its NativeModel and by every context made from it: freed with the
 * last of them, so a context never outlives its model whatever order JS disposes them in.
 */
struct ModelHandle {
    llama_model* model;
    const llama_vocab* vocab;
    int32_t vocabularySize;

    explicit ModelHandle(llama_model* loaded)
        : model(loaded), vocab(llama_model_get_vocab(loaded)), vocabularySize(llama_vocab_n_tokens(vocab)) {}
    ~ModelHandle() { llama_model_free(model); }
    ModelHandle(const ModelHandle&) = delete;
    ModelHandle& operator=(const ModelHandle&) = delete;
};

class NativeModel : public Napi::ObjectWrap<NativeModel> {
public:
    static constexpr napi_type_tag typeTag{0x8f1c2a6d5b3e4f70, 0x9a0b1c2d3e4f5061};
    static constexpr const char* className = "NativeModel";

    static Napi::Function Define(Napi::Env env) {
        return DefineClass(env, className,
                           {
                               taggedGetter<NativeModel, &NativeModel::VocabularySize>("vocabularySize"),
                               taggedGetter<NativeModel, &NativeModel::BosToken>("bosToken"),
                               taggedGetter<NativeModel, &NativeModel::EosToken>("eosToken"),
                               taggedMethod<NativeModel, &NativeModel::Tokenize>("tokenize"),
                               taggedMethod<NativeModel, &NativeModel::Detokenize>("detokenize"),
                               taggedMethod<NativeModel, &NativeModel::Dispose>("dispose"),
                           });
    }

    /** new NativeModel(path, {gpuLayers?}): gpuLayers layers offloaded to the GPU devices ggml found (default 0: CPU only). */
    explicit NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info) {
        constructing(info.Env(), [&] { Load(info); });
        info.This().As<Napi::Object>().TypeTag(&typeTag);
    }

    /** The model's handle; null once disposed. */
    const std::shared_ptr<ModelHandle>& Handle() const { return handle; }

private:
    std::shared_ptr<ModelHandle> handle;

    void Load(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        initBackendOnce();
        const std::string path = stringArgument(env, info[0], "path");
        // A NUL would cut the path short on its way into C: another file would be opened.
        if (path.find('\0') != std::string::npos) throwTypeError(env, "path must not contain NUL characters");
        llama_model_params params = llama_model_default_params();
        params.n_gpu_layers = 0;
        if (!info[1].IsUndefined()) {
            Napi::Object options = objectArgument(env, info[1], "options");
            const Napi::Value gpuLayers = options.Get("gpuLayers");
            if (!gpuLayers.IsUndefined())
                params.n_gpu_layers = static_cast<int32_t>(integerArgument(env, gpuLayers, "options.gpuLayers", -1, INT32_MAX));
        }
        const uint64_t mark = logMark();
        llama_model* model = llama_model_load_from_file(path.c_str(), params);
        if (model == nullptr) {
            const std::string details = recentErrors(mark);
            throw Napi::Error::New(env, "llama.cpp could not load the model" + (details.empty() ? "" : " (" + details + ")"));
        }
        handle = std::make_shared<ModelHandle>(model);
    }

    const ModelHandle& Loaded(Napi::Env env) const {
        if (handle == nullptr) throw Napi::Error::New(env, "the model is disposed");
        return *handle;
    }

    static Napi::Value TokenOrUndefined(Napi::Env env, llama_token token) {
        return token == LLAMA_TOKEN_NULL ? env.Undefined() : Napi::Number::New(env, token);
    }

    Napi::Value VocabularySize(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), Loaded(info.Env()).vocabularySize); }
    Napi::Value BosToken(const Napi::CallbackInfo& info) { return TokenOrUndefined(info.Env(), llama_vocab_bos(Loaded(info.Env()).vocab)); }
    Napi::Value EosToken(const Napi::CallbackInfo& info) { return TokenOrUndefined(info.Env(), llama_vocab_eos(Loaded(info.Env()).vocab)); }

    /** tokenize(text, parseSpecial): ids without BOS/EOS (add_special = false), as common_tokenize with add_special false. */
    Napi::Value Tokenize(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        const std::string text = stringArgument(env, info[0], "text");
        const bool parseSpecial = info[1].ToBoolean().Value();
        const llama_vocab* vocab = Loaded(env).vocab;
        if (text.size() > static_cast<size_t>(INT32_MAX) - 2) throwRangeError(env, "text is too long to tokenize");
        std::vector<llama_token> tokens(text.size() + 2);
        int32_t count = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                                       static_cast<int32_t>(tokens.size()), false, parseSpecial);
        if (count < 0) {
            tokens.resize(static_cast<size_t>(-count));
            count = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                                   static_cast<int32_t>(tokens.size()), false, parseSpecial);
        }
        if (count < 0) throw Napi::Error::New(env, "llama.cpp could not tokenize the text");
        Napi::Int32Array result = Napi::Int32Array::New(env, static_cast<size_t>(count));
        if (count > 0) std::memcpy(result.Data(), tokens.data(), sizeof(llama_token) * static_cast<size_t>(count));
        return result;
    }

    /** detokenize(Int32Array of ids in [0, vocabularySize)): text; control tokens render as nothing (unparse_special = false). */
    Napi::Value Detokenize(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        const std::vector<llama_token> tokens = int32ArrayArgument(env, info[0], "tokens");
        const ModelHandle& loaded = Loaded(env);
        if (tokens.size() > static_cast<size_t>(INT32_MAX) / 4) throwRangeError(env, "tokens is too long to detokenize");
        for (size_t index = 0; index < tokens.size(); index++) {
            // llama.cpp looks ids up unchecked or with .at(): an id outside the vocabulary is refused here.
            if (tokens[index] < 0 || tokens[index] >= loaded.vocabularySize)
                throwRangeError(env, "tokens[" + std::to_string(index) + "] = " + std::to_string(tokens[index]) +
                                         " is outside the vocabulary of " + std::to_string(loaded.vocabularySize) + " ids");
        }
        std::string text(std::max<size_t>(16, tokens.size() * 4), '\0');
        int32_t length = llama_detokenize(loaded.vocab, tokens.data(), static_cast<int32_t>(tokens.size()), text.data(),
                                          static_cast<int32_t>(text.size()), false, false);
        if (length < 0) {
            text.resize(static_cast<size_t>(-length));
            length = llama_detokenize(loaded.vocab, tokens.data(), static_cast<int32_t>(tokens.size()), text.data(),
                                      static_cast<int32_t>(text.size()), false, false);
        }
        text.resize(static_cast<size_t>(std::max(length, 0)));
        return Napi::String::New(env, text);
    }

    /** Drops this object's share of the model: it is freed now, or with the last context made from it. Idempotent. */
    Napi::Value Dispose(const Napi::CallbackInfo& info) {
        handle.reset();
        return info.Env().Undefined();
    }
};

} // namespace specgate
