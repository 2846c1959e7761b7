// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * replay.c -- run a fuzz target over files, without libFuzzer: the
 * regression test of each target (ctest replays its corpus, crash
 * reproducers included, on every make check).
 *
 *	fuzz_TARGET_replay FILE|DIR...
 *
 * Prints "N inputs" and exits 0, or aborts on the first broken
 * invariant (FUZZ_ASSERT) with the file's name.
 */
#include <dirent.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	static uint8_t buf[1 << 20];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	fprintf(stderr, "%s\n", path);
	LLVMFuzzerTestOneInput(buf, n);
	return 1;
}

static int run_path(const char *path)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	int n = 0;

	if (stat(path, &st))
		return -1;
	if (!S_ISDIR(st.st_mode))
		return run_file(path);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		char p[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		n += run_path(p) > 0;
	}
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	int i, n = 0, r;

	for (i = 1; i < argc; i++) {
		r = run_path(argv[i]);
		if (r < 0)
			return 1;
		n += r;
	}
	printf("%d inputs\n", n);
	return n ? 0 : 1;
}
