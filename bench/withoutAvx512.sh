#!/usr/bin/env bash
# Builds both arms of `npm run bench:native` without AVX-512, to measure on a CPU that has it what a
# CPU without it (AVX2 only, e.g. AMD EPYC Zen 2/3) would run: a copy of this checkout's HEAD in DIR
# (default /tmp/specgate-avx2) whose addon and llama.cpp baselines are compiled with -mno-avx512f
# beside GGML_NATIVE (GCC keeps an explicit -mno-* over -march=native, so ggml keeps AVX2, FMA, F16C
# and VNNI and loses every AVX-512 subset). The copy shares node_modules, the models and the bench
# fixtures (.specgate/bench-native) with this checkout. The script checks that no binary it built uses a zmm register, then
# prints the benchmark commands to run in DIR. About 8 minutes on 2 idle cores.
#
#   bash bench/withoutAvx512.sh [DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-/tmp/specgate-avx2}"

if [[ ! -d "$dir/.git" ]]; then
    git clone --quiet "$root" "$dir"
fi
git -C "$dir" fetch --quiet "$root" HEAD
git -C "$dir" checkout --quiet --detach FETCH_HEAD
[[ -e "$dir/node_modules" ]] || ln -s "$root/node_modules" "$dir/node_modules"
mkdir -p "$dir/.specgate/bench-native"
for fixture in "$root"/.specgate/bench-native/*/; do
    name="$(basename "$fixture")"
    [[ "$name" == logs || -e "$dir/.specgate/bench-native/$name" ]] || ln -s "$fixture" "$dir/.specgate/bench-native/$name"
done

export CFLAGS="-mno-avx512f" CXXFLAGS="-mno-avx512f"
(cd "$dir" && node scripts/buildNativeBackend.mjs && bash scripts/buildLlamaCppBaselines.sh)

for binary in "$dir/native/build/specgate_native.node" "$dir"/native/build/baselines/bin/lib*.so "$dir"/native/build/baselines/bin/llama-*; do
    if objdump -d "$binary" | grep -q zmm; then
        echo "$binary uses AVX-512 registers: was $dir built before with other flags? remove $dir/native/build and rerun" >&2
        exit 1
    fi
done
echo "both arms built without AVX-512 in $dir; measure there, e.g."
echo "  (cd $dir && npm run bench:native -- --cases v152k --temperatures 0,0.8 --threads 1 --no-ngram)"
echo "  (cd $dir && npm run bench:native -- --contention --scaling-only --threads 2 --cases v152k)"
