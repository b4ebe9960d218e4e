#!/usr/bin/env bash
# Prepares the carry folder for bench/device/run.sh (issue #29 item 5): run it HERE, on the development
# machine, before the device call. It writes into .device/ (git-ignored):
#
#   .device/node.xz               this machine's Node binary, xz -9 (the device machine has no Node)
#   .device/llama-src.tar.xz      llama.cpp's source at the bundled release (node-llama-cpp's
#                                 gitRelease.bundle, the one the addon is built from), without the web
#                                 UI, media files and ggml backends other than CPU, CUDA and Vulkan
#   .device/driver/deviceBench.mjs  bench/device/deviceBench.ts bundled by esbuild into one file (the
#                                 benchmark driver and the fixture writer; no node_modules at run time)
#   .device/napi/                 the Node-API headers the addon is compiled against (node-api-headers,
#                                 node-addon-api)
#   .device/eagle3/model.gguf     with EAGLE3_HEAD=HEAD.gguf only: an EAGLE-3 head for the family target that
#                                 the eagle3 arm drafts with instead of the tracked models/eagle3/model.gguf
#   .device/SIZES                 the sizes, and the total that travels (must stay under 64 MiB)
#
# Fixtures are NOT carried: run.sh writes the widened twins (twin-1b, twin-7b: 1.6 and 13 GB) and the
# d768, v152k and ≈1B F16 pairs on the device with the writers of `specgate fixtures`; the family pair
# (models/), which the twins widen, is tracked and travels with the tree.
#
#   bash bench/device/prepare.sh            # everything (Node's xz -9 takes ≈ 3-8 minutes on 2 cores)
#   SKIP_NODE=1 bash bench/device/prepare.sh  # keep an existing .device/node.xz
#   EAGLE3_HEAD=/tmp/head.gguf bash bench/device/prepare.sh  # carry this head for the family case's eagle3 arm
#   CARRY=/tmp/carry bash bench/device/prepare.sh  # another carry folder (run.sh takes the same CARRY)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
carry="${CARRY:-$root/.device}"
cd "$root"
mkdir -p "$carry"

# 1. Node.
if [[ "${SKIP_NODE:-0}" != 1 || ! -s "$carry/node.xz" ]]; then
    node_bin="$(readlink -f "$(command -v node)")"
    echo "prepare: compressing $node_bin ($(node --version)) with xz -9"
    xz -9 -T2 -c "$node_bin" > "$carry/node.xz.tmp"
    mv "$carry/node.xz.tmp" "$carry/node.xz"
fi

# 2. llama.cpp's source at the bundled release.
bundle="$root/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[[ -f "$bundle" ]] || { echo "missing $bundle: run npm install first" >&2; exit 1; }
head="$(git bundle list-heads "$bundle" | awk '$2 == "HEAD" {print $1}')"
checkout="$root/native/build/llama.cpp"
if [[ ! -d "$checkout/.git" ]] || ! git -C "$checkout" cat-file -e "$head^{commit}" 2>/dev/null; then
    checkout="$(mktemp -d)/llama.cpp"
    git clone --quiet "$bundle" "$checkout"
fi
excluded=()
for backend in sycl opencl hexagon cann musa hip metal kompute webgpu zdnn openvino virtgpu zendnn; do
    excluded+=(":(exclude)ggml/src/ggml-$backend")
done
git -C "$checkout" archive --format=tar "$head" -- CMakeLists.txt cmake ggml src include common tools examples pocs app vendor licenses LICENSE \
    ':(exclude)tools/ui' ':(exclude)tools/server/public*' ':(exclude)*.mp4' ':(exclude)*.webp' ':(exclude)*.pdf' ':(exclude)*.png' \
    ':(exclude)*.jpg' ':(exclude)*.gguf' "${excluded[@]}" | xz -6 -T2 > "$carry/llama-src.tar.xz.tmp"
mv "$carry/llama-src.tar.xz.tmp" "$carry/llama-src.tar.xz"
echo "$head" > "$carry/llama-src.commit"

# 3. The driver, bundled (node_modules stays behind; the addon is built on the device).
mkdir -p "$carry/driver"
"$root/node_modules/.bin/esbuild" "$root/bench/device/deviceBench.ts" --bundle --platform=node --format=esm --target=node20 \
    --external:node-llama-cpp --log-level=warning \
    --banner:js="import {createRequire as __specgateCreateRequire} from 'node:module'; const require = __specgateCreateRequire(import.meta.url);" \
    --outfile="$carry/driver/deviceBench.mjs"

# 4. Node-API headers.
rm -rf "$carry/napi"
mkdir -p "$carry/napi/node-api-headers" "$carry/napi/node-addon-api"
cp -r "$root/node_modules/node-api-headers/include/." "$carry/napi/node-api-headers/"
cp "$root/node_modules/node-addon-api/"*.h "$carry/napi/node-addon-api/"

# 5. The family target's EAGLE-3 head: the tracked one travels with the tree; EAGLE3_HEAD carries another.
rm -rf "$carry/eagle3"
if [[ -n "${EAGLE3_HEAD:-}" ]]; then
    mkdir -p "$carry/eagle3"
    cp "$EAGLE3_HEAD" "$carry/eagle3/model.gguf"
    echo "prepare: the eagle3 arm drafts with $EAGLE3_HEAD"
elif [[ ! -f "$root/models/eagle3/model.gguf" ]]; then
    echo "prepare: no models/eagle3/model.gguf and no EAGLE3_HEAD: the family case's eagle3 arm will not run" >&2
fi

# 6. Sizes: what travels is the tracked tree, untracked files git does not ignore, and the carry folder.
tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | awk 'END {print $1}')
untracked=$(git ls-files -z --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | awk 'END {print $1+0}')
carried=$(du -sb "$carry" --exclude=out --exclude=work | awk '{print $1}')
{
    du -b "$carry/node.xz" "$carry/llama-src.tar.xz" "$carry/driver/deviceBench.mjs"
    du -sb "$carry/napi"
    [[ -f "$carry/eagle3/model.gguf" ]] && du -b "$carry/eagle3/model.gguf"
    [[ -f "$root/models/eagle3/model.gguf" ]] && du -b "$root/models/eagle3/model.gguf"
    echo "tracked files: $tracked bytes; untracked, not ignored: $untracked bytes; .device (carried): $carried bytes"
    echo "total that travels: $(( (tracked + untracked + carried) / 1048576 )) MiB of 64 MiB"
} | tee "$carry/SIZES"
if (( tracked + untracked + carried >= 64 * 1048576 )); then
    echo "prepare: over the device machine's 64 MiB limit" >&2
    exit 1
fi
