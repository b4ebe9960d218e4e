#include "runtime.h"

#include <llama.h>

#include <cstdio>
#include <ctime>
#include <algorithm>
#include <atomic>
#include <deque>
#include <utility>
#include <cmath>
#include <map>

#ifdef __linux__
#include <sched.h>
#include <unistd.h>
#endif

#ifdef SPECGATE_BACKEND_DL
#include <ggml-backend.h>

#include <dlfcn.h>
#endif

namespace specgate {

namespace {
std::mutex poolsMutex;                 // guards `pools` only: looking a pool up never waits for a decode
std::map<int, ggml_threadpool*> pools; // thread count → pool
constexpr size_t recentLogLimit = 20;
std::mutex logMutex; // guards recentLogs and loggedLines
/** llama.cpp's last warning and error lines (recentLogLimit), each with its number in loggedLines. */
std::deque<std::pair<uint64_t, std::string>> recentLogs;
/** Written under logMutex, read without it by logMark (a decode takes a mark without waiting for the lock). */
std::atomic<uint64_t> loggedLines{0};

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
    std::string line = std::string(level == GGML_LOG_LEVEL_ERROR ? "error: " : "warn: ") + text;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    std::lock_guard<std::mutex> lock(logMutex);
    recentLogs.emplace_back(++loggedLines, std::move(line));
    if (recentLogs.size() > recentLogLimit) recentLogs.pop_front();
}
} // namespace

std::mutex computeMutex;

uint64_t logMark() { return loggedLines.load(); }

std::string recentErrors(uint64_t mark) {
    std::lock_guard<std::mutex> lock(logMutex);
    std::string details;
    for (const auto& [number, line] : recentLogs)
        if (number > mark && line.rfind("error", 0) == 0) details += (details.empty() ? "" : "; ") + line;
    return details;
}

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

namespace {
/**
 * CPU time other processes used, measured between decodes (threadsForDecode). Guarded by computeMutex,
 * which every caller holds.
 */
struct LoadMonitor {
    int cores = 0;          // the cores this process may run on (its affinity mask, else those online)
    double othersCores = 0; // the last window's CPU use of other processes, in cores
    int reducedTo = 0;      // 0: every requested thread; else the most threads a decode uses now
    // The open window: since `windowStart`, when the machine's busy ticks were `busyTicks` and this process's CPU time `selfSeconds`.
    bool windowOpen = false;
    std::chrono::steady_clock::time_point windowStart;
    std::chrono::steady_clock::time_point lastDecodeEnd;
    double busySeconds = 0;
    double selfSeconds = 0;
};
LoadMonitor monitor;

/** A window shorter than this is not judged: /proc/stat counts in 10 ms ticks per core. */
constexpr double windowSeconds = 0.2;
/** A pause longer than this between decodes discards the open window (the load then was not this process's neighbours'). */
constexpr double idleGapSeconds = 0.1;

/** Busy CPU time of the whole machine (every core: user, nice, system, irq, softirq, steal) in seconds; negative if unreadable. */
double machineBusySeconds() {
#ifdef __linux__
    std::FILE* file = std::fopen("/proc/stat", "r");
    if (file == nullptr) return -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    const int read =
        std::fscanf(file, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait, &irq, &softirq, &steal);
    std::fclose(file);
    if (read < 4) return -1;
    static const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    return static_cast<double>(user + nice + system + irq + softirq + steal) / (tick > 0 ? tick : 100.0);
#else
    return -1;
#endif
}

double processSeconds() {
    timespec now{};
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) != 0) return -1;
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

int usableCores() {
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<int>(online) : 1;
#else
    return 0; // unknown: no cap
#endif
}

void openWindow(std::chrono::steady_clock::time_point now) {
    monitor.busySeconds = machineBusySeconds();
    monitor.selfSeconds = processSeconds();
    monitor.windowStart = now;
    monitor.windowOpen = monitor.busySeconds >= 0 && monitor.selfSeconds >= 0;
}
} // namespace

int threadsForDecode(int requested) {
    if (monitor.cores == 0) monitor.cores = usableCores();
    const int cap = monitor.cores > 0 ? std::min(requested, monitor.cores) : requested;
    if (cap <= 1) return 1;
    const auto now = std::chrono::steady_clock::now();
    const bool idleBefore = monitor.lastDecodeEnd.time_since_epoch().count() == 0 ||
                            std::chrono::duration<double>(now - monitor.lastDecodeEnd).count() > idleGapSeconds;
    if (!monitor.windowOpen || idleBefore) {
        // Keep the last judgement across the pause; judge again once this run of decodes has lasted a window.
        openWindow(now);
    } else if (std::chrono::duration<double>(now - monitor.windowStart).count() >= windowSeconds) {
        const double busy = machineBusySeconds();
        const double self = processSeconds();
        const double wall = std::chrono::duration<double>(now - monitor.windowStart).count();
        if (busy >= 0 && self >= 0) {
            monitor.othersCores = std::max(0.0, (busy - monitor.busySeconds) - (self - monitor.selfSeconds)) / wall;
            // Threads the neighbours leave room for. Spinning threads (ggml's barrier never sleeps)
            // collapse as soon as one of them waits for a core, so a decode gives up a thread once
            // others take 0.4 of a core, and takes it back below 0.25 (hysteresis).
            const double slack = monitor.reducedTo > 0 ? 0.25 : 0.4;
            const int room = static_cast<int>(std::floor(static_cast<double>(monitor.cores) - monitor.othersCores + slack));
            monitor.reducedTo = room >= cap ? 0 : std::max(1, room);
        }
        openWindow(now);
    }
    return monitor.reducedTo > 0 ? std::min(cap, monitor.reducedTo) : cap;
}

void decodeFinished() { monitor.lastDecodeEnd = std::chrono::steady_clock::now(); }

const char* buildName() { return SPECGATE_BUILD_NAME; }

double millisecondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

} // namespace specgate
