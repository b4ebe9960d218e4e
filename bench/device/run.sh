#!/usr/bin/env bash
# bench/device/run.sh — the device-machine benchmark of issue #29 item 5, in one call of ≤ 10 minutes.
# Needs the carry folder from bench/device/prepare.sh (.device/: Node, llama.cpp's source, the bundled
# driver, Node-API headers). On the device (no Node, no network; nvcc, cmake, ninja present):
#
#   1. unpacks Node and llama.cpp's source (the release the addon is built from);
#   2. starts writing the GGUF fixtures in the background (the widened twins of the family target,
#      twin-1b ≈ 0.8B and twin-7b ≈ 6.5B parameters in F16, and any random-weight pairs named in CASES);
#   3. builds ONE shared llama.cpp (GGML_BACKEND_DL, as node-llama-cpp's prebuilt packages are laid
#      out): libllama, libggml, libggml-base, the CPU and GPU backends, llama-bench and
#      llama-speculative-simple;
#   4. builds specgate's addon against those same libraries (native/CMakeLists.txt's SPECGATE_GPU mode,
#      SPECGATE_PREBUILT_DIR = that build's libraries), under $WORK, not in the checkout;
#   5. runs the driver: specgate and llama.cpp's tools interleaved on the same GGUF files and backend,
#      until the deadline, and writes $OUT/device-bench.md and $OUT/device-bench.json.
#
# Environment (defaults for the device):
#   GPU=cuda          cuda | vulkan | cpu. cpu: the dry run on a machine without a GPU (same steps, no GPU
#                     backend; the addon is built in the same shared-library mode, as the "cpu" build)
#   OUT=.device/out   where the report, the logs and the JSON go ($OUT on the device machine)
#   WORK=/tmp/specgate-device   scratch: sources, builds, fixtures (reused if present: incremental)
#   CARRY=.device     the carry folder
#   BUDGET_S=560      seconds from the start to the last result (the call's limit is 600)
#   JOBS=$(nproc)     build parallelism
#   CUDA_ARCH=90      CMAKE_CUDA_ARCHITECTURES
#   CUDA_FA=ON        GGML_CUDA_FA; OFF defines GGML_CUDA_NO_FA: the fattn files compile with their kernels
#                     compiled out (about half of the nvcc time measured on 2 cores), and both arms run
#                     without flash attention
#   CUDA_CMAKE_ARGS=  more cmake arguments for the CUDA build (e.g. -DCUDA_cuda_driver_LIBRARY=…)
#   CUBLAS_ROOT=      a folder with include/cublas_v2.h and lib/libcublas.so*, where the toolkit has none
#   CASES=twin-1b,twin-7b,family (also d768, v152k, b1)   QUICK=1: tiny settings for the dry run (few tokens and repetitions)
#   BENCH_ARGS=       more driver flags (e.g. "--tokens 128 --reps 5 --temperatures 0,0.8")
#   The family case's EAGLE-3 arm drafts with $CARRY/eagle3/model.gguf where prepare.sh put one
#   (EAGLE3_HEAD=…), else with the tracked models/eagle3/model.gguf; without either it does not run.
set -uo pipefail

started=$(date +%s)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
gpu="${GPU:-cuda}"
carry="${CARRY:-$root/.device}"
out="${OUT:-$root/.device/out}"
work="${WORK:-/tmp/specgate-device}"
jobs="${JOBS:-$(nproc)}"
budget="${BUDGET_S:-560}"
deadline=$((started + budget))
cases="${CASES:-twin-1b,twin-7b,family}"
mkdir -p "$out" "$work"

elapsed() { echo "$(( $(date +%s) - started ))s"; }
say() { echo "[run.sh $(elapsed)] $*"; }
fail() { say "FAILED: $*"; echo "# device bench failed: $*" > "$out/device-bench.md"; exit 1; }

main() {
case "$gpu" in
    cuda) gpu_flags=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90}" "-DGGML_CUDA_FA=${CUDA_FA:-ON}"); backends=(ggml-cpu ggml-cuda); driver_gpu=cuda ;;
    vulkan) gpu_flags=(-DGGML_VULKAN=ON); backends=(ggml-cpu ggml-vulkan); driver_gpu=vulkan ;;
    cpu) gpu_flags=(); backends=(ggml-cpu); driver_gpu=off ;;
    *) fail "GPU must be cuda, vulkan or cpu, got $gpu" ;;
