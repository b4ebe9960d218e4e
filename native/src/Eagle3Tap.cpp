// LayerTap's llama.cpp side: turning the layer inputs on, and copying them out after a decode.
#include "Eagle3Tap.h"

#include <llama-ext.h>

#include <cstring>

namespace specgate {

void LayerTap::Enable(llama_context* context) const {
    for (int32_t layer : layers) llama_set_embeddings_layer_inp(context, static_cast<uint32_t>(layer), true);
}

std::vector<double> LayerTap::Capture(llama_context* context, const llama_batch& batch) {
    std::vector<double> bytes(stores.size(), 0);
    std::vector<const float*> sources;
    for (int32_t layer : layers) {
        const float* source = llama_get_embeddings_layer_inp(context, static_cast<uint32_t>(layer));
        if (source == nullptr) return bytes;
        sources.push_back(source);
    }
    const size_t rowFloats = RowFloats();
    const size_t layerFloats = static_cast<size_t>(width);
    std::lock_guard<std::mutex> lock(mutex);
    for (int32_t index = 0; index < batch.n_tokens; index++) {
        for (int32_t member = 0; member < batch.n_seq_id[index]; member++) {
            const llama_seq_id sequence = batch.seq_id[index][member];
            if (sequence < 0 || static_cast<size_t>(sequence) >= stores.size()) continue;
            if (member == 0) bytes[static_cast<size_t>(sequence)] += static_cast<double>(rowFloats * sizeof(float));
            float* row = stores[static_cast<size_t>(sequence)].Place(batch.pos[index], batch.token[index], rowFloats);
            for (size_t layer = 0; layer < sources.size(); layer++)
                std::memcpy(row + layer * layerFloats, sources[layer] + static_cast<size_t>(index) * layerFloats,
                            layerFloats * sizeof(float));
        }
    }
    return bytes;
}

} // namespace specgate
