#!/usr/bin/env bash
# Installs the Debian packages tracemodel needs when they are missing (run as root).
#   scripts/deps.sh [extra packages...]
set -euo pipefail
packages=(cmake ninja-build g++ clang clang-format clang-tidy libclang-rt-14-dev libboost-dev librange-v3-dev libfmt-dev
          libsimdjson-dev zlib1g-dev doctest-dev libbenchmark-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
