/* Replay main for the fuzz targets, run as part of the test suite (and
 * under ASan/UBSan in CI): every file of the target's seed corpus, then a
 * fixed number of deterministic mutations of them (bit flips, byte
 * changes, insertions, deletions, truncations, splices, interesting
 * bytes). Prints TAP; an invariant broken or a sanitizer report aborts.
 * Built instead of libFuzzer's own main when the compiler has no
 * -fsanitize=fuzzer; `make fuzz` builds the real fuzzers. Also replays the
 * files named on the command line (a crash a fuzzer found). */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_MAX_INPUT 70000
#define MAX_SEEDS 256
#ifndef FUZZ_MUTATIONS
#define FUZZ_MUTATIONS 40000
#endif

typedef struct seed {
	uint8_t *d;
	size_t n;
} seed;

static seed seeds[MAX_SEEDS];
static size_t n_seeds;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	/* xorshift64*: fixed seed, so every run tries the same inputs and a
	 * failure reproduces. */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static int load(const char *path, seed *ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	uint8_t *d = malloc(FUZZ_MAX_INPUT);
	ssize_t n = d ? read(fd, d, FUZZ_MAX_INPUT) : -1;
	close(fd);
	if (n < 0) {
		free(d);
		return -EIO;
	}
	ret->d = d;
	ret->n = (size_t)n;
	return 0;
}

static void run_copy(const uint8_t *d, size_t n)
{
	/* An exact-size heap copy, so ASan sees any read past the end. */
	uint8_t *c = malloc(n ? n : 1);
	if (!c)
		abort();
	memcpy(c, d, n);
	LLVMFuzzerTestOneInput(c, n);
	free(c);
}

static size_t mutate(uint8_t *buf, size_t n)
{
	static const uint8_t interesting[] = { 0, 1, 0x7f, 0x80, 0xff, '\r', '\n', ' ', '%', '.', ':', '@', '/', '\\', '[', ']', '0', 'x' };
	int rounds = 1 + (int)(next() % 4);
	for (int r = 0; r < rounds; r++) {
		switch (next() % 7) {
		case 0:
			if (n)
				buf[next() % n] ^= (uint8_t)(1u << (next() % 8));
			break;
		case 1:
			if (n)
				buf[next() % n] = (uint8_t)next();
			break;
		case 2:
			if (n)
				buf[next() % n] = interesting[next() % sizeof(interesting)];
			break;
		case 3: /* insert */
			if (n < FUZZ_MAX_INPUT - 16) {
				size_t at = n ? next() % (n + 1) : 0, k = 1 + next() % 8;
				memmove(buf + at + k, buf + at, n - at);
				for (size_t i = 0; i < k; i++)
					buf[at + i] = interesting[next() % sizeof(interesting)];
				n += k;
			}
			break;
		case 4: /* delete */
			if (n) {
				size_t at = next() % n, k = 1 + next() % 8;
				if (k > n - at)
					k = n - at;
				memmove(buf + at, buf + at + k, n - at - k);
				n -= k;
			}
			break;
		case 5: /* truncate */
			if (n)
				n = next() % n;
			break;
		default: /* splice another seed's tail */
			if (n_seeds) {
				const seed *o = &seeds[next() % n_seeds];
				size_t at = n ? next() % n : 0, from = o->n ? next() % o->n : 0;
				size_t k = o->n - from;
				if (at + k > FUZZ_MAX_INPUT)
					k = FUZZ_MAX_INPUT - at;
				memcpy(buf + at, o->d + from, k);
				n = at + k;
			}
			break;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	int t = 0;
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			seed s;
			if (load(argv[i], &s) < 0) {
				printf("not ok %d - read %s\n", ++t, argv[i]);
				return 1;
			}
			run_copy(s.d, s.n);
			printf("ok %d - %s: replayed %s\n", ++t, FUZZ_NAME, argv[i]);
			free(s.d);
		}
		return 0;
	}

	DIR *dir = opendir(FUZZ_CORPUS);
	if (!dir) {
		printf("1..1\nnot ok 1 - %s: corpus %s: %s\n", FUZZ_NAME, FUZZ_CORPUS, strerror(errno));
		return 1;
	}
	struct dirent *de;
	while ((de = readdir(dir)) && n_seeds < MAX_SEEDS) {
		char path[4096];
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", FUZZ_CORPUS, de->d_name);
		if (load(path, &seeds[n_seeds]) == 0)
			n_seeds++;
	}
	closedir(dir);
	printf("1..2\n");
	if (n_seeds == 0) {
		printf("not ok 1 - %s: empty seed corpus\n", FUZZ_NAME);
		return 1;
	}
	for (size_t i = 0; i < n_seeds; i++)
		run_copy(seeds[i].d, seeds[i].n);
	printf("ok 1 - %s: %zu seed inputs replayed\n", FUZZ_NAME, n_seeds);
	fflush(stdout);

	uint8_t *buf = malloc(FUZZ_MAX_INPUT);
	if (!buf)
		abort();
	for (int i = 0; i < FUZZ_MUTATIONS; i++) {
		const seed *s = &seeds[next() % n_seeds];
		memcpy(buf, s->d, s->n);
		size_t n = mutate(buf, s->n);
		run_copy(buf, n);
	}
	free(buf);
	printf("ok 2 - %s: %d mutated inputs held every invariant\n", FUZZ_NAME, FUZZ_MUTATIONS);
	for (size_t i = 0; i < n_seeds; i++)
		free(seeds[i].d);
	return 0;
}
