// NativeGrammar: a GBNF grammar over a model's vocabulary (llama.cpp's grammar sampler), and
// jsonSchemaToGrammar, llama.cpp's JSON-schema converter (the one llama-server uses for response_format).
#pragma once

#include <napi.h>

namespace specgate {

/**
 * The addon's data per JS environment (napi_set_instance_data holds one object per addon and
 * environment): the constructors the addon calls from C++.
 */
struct AddonData {
    /** NativeGrammar's constructor, through which clone() makes its objects. */
    Napi::FunctionReference nativeGrammar;
};

/** Adds NativeGrammar and jsonSchemaToGrammar to the module's exports, and the AddonData of `env`. */
void registerGrammar(Napi::Env env, Napi::Object exports);

} // namespace specgate
