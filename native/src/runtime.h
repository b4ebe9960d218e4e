// Process-wide state of the addon: llama.cpp's log capture, the compute lock and the shared threadpool.
#pragma once

#include <ggml-cpu.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <string>

namespace specgate {

/**
 * One graph computation at a time, process-wide: on a CPU two at once only compete for the cores, and
 * contexts of one thread count share a threadpool, which computes one graph at a time. Held around a
 * decode only (a worker waits for it; the main thread only try-locks it).
 */
extern std::mutex computeMutex;
/** llama.cpp's recent warnings and errors, attached to load failures; guarded by logMutex. */
extern std::mutex logMutex;
extern std::deque<std::string> recentLogs;

/**
 * llama_backend_init and the log hook, once per process. A GPU build (SPECGATE_BACKEND_DL) first loads
 * ggml's backends from the addon's folder: the GPU backend, and the CPU variant that suits this CPU.
 */
void initBackendOnce();
/** "cpu" for the CPU-only addon; "vulkan" or "cuda" for a GPU build (native/CMakeLists.txt). */
const char* buildName();
/**
 * The persistent threadpool of exactly `threads` threads, created on first use and kept for the
 * process's life; contexts with the same thread count share it. (One pool sized for the largest
 * request would keep its extra workers polling beside every smaller decode.) Under a lock of its own,
 * not computeMutex: creating a context never waits for a decode.
 */
ggml_threadpool* poolFor(int threads);
double millisecondsSince(std::chrono::steady_clock::time_point start);

} // namespace specgate
