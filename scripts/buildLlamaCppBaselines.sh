#!/usr/bin/env bash
# Builds llama.cpp's own tools — llama-bench, llama-server, llama-speculative-simple,
# llama-batched-bench — from the same llama.cpp checkout as specgate's native backend
# (native/build/llama.cpp, the release bundled in node-llama-cpp), unpatched and with llama.cpp's
# default build options (OpenMP on, -march=native), for the native comparison benchmark.
# Idempotent; ≈ 10 minutes on 2 cores the first time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source_dir="$root/native/build/llama.cpp"
build_dir="$root/native/build/baselines"
bundle="$root/node_modules/node-llama-cpp/llama/gitRelease.bundle"
targets=(llama-bench llama-server llama-speculative-simple llama-batched-bench)

if [[ ! -d "$source_dir/.git" ]]; then
    [[ -f "$bundle" ]] || { echo "missing $bundle: run npm install first" >&2; exit 1; }
    mkdir -p "$(dirname "$source_dir")"
    git clone --quiet "$bundle" "$source_dir"
fi
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    cmake -S "$source_dir" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
        -DLLAMA_BUILD_TESTS=OFF
fi
cmake --build "$build_dir" --target "${targets[@]}" -j "${JOBS:-$(nproc)}"
for tool in "${targets[@]}"; do
    [[ -x "$build_dir/bin/$tool" ]] || { echo "build finished but $build_dir/bin/$tool is missing" >&2; exit 1; }
done
echo "llama.cpp baselines in $build_dir/bin"
