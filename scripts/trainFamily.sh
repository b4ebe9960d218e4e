#!/usr/bin/env bash
# Regenerates the reference model family in models/ from scratch: builds llama.cpp's training tools
# offline, compiles specgate, writes the corpora (fixed seed), trains target, draft and draft-skewed
# with llama-finetune, makes target-q8_0, evaluates everything and writes the model cards.
# About 1 h 50 min on the project's 2-core machine at --threads 1 (the shipped run: target 72.5 min on its 4,200 s budget, drafts 17–20 min each); the budgets are in src/foundry/family/familyRecipe.ts.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/buildLlamaCppTools.sh
npm run build
node dist/cli/main.js family build --out models --work .tmp/family "$@"
