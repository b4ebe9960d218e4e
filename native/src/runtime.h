// Process-wide state of the addon: llama.cpp's log capture, the compute lock and the shared threadpool.
#pragma once

#include <ggml-cpu.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <string>

namespace specgate {

/** One graph computation at a time, process-wide (on a CPU two at once only compete for the cores). */
extern std::mutex computeMutex;
/** llama.cpp's recent warnings and errors, attached to load failures; guarded by logMutex. */
extern std::mutex logMutex;
extern std::deque<std::string> recentLogs;

/** llama_backend_init and the log hook, once per process. */
void initBackendOnce();
/**
 * The persistent threadpool of exactly `threads` threads, created on first use and kept for the
 * process's life; contexts with the same thread count share it. (One pool sized for the largest
 * request would keep its extra workers polling beside every smaller decode.) Caller holds computeMutex.
 */
ggml_threadpool* poolFor(int threads);
double millisecondsSince(std::chrono::steady_clock::time_point start);

} // namespace specgate
