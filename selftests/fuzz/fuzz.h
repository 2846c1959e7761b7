/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * fuzz.h -- what the fuzz targets in selftests/fuzz share.  Each target
 * is built twice: with clang and libFuzzer (`make fuzz`), and with the
 * ordinary compiler and replay.c's main() as a regression test that
 * ctest runs over the committed corpus (selftests/fuzz/corpus/TARGET/).
 */
#ifndef KIWI_FUZZ_H
#define KIWI_FUZZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiwi/iwarp.h>

/* An invariant broken: report and abort, so the fuzzer keeps the input. */
#define FUZZ_ASSERT(x)							\
	do {								\
		if (!(x)) {						\
			fprintf(stderr, "%s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #x);		\
			abort();					\
		}							\
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* KIWI_FUZZ_H */