esac
# GGML_BACKEND_DL (the layout of node-llama-cpp's prebuilt libraries, which the addon's GPU mode loads
# from its folder) refuses GGML_NATIVE, and GGML_CPU_ALL_VARIANTS would compile the CPU backend ≈ 14
# times: one CPU backend at Haswell's level (AVX2, FMA, F16C), which every x86-64 GPU host has. It only
# runs what the GPU does not (sampling, the CPU dry run).
cpu_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
# ggml-cuda links cuBLAS. Where the CUDA toolkit beside nvcc has no cuBLAS (a toolkit of nvcc and the
# runtime only, with cuBLAS coming from pip, as PyTorch's nvidia-cublas wheel), point CMake at the wheel's.
cuda_extra=()
if [[ "$gpu" == cuda ]]; then
    if ! command -v nvcc > /dev/null; then
        for candidate in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [[ -x "$candidate/nvcc" ]] && { export PATH="$candidate:$PATH"; break; }; done
    fi
    command -v nvcc > /dev/null || fail "no nvcc on PATH or under /usr/local/cuda*"
    nvcc_root="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
    if ! compgen -G "$nvcc_root/include/cublas_v2.h" > /dev/null && ! compgen -G "$nvcc_root/targets/*/include/cublas_v2.h" > /dev/null \
        && [[ ! -f /usr/local/cuda/include/cublas_v2.h ]]; then
        cublas_root="${CUBLAS_ROOT:-$(python3 -c 'import glob, os, sys
for base in sys.path:
    for pattern in ("nvidia/cu13/include/cublas_v2.h", "nvidia/cublas/include/cublas_v2.h", "nvidia/cu12/include/cublas_v2.h"):
        found = glob.glob(os.path.join(base, pattern))
        if found:
            print(os.path.dirname(os.path.dirname(found[0])))
            sys.exit()' 2> /dev/null)}"
        cublas_library="$(compgen -G "$cublas_root/lib/libcublas.so*" | head -1)"
        cublas_lt_library="$(compgen -G "$cublas_root/lib/libcublasLt.so*" | head -1)"
        if [[ -n "$cublas_library" && -n "$cublas_lt_library" ]]; then
            cuda_extra=("-DCUDA_cublas_LIBRARY=$cublas_library" "-DCUDA_cublasLt_LIBRARY=$cublas_lt_library" "-DCMAKE_CUDA_FLAGS=-I$cublas_root/include")
            export LD_LIBRARY_PATH="$cublas_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        fi
    fi
    # The driver library (CUDA::cuda_driver): the toolkit's stub, else the installed driver's.
    if ! compgen -G "$nvcc_root/lib64/stubs/libcuda.so" > /dev/null && ! compgen -G "$nvcc_root/targets/*/lib/stubs/libcuda.so" > /dev/null \
        && [[ ! -f /usr/local/cuda/lib64/stubs/libcuda.so ]]; then
        cuda_driver="$(compgen -G "/usr/local/nvidia/lib64/libcuda.so*" | head -1)"
        [[ -z "$cuda_driver" ]] && cuda_driver="$(ldconfig -p 2> /dev/null | awk '/libcuda\.so/ {print $NF; exit}')"
        [[ -n "$cuda_driver" ]] && cuda_extra+=("-DCUDA_cuda_driver_LIBRARY=$cuda_driver")
    fi
    # shellcheck disable=SC2206
    cuda_extra+=(${CUDA_CMAKE_ARGS:-})
    # The CUDA runtime of this toolkit for the tools and the addon, where the loader does not know its folder.
    for lib_dir in "$nvcc_root/lib64" "$nvcc_root/lib" "$nvcc_root"/targets/*/lib /usr/local/cuda/lib64 /usr/local/cuda/targets/*/lib; do
        [[ -e "$lib_dir/libcudart.so" ]] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$lib_dir"
    done
