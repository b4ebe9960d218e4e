#!/usr/bin/env bash
# Regenerates the reference model family in models/ from scratch: builds llama.cpp's training tools
# offline, compiles specgate, writes the corpora (fixed seed), trains target, draft and draft-skewed
# with llama-finetune, makes target-q8_0, continues target into target-surface, trains draft-surface and
# cuts target to two blocks for draft-shallow, evaluates everything and writes the model cards.
# About 4 h on the project's idle 2-core machine: the target's nine stages (188,000 steps) ≈ 2 h 15 min
# at --threads 2, target-surface's two stages ≈ 25 min, draft-shallow's three ≈ 50 min, the other drafts ≈ 8–10 min each; the stages are in
# src/foundry/family/familyRecipe.ts. An interrupted build reuses finished intermediate stages (kept in the work folder).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/buildLlamaCppTools.sh
npm run build
node dist/cli/main.js family build --out models --work .tmp/family "$@"
