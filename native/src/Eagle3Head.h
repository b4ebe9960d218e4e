// Eagle3Head: an EAGLE-3 draft head (a GGUF of llama.cpp's eagle3 architecture) drafting for one
// sequence of a target context, from the target layers' hidden states a LayerTap captured.
#pragma once

#include <napi.h>

#include <llama.h>

#include "Eagle3Tap.h"
#include "NativeModel.h"

#include <memory>
#include <string>

namespace specgate {

/** What a head needs of the target context it drafts for (NativeContext::Link in addon.cpp). */
struct TargetLink {
    /** The target's context: the head's ctx_other (its token embeddings and output, when the head has none). */
    llama_context* context = nullptr;
    /** Keeps the target's context (and so its model) alive while the head lives. */
    std::shared_ptr<void> owner;
    std::shared_ptr<ModelHandle> model;
    /** The context's tap; null when it was created without captureLayers. */
    std::shared_ptr<LayerTap> tap;
    uint32_t sequences = 0;
};

/** Resolves a JS NativeContext to its link, or throws a TypeError naming `name`. */
using TargetResolver = TargetLink (*)(Napi::Env env, Napi::Value value, const std::string& name);

/**
 * The checks of a target's layers for a tap (captureLayers): three ids, each a layer of the target
 * (llama.cpp reads the input of layer i), or a RangeError naming `name`.
 */
std::vector<int32_t> tapLayers(Napi::Env env, Napi::Value value, const std::string& name, const llama_model* target);

/** Adds the Eagle3Head class to the module's exports. */
void registerEagle3(Napi::Env env, Napi::Object exports, TargetResolver resolve);

} // namespace specgate
