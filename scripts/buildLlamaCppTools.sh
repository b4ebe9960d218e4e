#!/usr/bin/env bash
# Builds llama.cpp's llama-finetune and llama-quantize from the llama.cpp
# release bundled inside node-llama-cpp, so it works offline and matches the
# runtime that loads our models. Idempotent: reuses the clone and the build
# folder, and cmake only rebuilds what changed.
#
# It applies two fixes:
# - scripts/llama-finetune-gradient-reset.patch: in this release ggml-opt never
#   clears its gradient accumulators when the graph is rebuilt for every batch
#   (as llama-finetune does), so each AdamW step used the sum of all gradients
#   so far. Unpatched, a 0.27M-parameter model reached validation loss 2.38
#   after 3,000 steps at the best learning rate (5e-5; 1e-3 diverged);
#   patched, 1.21 at 1e-3.
# - scripts/llama-finetune-training-graph.patch: the training graph read keys
#   and values back from the KV cache (no gradient reaches attn_k/attn_v) and
#   left token_embd frozen (two upstream FIXMEs). With SPECGATE_TRAIN_WITHOUT_KV_CACHE
#   set (specgate train sets it) attention uses the current keys and values,
#   and the token embedding is trained. Same 0.27M model, 1,500 steps at 1e-3:
#   validation loss 1.63 before, 1.12 after (K/V alone). The shipped family was
#   trained before the token_embd half (its token_embd is the random init);
#   trainWithLlamaFinetune.test.ts checks that every matrix now moves.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="$root/node_modules/node-llama-cpp/llama/gitRelease.bundle"
source_dir="${SPECGATE_LLAMA_CPP_DIR:-$root/.tmp/llama.cpp}"
jobs="${JOBS:-2}"

if [[ ! -f "$bundle" ]]; then
    echo "missing $bundle: run npm install first" >&2
    exit 1
fi

if [[ ! -d "$source_dir/.git" ]]; then
    mkdir -p "$(dirname "$source_dir")"
    git clone --quiet "$bundle" "$source_dir"
fi

for patch in "$root/scripts/llama-finetune-gradient-reset.patch" "$root/scripts/llama-finetune-training-graph.patch"; do
    if ! git -C "$source_dir" apply --reverse --check "$patch" 2>/dev/null; then
        git -C "$source_dir" apply "$patch"
    fi
done

if [[ ! -f "$source_dir/build/CMakeCache.txt" ]]; then
    cmake -S "$source_dir" -B "$source_dir/build" \
        -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_CURL=OFF \
        -DGGML_NATIVE=ON
fi

cmake --build "$source_dir/build" --config Release \
    --target llama-finetune llama-quantize -j "$jobs"

for tool in llama-finetune llama-quantize; do
    if [[ ! -x "$source_dir/build/bin/$tool" ]]; then
        echo "build finished but $source_dir/build/bin/$tool is missing" >&2
        exit 1
    fi
done
echo "built $source_dir/build/bin/llama-finetune and llama-quantize"
