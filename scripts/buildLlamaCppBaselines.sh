#!/usr/bin/env bash
# Builds llama.cpp's own tools — llama-bench, llama-server, llama-speculative-simple,
# llama-batched-bench — from the same llama.cpp checkout as specgate's native backend
# (native/build/llama.cpp, the release bundled in node-llama-cpp), unpatched and with llama.cpp's
# default build options (OpenMP on, -march=native), for the native comparison benchmark.
# Idempotent; ≈ 10 minutes on 2 cores the first time.
#
# As in scripts/buildNativeBackend.mjs, on a CPU with Intel AMX scripts/amxBuildFlags.mjs checks that
# AMX tiles work here and otherwise adds -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 to CFLAGS and
# CXXFLAGS; the flags are compared with the configuration's on every run, and a change reconfigures
# (and recompiles) the build instead of keeping the old flags.
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
# The words of the arguments, one space apart (as scripts/buildNativeBackend.mjs joins them).
words() {
    local -a list
    read -r -a list <<<"$*"
    printf '%s' "${list[*]}"
}
amx_flags="$(node "$root/scripts/amxBuildFlags.mjs")"
c_flags="$(words "${CFLAGS:-}" "$amx_flags")"
cxx_flags="$(words "${CXXFLAGS:-}" "$amx_flags")"

# The value of a CMakeCache.txt entry (empty when absent).
cached() {
    sed -n "s/^$1:STRING=//p" "$build_dir/CMakeCache.txt"
}

configure=1
if [[ -f "$build_dir/CMakeCache.txt" ]]; then
    configure=0
    if [[ "$(cached CMAKE_C_FLAGS)" != "$c_flags" || "$(cached CMAKE_CXX_FLAGS)" != "$cxx_flags" ]]; then
        echo "the compiler flags changed (C \"$(cached CMAKE_C_FLAGS)\" → \"$c_flags\", C++ \"$(cached CMAKE_CXX_FLAGS)\" → \"$cxx_flags\"): reconfiguring $build_dir, everything is recompiled"
        configure=1
    fi
fi
if ((configure)); then
    generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    cmake -S "$source_dir" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
        -DLLAMA_BUILD_TESTS=OFF "-DCMAKE_C_FLAGS=$c_flags" "-DCMAKE_CXX_FLAGS=$cxx_flags"
fi
cmake --build "$build_dir" --target "${targets[@]}" -j "${JOBS:-$(nproc)}"
for tool in "${targets[@]}"; do
    [[ -x "$build_dir/bin/$tool" ]] || { echo "build finished but $build_dir/bin/$tool is missing" >&2; exit 1; }
done
echo "llama.cpp baselines in $build_dir/bin"
