#!/bin/bash
# ctest's short chaos run: three rounds of tests/e2e/chaos.sh (see there). Long runs:
# tests/e2e/chaos.sh ROUNDS [SEED].
exec "$(dirname "$0")/chaos.sh" 3 "$@"
