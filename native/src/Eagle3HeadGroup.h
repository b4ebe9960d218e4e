// Eagle3HeadGroup: one EAGLE-3 head context for all the slots of a shared target context, one head
// sequence per slot, whose drafts for several slots run in the same llama_decode calls.
#pragma once

#include <napi.h>

#include "Eagle3Head.h"

namespace specgate {

/** Adds the Eagle3HeadGroup class to the module's exports. */
void registerEagle3Group(Napi::Env env, Napi::Object exports, TargetResolver resolve);

} // namespace specgate
