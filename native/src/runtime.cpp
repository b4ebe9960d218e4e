#include "runtime.h"

#include <llama.h>

#include <map>

namespace specgate {

namespace {
std::map<int, ggml_threadpool*> pools; // thread count → pool, under computeMutex
constexpr size_t recentLogLimit = 20;

void logCallback(ggml_log_level level, const char* text, void* /*user*/) {
    if (level != GGML_LOG_LEVEL_ERROR && level != GGML_LOG_LEVEL_WARN) return;
    std::lock_guard<std::mutex> lock(logMutex);
    std::string line = std::string(level == GGML_LOG_LEVEL_ERROR ? "error: " : "warn: ") + text;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    recentLogs.push_back(line);
    if (recentLogs.size() > recentLogLimit) recentLogs.pop_front();
}
} // namespace

std::mutex computeMutex;
std::mutex logMutex;
std::deque<std::string> recentLogs;

void initBackendOnce() {
    static std::once_flag once;
    std::call_once(once, [] {
        llama_log_set(logCallback, nullptr);
        llama_backend_init();
    });
}

ggml_threadpool* poolFor(int threads) {
    auto found = pools.find(threads);
    if (found != pools.end()) return found->second;
    ggml_threadpool_params params = ggml_threadpool_params_default(threads);
    ggml_threadpool* pool = ggml_threadpool_new(&params);
    if (pool != nullptr) pools.emplace(threads, pool);
    return pool;
}

double millisecondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

} // namespace specgate
