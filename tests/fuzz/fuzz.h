/*
 * Every fuzz target defines LLVMFuzzerTestOneInput. Built with VP_FUZZ (clang) it links
 * libFuzzer; otherwise replay.c drives it over the committed corpus, so every input that
 * ever crashed stays a regression test in the plain and sanitizer builds.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A small SMT2 machine the targets place onto: 2 packages x 2 L3 x 4 cores x 2 PUs. */
#define VP_FUZZ_TOPOLOGY "synthetic:pack:2 l3:2 core:4 pu:2"
