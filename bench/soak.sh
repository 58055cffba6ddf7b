#!/bin/sh
# The flight recorder's 10-minute soak (bench/soak.cpp): memory within the cap plus one block a
# thread. Run from the repository root after `cmake --build --preset release`.
set -e
exec build/release/bench/bench_soak "${1:-600}"
