// Process-wide state of the addon: llama.cpp's log capture, the compute lock and the shared threadpool.
#pragma once

#include <ggml-cpu.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace specgate {

/**
 * One graph computation at a time, process-wide: on a CPU two at once only compete for the cores, and
 * contexts of one thread count share a threadpool, which computes one graph at a time. Held around a
 * decode only (a worker waits for it; the main thread only try-locks it).
 */
extern std::mutex computeMutex;
/**
 * How many warning and error lines llama.cpp has logged so far. Taken before a call (a load, a
 * grammar, a decode), it marks where that call's lines begin: recentErrors(mark) then names what it
 * logged. Lines another thread logs meanwhile come along (rare, and only added detail); none is lost
 * to another call, as clearing a shared buffer would lose them.
 */
uint64_t logMark();
/** The error lines among the last ones kept that were logged after `mark`, joined with "; " (empty: none). */
std::string recentErrors(uint64_t mark);

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
/**
 * How many of `requested` threads a decode should use now (called with computeMutex held, before each
 * decode): never more than the cores this process may run on, and fewer while other processes keep
 * cores busy. ggml's threads wait for each other by spinning, so a decode whose threads outnumber the
 * free cores collapses (a thread that waits for a core stalls every other one at the next barrier):
 * the CPU time other processes took over the last ≥ 0.2 s of decoding (/proc/stat less this process's
 * own) decides. The decision holds across pauses between decodes (what ran then is not a neighbour
 * of ours). Linux only; elsewhere `requested`.
 */
int threadsForDecode(int requested);
/** Marks the end of a decode (computeMutex held): a pause after it longer than 0.1 s opens a new load window. */
void decodeFinished();
double millisecondsSince(std::chrono::steady_clock::time_point start);

} // namespace specgate
