// NativeModel: a GGUF loaded by llama.cpp, its vocabulary and tokenizer, for JavaScript.
#pragma once

#include <napi.h>

#include <llama.h>

#include "runtime.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace specgate {

class NativeModel : public Napi::ObjectWrap<NativeModel> {
public:
    static Napi::Function Define(Napi::Env env) {
        return DefineClass(env, "NativeModel", {
            InstanceAccessor<&NativeModel::VocabularySize>("vocabularySize"),
            InstanceAccessor<&NativeModel::BosToken>("bosToken"),
            InstanceAccessor<&NativeModel::EosToken>("eosToken"),
            InstanceMethod<&NativeModel::Tokenize>("tokenize"),
            InstanceMethod<&NativeModel::Detokenize>("detokenize"),
            InstanceMethod<&NativeModel::Dispose>("dispose"),
        });
    }

    /** new NativeModel(path, {gpuLayers?}): gpuLayers layers offloaded to the GPU devices ggml found (default 0: CPU only). */
    explicit NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info) {
        initBackendOnce();
        const std::string path = info[0].As<Napi::String>().Utf8Value();
        llama_model_params params = llama_model_default_params();
        params.n_gpu_layers = 0;
        if (info.Length() > 1 && info[1].IsObject()) {
            Napi::Object options = info[1].As<Napi::Object>();
            if (options.Has("gpuLayers")) params.n_gpu_layers = options.Get("gpuLayers").As<Napi::Number>().Int32Value();
        }
        {
            // Loads run on the main thread one at a time: what is logged from here on belongs to this load.
            std::lock_guard<std::mutex> lock(logMutex);
            recentLogs.clear();
        }
        model = llama_model_load_from_file(path.c_str(), params);
        if (model == nullptr) {
            std::string details;
            {
                std::lock_guard<std::mutex> lock(logMutex);
                for (const auto& line : recentLogs) {
                    if (line.rfind("error", 0) == 0) details += (details.empty() ? "" : "; ") + line;
                }
            }
            Napi::Error::New(info.Env(), "llama.cpp could not load the model" + (details.empty() ? "" : " (" + details + ")"))
                .ThrowAsJavaScriptException();
            return;
        }
        vocab = llama_model_get_vocab(model);
    }

    ~NativeModel() override { Free(); }

    llama_model* Model() const { return model; }
    const llama_vocab* Vocab() const { return vocab; }

private:
    llama_model* model = nullptr;
    const llama_vocab* vocab = nullptr;

    void Free() {
        if (model != nullptr) llama_model_free(model);
        model = nullptr;
    }

    bool Check(Napi::Env env) {
        if (model != nullptr) return true;
        Napi::Error::New(env, "the model is disposed").ThrowAsJavaScriptException();
        return false;
    }

    static Napi::Value TokenOrUndefined(Napi::Env env, llama_token token) {
        return token == LLAMA_TOKEN_NULL ? env.Undefined() : Napi::Number::New(env, token);
    }

    Napi::Value VocabularySize(const Napi::CallbackInfo& info) {
        if (!Check(info.Env())) return info.Env().Undefined();
        return Napi::Number::New(info.Env(), llama_vocab_n_tokens(vocab));
    }
    Napi::Value BosToken(const Napi::CallbackInfo& info) {
        if (!Check(info.Env())) return info.Env().Undefined();
        return TokenOrUndefined(info.Env(), llama_vocab_bos(vocab));
    }
    Napi::Value EosToken(const Napi::CallbackInfo& info) {
        if (!Check(info.Env())) return info.Env().Undefined();
        return TokenOrUndefined(info.Env(), llama_vocab_eos(vocab));
    }

    /** tokenize(text, parseSpecial): ids without BOS/EOS (add_special = false), as common_tokenize with add_special false. */
    Napi::Value Tokenize(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        if (!Check(env)) return env.Undefined();
        const std::string text = info[0].As<Napi::String>().Utf8Value();
        const bool parseSpecial = info.Length() > 1 && info[1].ToBoolean().Value();
        std::vector<llama_token> tokens(text.size() + 2);
        int32_t count = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                                       static_cast<int32_t>(tokens.size()), false, parseSpecial);
        if (count < 0) {
            tokens.resize(static_cast<size_t>(-count));
            count = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                                   static_cast<int32_t>(tokens.size()), false, parseSpecial);
        }
        if (count < 0) {
            Napi::Error::New(env, "llama.cpp could not tokenize the text").ThrowAsJavaScriptException();
            return env.Undefined();
        }
        Napi::Int32Array result = Napi::Int32Array::New(env, static_cast<size_t>(count));
        std::memcpy(result.Data(), tokens.data(), sizeof(llama_token) * static_cast<size_t>(count));
        return result;
    }

    /** detokenize(Int32Array): text; control tokens render as nothing (unparse_special = false). */
    Napi::Value Detokenize(const Napi::CallbackInfo& info) {
        Napi::Env env = info.Env();
        if (!Check(env)) return env.Undefined();
        Napi::Int32Array tokens = info[0].As<Napi::Int32Array>();
        std::string text(std::max<size_t>(16, tokens.ElementLength() * 4), '\0');
        int32_t length = llama_detokenize(vocab, tokens.Data(), static_cast<int32_t>(tokens.ElementLength()), text.data(),
                                          static_cast<int32_t>(text.size()), false, false);
        if (length < 0) {
            text.resize(static_cast<size_t>(-length));
            length = llama_detokenize(vocab, tokens.Data(), static_cast<int32_t>(tokens.ElementLength()), text.data(),
                                      static_cast<int32_t>(text.size()), false, false);
        }
        text.resize(static_cast<size_t>(std::max(length, 0)));
        return Napi::String::New(env, text);
    }


    Napi::Value Dispose(const Napi::CallbackInfo& info) {
        Free();
        return info.Env().Undefined();
    }
};

} // namespace specgate
