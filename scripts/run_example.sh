#!/usr/bin/env bash
# Installs dependencies, builds, and trains the character-level GPT example on CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
python3 examples/char_gpt/train.py "$@"
