#include "runtime.h"

#include <llama.h>

namespace specgate {

namespace {
ggml_threadpool* sharedPool = nullptr; // created and grown under computeMutex
int sharedPoolThreads = 0;
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

ggml_threadpool* poolWithAtLeast(int threads) {
    if (sharedPool != nullptr && sharedPoolThreads >= threads) return sharedPool;
    if (sharedPool != nullptr) ggml_threadpool_free(sharedPool);
    ggml_threadpool_params params = ggml_threadpool_params_default(threads);
    sharedPool = ggml_threadpool_new(&params);
    sharedPoolThreads = sharedPool == nullptr ? 0 : threads;
    return sharedPool;
}

double millisecondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

} // namespace specgate
