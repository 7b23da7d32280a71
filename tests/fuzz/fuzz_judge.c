/* libFuzzer target for the judge's parsers: the cases file and the harness
 * reply. Every input that parses must hold the caps, every case must match
 * its own expected output in every comparison mode, and a failure must say
 * why. Built plainly (without -fsanitize=fuzzer) it is a replay tool:
 * `fuzz_judge FILE|DIR...` runs each input once, so the corpus is checked on
 * every test run. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "judge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NONCE "0123456789abcdef0123456789abcdef"

static void check_case(const moat_judge_case *c)
{
	char why[256];
	if (!c->name || strlen(c->name) > MOAT_JUDGE_MAX_NAME)
		abort();
	for (int m = 0; m < _MOAT_JUDGE_COMPARE_MAX; m++) {
		if (c->is_call) {
			if (!moat_judge_compare_json((moat_judge_compare)m, c->tolerance, c->expected, c->expected, why,
						     sizeof(why)))
				abort(); /* a value always equals itself */
		} else if (!moat_judge_compare_text((moat_judge_compare)m, c->tolerance, c->expected_stdout,
						    c->expected_len, c->expected_stdout, c->expected_len, why,
						    sizeof(why))) {
			abort();
		}
	}
	if (c->is_call) {
		_cleanup_free_ char *req = moat_judge_call_request(c, NONCE, NULL);
		if (!req)
			abort();
		/* A reply built the way the harness builds it is read back whole. */
		_cleanup_free_ char *value = json_dumps(c->expected, JSON_COMPACT | JSON_ENCODE_ANY);
		_cleanup_free_ char *line = NULL;
		if (!value || asprintf(&line, "noise\nmoat-result:%s {\"value\":%s}\n", NONCE, value) < 0)
			abort();
		moat_judge_reply r;
		moat_judge_reply_parse(line, strlen(line), NONCE, &r);
		/* A value that itself holds the nonce reads as a second tag, as it
		 * must: only a submission that found the nonce can return one. */
		bool tagged_twice = strstr(value, NONCE) != NULL;
		if (tagged_twice ? r.kind != MOAT_JUDGE_REPLY_INVALID
				 : (r.kind != MOAT_JUDGE_REPLY_VALUE || !json_equal(r.value, c->expected)))
			abort();
		moat_judge_reply_done(&r);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = {0};
	moat_judge_suite *s = NULL;
	if (moat_judge_suite_parse((const char *)data, size, "fuzz", &s, &err) < 0) {
		if (err.code == 0 || !err.msg[0] || s)
			abort(); /* every failure must say why, and return nothing */
	} else {
		if (s->n_cases == 0 || s->n_cases > MOAT_JUDGE_MAX_CASES)
			abort();
		for (size_t i = 0; i < s->n_cases; i++)
			check_case(&s->cases[i]);
		moat_judge_suite_free(s);
	}
	/* The same bytes as harness output must never crash the reader. */
	moat_judge_reply r;
	moat_judge_reply_parse((const char *)data, size, NONCE, &r);
	if (r.kind < 0 || r.kind >= _MOAT_JUDGE_REPLY_MAX || (r.kind == MOAT_JUDGE_REPLY_VALUE) != (r.value != NULL))
		abort();
	moat_judge_reply_done(&r);
	return 0;
}

#ifndef MOAT_LIBFUZZER
/* Replays one file or every regular file of a folder. */
static int replay(const char *path, unsigned *count)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (!d)
			return -errno;
		struct dirent *de;
		int r = 0;
		while (r == 0 && (de = readdir(d))) {
			char sub[MOAT_MAX_PATH];
			if (de->d_name[0] != '.' && snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) < (int)sizeof(sub))
				r = replay(sub, count);
		}
		closedir(d);
		return r;
	}
	_cleanup_free_ char *buf = NULL;
	size_t len;
	moat_error err = {0};
	if (moat__judge_read_file(path, MOAT_JUDGE_MAX_FILE_BYTES, &buf, &len, &err) < 0)
		return -EIO;
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	(*count)++;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	for (int i = 1; i < argc; i++)
		if (replay(argv[i], &count) < 0) {
			fprintf(stderr, "fuzz_judge: %s: cannot read\n", argv[i]);
			return 2;
		}
	printf("replayed %u inputs\n", count);
	return count ? 0 : 2;
}
#endif
