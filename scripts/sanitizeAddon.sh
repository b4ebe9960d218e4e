#!/usr/bin/env bash
# Builds the CPU addon with AddressSanitizer and UndefinedBehaviorSanitizer on specgate's own sources
# (native/CMakeLists.txt, SPECGATE_SANITIZE) in native/build/cmake-sanitize, then runs the addon's
# hostile tests (every argument, lifetime and destination attack) on it. Any ASan or UBSan report
# aborts the test process, so the run fails. The first run compiles llama.cpp into that folder
# (≈ 5–10 minutes on 2 cores); later runs rebuild only what changed.
#
#   bash scripts/sanitizeAddon.sh            # needs npm ci first (the llama.cpp checkout, node-api headers)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="native/build/cmake-sanitize"
out="native/build/sanitize"
[ -d native/build/llama.cpp ] || { echo "sanitizeAddon: native/build/llama.cpp is missing: run npm ci first" >&2; exit 1; }
includes="$root/node_modules/node-api-headers/include;$root/node_modules/node-addon-api"
cmake -S native -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLAMA_CPP_DIR="$root/native/build/llama.cpp" \
    -DNODE_API_INCLUDE_DIRS="$includes" -DSPECGATE_SANITIZE=ON -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON > /dev/null
cmake --build "$build" --target specgate_native -j "$(nproc)"
mkdir -p "$out"
cp "$build/specgate_native.node" "$out/specgate_native.node"
# Node is not instrumented: the runtimes are preloaded, leaks (Node's own, at exit) are not reported.
preload="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)"
LD_PRELOAD="$preload" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    SPECGATE_NATIVE_DIR="$root/$out" SPECGATE_GPU=off \
    npx vitest run src/backend/nativeAddon.hostile.test.ts src/backend/nativeAddon.destinations.hostile.test.ts src/backend/NativeSequence.state.test.ts \
    src/backend/Eagle3Head.hostile.test.ts "$@"
