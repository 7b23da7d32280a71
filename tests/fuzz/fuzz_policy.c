/* libFuzzer target for the policy parser. Every input that parses must be
 * emitted as YAML that parses again to the same YAML, and explaining,
 * intersecting and deciding must not crash. Built plainly (without
 * -fsanitize=fuzzer) it is a replay tool: `fuzz_policy FILE|DIR...` runs
 * each input once, so the corpus is checked on every test run.
 *
 * libFuzzer: scripts/fuzz-policy [SECONDS] */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "policy-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = {0};
	_cleanup_policy_ moat_policy *p = NULL;
	/* Paths are not checked on disk: the fuzzer must explore the grammar,
	 * not the machine's files. */
	if (moat__policy_parse_ex((const char *)data, size, "fuzz", "/fuzz/dir", "/fuzz/home", false, &p, &err) < 0) {
		if (err.code == 0 || !err.msg[0])
			abort(); /* every failure must say why */
		return 0;
	}
	_cleanup_free_ char *yaml = moat_policy_to_yaml(p);
	if (!yaml)
		abort();
	_cleanup_policy_ moat_policy *again = NULL;
	if (moat__policy_parse_ex(yaml, strlen(yaml), "fuzz-emitted", "/fuzz/dir", "/fuzz/home", false, &again, &err) < 0) {
		fprintf(stderr, "emitted YAML does not parse: %s\n%s", err.msg, yaml);
		abort();
	}
	_cleanup_free_ char *yaml2 = moat_policy_to_yaml(again);
	if (!yaml2 || strcmp(yaml, yaml2) != 0) {
		fprintf(stderr, "YAML round trip differs:\n%s\n---\n%s", yaml, yaml2 ? yaml2 : "(null)");
		abort();
	}
	free(moat_policy_explain(p));
	moat_policy *both = NULL;
	if (moat_policy_intersect(p, again, &both, &err) == 0)
		moat_policy_free(both);
	static const char *const hosts[] = {"api.example.com", "a.b.example.org", "localhost", "x"};
	for (size_t i = 0; i < ELEMENTSOF(hosts); i++)
		(void)moat_policy_net_decide(p, hosts[i], 443, "GET", "/v1/x", NULL, 0);
	return 0;
}

#ifndef MOAT_LIBFUZZER
static int replay_file(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	static char buf[MOAT_POLICY_MAX_BYTES + 2];
	ssize_t n = moat__read_all(fd, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	LLVMFuzzerTestOneInput((const uint8_t *)buf, (size_t)n);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "fuzz_policy: %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 2;
			count++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d)
			return 2;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char path[MOAT_MAX_PATH];
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				if (replay_file(path) < 0) {
					closedir(d);
					return 2;
				}
				count++;
			}
		}
		closedir(d);
	}
	printf("replayed %u inputs\n", count);
	return count ? 0 : 2;
}
#endif
