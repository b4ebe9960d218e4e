// LayerTap's llama.cpp side: turning the layer inputs on, copying them out after a decode, and a
// sequence's rows saved with its KV state and restored with it.
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

namespace {

template <typename T> void put(std::vector<uint8_t>& out, T value) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof(T));
}

template <typename T> T get(const uint8_t* data) {
    T value;
    std::memcpy(&value, data, sizeof(T));
    return value;
}

} // namespace

std::vector<uint8_t> LayerTap::Save(int32_t sequence, int32_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<uint8_t> out;
    put<uint32_t>(out, static_cast<uint32_t>(layers.size()));
    for (int32_t layer : layers) put<int32_t>(out, layer);
    put<int32_t>(out, width);
    const bool known = sequence >= 0 && static_cast<size_t>(sequence) < stores.size();
    const Store empty;
    const Store& store = known ? stores[static_cast<size_t>(sequence)] : empty;
    const int32_t last = std::min(end, store.End());
    const auto count = static_cast<uint32_t>(std::max(0, last - store.base));
    put<int32_t>(out, store.base);
    put<uint32_t>(out, count);
    const size_t tokenBytes = count * sizeof(llama_token);
    const size_t rowBytes = count * RowFloats() * sizeof(float);
    const size_t at = out.size();
    out.resize(at + tokenBytes + rowBytes);
    if (count > 0) {
        std::memcpy(out.data() + at, store.tokens.data(), tokenBytes);
        std::memcpy(out.data() + at + tokenBytes, store.rows.data(), rowBytes);
    }
    return out;
}

bool LayerTap::Restore(int32_t sequence, const uint8_t* block, size_t bytes) {
    Forget(sequence);
    if (sequence < 0 || static_cast<size_t>(sequence) >= stores.size() || block == nullptr) return false;
    const size_t header = 4 + 4 * layers.size() + 4 + 4 + 4;
    if (bytes < header || get<uint32_t>(block) != layers.size()) return false;
    for (size_t index = 0; index < layers.size(); index++)
        if (get<int32_t>(block + 4 + 4 * index) != layers[index]) return false;
    const uint8_t* at = block + 4 + 4 * layers.size();
    const auto base = get<int32_t>(at + 4);
    const uint32_t count = get<uint32_t>(at + 8);
    const size_t rowFloats = RowFloats();
    if (get<int32_t>(at) != width || base < 0 || bytes != header + count * (sizeof(llama_token) + rowFloats * sizeof(float))) return false;
    if (count > static_cast<uint32_t>(INT32_MAX - base)) return false;
    std::lock_guard<std::mutex> lock(mutex);
    Store& store = stores[static_cast<size_t>(sequence)];
    store.base = base;
    store.tokens.resize(count);
    store.rows.resize(count * rowFloats);
    std::memcpy(store.tokens.data(), block + header, count * sizeof(llama_token));
    std::memcpy(store.rows.data(), block + header + count * sizeof(llama_token), count * rowFloats * sizeof(float));
    store.rewritten = base;
    return true;
}

bool LayerTap::Split(const uint8_t* data, size_t size, size_t& stateBytes, const uint8_t*& rows, size_t& rowBytes) {
    stateBytes = size;
    rows = nullptr;
    rowBytes = 0;
    if (size < footerBytes || get<uint64_t>(data + size - 8) != savedRowsMagic) return true;
    const auto saved = get<uint64_t>(data + size - footerBytes);
    if (saved > size - footerBytes) return false;
    stateBytes = static_cast<size_t>(saved);
    rows = data + stateBytes;
    rowBytes = size - footerBytes - stateBytes;
    return true;
}

void LayerTap::AppendFooter(uint8_t* end, uint64_t stateBytes) {
    std::memcpy(end, &stateBytes, 8);
    std::memcpy(end + 8, &savedRowsMagic, 8);
}

} // namespace specgate
