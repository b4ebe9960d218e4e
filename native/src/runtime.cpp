#include "runtime.h"

#include <llama.h>

#include <map>

#ifdef SPECGATE_BACKEND_DL
#include <ggml-backend.h>

#include <dlfcn.h>
#endif

namespace specgate {

namespace {
std::mutex poolsMutex;                 // guards `pools` only: looking a pool up never waits for a decode
std::map<int, ggml_threadpool*> pools; // thread count → pool
constexpr size_t recentLogLimit = 20;

#ifdef SPECGATE_BACKEND_DL
/** The folder this addon was loaded from, where the build script put ggml's backend libraries. */
std::string addonDirectory() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&initBackendOnce), &info) == 0 || info.dli_fname == nullptr) return ".";
    const std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

/**
 * ggml_threadpool_new of the loaded CPU backend. With dynamically loaded backends the CPU code lives in
 * whichever libggml-cpu-*.so variant ggml picked, so it is found through the backend registry, as
 * llama.cpp's own tools do; null when no CPU backend loaded.
 */
ggml_threadpool* newThreadpool(ggml_threadpool_params* params) {
    using ThreadpoolNew = ggml_threadpool* (*)(ggml_threadpool_params*);
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu == nullptr) return nullptr;
    auto create =
        reinterpret_cast<ThreadpoolNew>(ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(cpu), "ggml_threadpool_new"));
    return create == nullptr ? nullptr : create(params);
}
#else
ggml_threadpool* newThreadpool(ggml_threadpool_params* params) { return ggml_threadpool_new(params); }
#endif

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
#ifdef SPECGATE_BACKEND_DL
        ggml_backend_load_all_from_path(addonDirectory().c_str());
#endif
        llama_backend_init();
    });
}

ggml_threadpool* poolFor(int threads) {
    std::lock_guard<std::mutex> lock(poolsMutex);
    auto found = pools.find(threads);
    if (found != pools.end()) return found->second;
    ggml_threadpool_params params = ggml_threadpool_params_default(threads);
    ggml_threadpool* pool = newThreadpool(&params);
    if (pool != nullptr) pools.emplace(threads, pool);
    return pool;
}

const char* buildName() { return SPECGATE_BUILD_NAME; }

double millisecondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

} // namespace specgate