fi
say "GPU=$gpu, $(nproc) cores, jobs $jobs, work $work, out $out, budget ${budget}s"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | sed 's/^/[run.sh] GPU: /'
command -v nvcc > /dev/null && nvcc --version | tail -2 | head -1 | sed 's/^/[run.sh] /'
(( ${#cuda_extra[@]} > 0 )) && say "CUDA hints: ${cuda_extra[*]}"

# 1. Node and llama.cpp's source.
node="$work/node"
if [[ ! -x "$node" ]]; then
    xz -dc "$carry/node.xz" > "$node.tmp" && chmod +x "$node.tmp" && mv "$node.tmp" "$node" || fail "unpacking Node"
fi
"$node" --version > /dev/null || fail "the carried Node does not run here"
src="$work/llama.cpp"
if [[ ! -f "$src/CMakeLists.txt" ]]; then
    mkdir -p "$src" && xz -dc "$carry/llama-src.tar.xz" | tar -x -C "$src" || fail "unpacking llama.cpp"
fi
# The driver must sit two folders below the folder holding native/build (nativeAddon.ts finds the
# addon at <bundle>/../../native/build), so it is copied into $WORK.
mkdir -p "$work/dist/bench" "$work/native/build"
cp "$carry/driver/deviceBench.mjs" "$work/dist/bench/deviceBench.mjs"
driver=("$node" "$work/dist/bench/deviceBench.mjs")
say "Node $("$node" --version), llama.cpp $(cat "$carry/llama-src.commit" 2>/dev/null | cut -c1-12)"

# 2. Fixtures, in the background (CPU work; the build below is mostly nvcc).
fixture_args=(fixtures --root "$root" --fixtures "$work/fixtures" --cases "$cases")
[[ "${QUICK:-0}" == 1 ]] && fixture_args+=(--quick)
"${driver[@]}" "${fixture_args[@]}" > "$out/fixtures.log" 2>&1 &
fixtures_pid=$!

# 3. llama.cpp: one shared build, the GPU backend and the CPU backend loaded at run time.
build="$work/build-$gpu"
if [[ ! -f "$build/build.ninja" ]]; then
    say "configuring llama.cpp (${gpu_flags[*]})"
    cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON "${cpu_flags[@]}" \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=ON \
        "${gpu_flags[@]}" "${cuda_extra[@]}" > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; fail "llama.cpp's cmake configure"; }
fi
say "building llama.cpp: llama ggml ${backends[*]} llama-bench llama-speculative-simple (-j $jobs)"
build_started=$(date +%s)
cmake --build "$build" -j "$jobs" --target llama ggml ggml-base "${backends[@]}" llama-bench llama-speculative-simple >> "$out/build.log" 2>&1 \
    || { grep -E "error|FAILED" "$out/build.log" | head -20; tail -20 "$out/build.log"; fail "llama.cpp's build"; }
build_seconds=$(( $(date +%s) - build_started ))
say "llama.cpp built in ${build_seconds}s"
if [[ "$gpu" != cpu ]]; then
    # What llama.cpp's own tools see (and, when they see no GPU, what the GPU backend's loader misses).
    devices="$(timeout 60 "$build/bin/llama-speculative-simple" --list-devices 2>&1 | sed -n '/Available devices/,$p')"
    echo "$devices" | sed 's/^/[run.sh] /'
    if ! grep -q -i "$gpu" <<< "$devices"; then
        say "llama.cpp sees no $gpu device; the backend's libraries:"
        ldd "$build/bin/libggml-$gpu.so" 2>&1 | grep -E "not found|cuda|cublas|vulkan" | sed 's/^/[run.sh]   /'
    fi
fi

# 4. The addon, against the same shared libraries, next to them (its RPATH is $ORIGIN). The "cpu"
#    build's addon path is native/build/specgate_native.node, a GPU build's native/build/<gpu>/.
if [[ "$gpu" == cpu ]]; then addon_dir="$work/native/build"; else addon_dir="$work/native/build/$gpu"; fi
mkdir -p "$addon_dir"
cp -L "$build"/bin/lib*.so* "$addon_dir/" || fail "copying llama.cpp's libraries"
# native/CMakeLists.txt's GPU mode globs node-llama-cpp's names for the two renamed libraries.
cp "$addon_dir/libllama.so" "$addon_dir/libllama.$gpu.src.so"
cp "$addon_dir/libggml.so" "$addon_dir/libggml.$gpu.src.so"
addon_build="$work/addon-$gpu"
if [[ ! -f "$addon_build/build.ninja" ]]; then
    cmake -S "$root/native" -B "$addon_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CPP_DIR="$src" \
        "-DNODE_API_INCLUDE_DIRS=$carry/napi/node-api-headers;$carry/napi/node-addon-api" \
        -DSPECGATE_GPU="$gpu" -DSPECGATE_PREBUILT_DIR="$addon_dir" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; fail "the addon's cmake configure"; }
fi
cmake --build "$addon_build" -j "$jobs" --target specgate_native >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; fail "the addon's build"; }
cp "$addon_build/specgate_native.node" "$addon_dir/specgate_native.node.tmp" && mv "$addon_dir/specgate_native.node.tmp" "$addon_dir/specgate_native.node"
say "addon built: $addon_dir/specgate_native.node"

# 5. The benchmark.
wait "$fixtures_pid" || { tail -20 "$out/fixtures.log"; fail "writing the fixtures"; }
say "fixtures written: $(tail -1 "$out/fixtures.log")"
bench_args=(bench --root "$root" --fixtures "$work/fixtures" --cases "$cases" --bin "$build/bin" --gpu "$driver_gpu" --deadline "$deadline"
    --out "$out" --label "$gpu build; llama.cpp build step ${build_seconds}s on $(nproc) cores")
[[ "${QUICK:-0}" == 1 ]] && bench_args+=(--quick)
[[ -f "$carry/eagle3/model.gguf" ]] && bench_args+=(--head "$carry/eagle3/model.gguf")
# shellcheck disable=SC2206
bench_args+=(${BENCH_ARGS:-})
[[ "$gpu" == vulkan ]] && export GGML_VK_VISIBLE_DEVICES="${GGML_VK_VISIBLE_DEVICES:-0}"
"${driver[@]}" "${bench_args[@]}" || fail "the benchmark driver (see $out/run.log)"
say "done"
# The report without its command list (in the file): the call returns only the end of the output.
sed "/^## Commands/,$ d" "$out/device-bench.md"
}

# Everything to the terminal (the call's output tail) and to $OUT/run.log.
main 2>&1 | tee -a "$out/run.log"
exit "${PIPESTATUS[0]}"
