/* moat audit verify|show LOG: prove a log intact; read it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "audit.h"
#include "cli.h"
#include "units.h"

/* Logs are read whole; this cap keeps a hostile file from exhausting the
 * address space (mapped, not copied). */
#define AUDIT_READ_MAX (UINT64_C(64) << 30)

typedef struct mapped {
	char *p;
	size_t len;
} mapped;

static void unmap(mapped *m)
{
	if (m->p && m->len)
		munmap(m->p, m->len);
}

static int map_file(const char *path, mapped *ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return moat_cli_fail("%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return moat_cli_fail("%s: not a regular file", path);
	if ((uint64_t)st.st_size > AUDIT_READ_MAX)
		return moat_cli_fail("%s: larger than %" PRIu64 " bytes", path, AUDIT_READ_MAX);
	ret->len = (size_t)st.st_size;
	ret->p = NULL;
	if (ret->len == 0)
		return 0;
	ret->p = mmap(NULL, ret->len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (ret->p == MAP_FAILED) {
		ret->p = NULL;
		return moat_cli_fail("%s: %s", path, strerror(errno));
	}
	return 0;
}

static int verify_usage(FILE *f, int rc)
{
	fprintf(f, "usage: moat audit verify LOG [--head HASH]\n\n"
		   "Checks the hash chain of an audit log. Prints 'ok: N events' and exits 0, or\n"
		   "names the first line that was edited, reordered, removed, truncated or forged\n"
		   "and exits 1.\n\n"
		   "  --head HASH   also require the line with this hash (a head kept elsewhere)\n"
		   "                to be part of the chain: proves the log was not rewritten\n"
		   "                or cut before it\n");
	return rc;
}

static int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{"head", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const char *head = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'H':
			head = optarg;
			break;
		case 'h':
			return verify_usage(stdout, 0);
		default:
			return verify_usage(stderr, MOAT_EXIT_ERROR);
		}
	}
	if (argc - optind != 1)
		return verify_usage(stderr, MOAT_EXIT_ERROR);
	if (head && strlen(head) != 64)
		return moat_cli_fail("--head: expected 64 hex characters");
	const char *path = argv[optind];
	_cleanup_(unmap) mapped m = {0};
	if (map_file(path, &m) != 0)
		return MOAT_EXIT_ERROR;
	moat_audit_verdict v;
	int r = moat_audit_verify_buffer(m.p ? m.p : "", m.len, 0, &v);
	if (r < 0)
		return moat_cli_fail("%s: %s", path, strerror(-r));
	if (r > 0) {
		printf("%s:%zu: %s: %s\n", path, v.line, moat_audit_problem_to_string(v.problem), v.reason);
		if (v.events > 0)
			printf("%s: the first %" PRIu64 " events verify\n", path, v.events);
		return 1;
	}
	if (head) {
		/* The anchor must be the hash of one of the lines. */
		size_t lineno = 0, found = 0;
		for (const char *p = m.p, *end = m.p + m.len; p < end && !found;) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			char h[MOAT_AUDIT_HASH_HEX];
			moat_audit_hash(p, (size_t)(nl - p), h);
			lineno++;
			if (strcasecmp(h, head) == 0)
				found = lineno;
			p = nl + 1;
		}
		if (!found) {
			printf("%s: truncated: no line has the head %s: the log was rewritten or cut\n", path, head);
			return 1;
		}
		printf("ok: %" PRIu64 " events, head %s (anchor at line %zu)\n", v.events, v.head, found);
	} else {
		printf("ok: %" PRIu64 " events, head %s\n", v.events, v.head);
	}
	if (v.unclosed)
		printf("note: %zu session(s) without session.stop (the writer ended before closing them)\n",
		       v.unclosed);
	return 0;
}

/* Parses RFC 3339 or "DURATION-ago" / "DURATION ago" into microseconds. */
static int parse_since(const char *s, uint64_t *ret)
{
	if (moat_audit_parse_time(s, ret) == 0)
		return 0;
	size_t n = strlen(s);
	if (n > 4 && (strcmp(s + n - 4, "-ago") == 0 || strcmp(s + n - 4, " ago") == 0)) {
		char d[64];
		if (n - 4 >= sizeof(d))
			return -EINVAL;
		memcpy(d, s, n - 4);
		d[n - 4] = '\0';
		uint64_t ms;
		moat_error err = {0};
		if (moat_parse_duration_ms(d, &ms, &err) < 0 || ms == UINT64_MAX)
			return -EINVAL;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
		*ret = ms * 1000u > now ? 0 : now - ms * 1000u;
		return 0;
	}
	return -EINVAL;
}

static bool type_matches(const char *type, const char *want)
{
	if (!want)
		return true;
	if (!type)
		return false;
	size_t n = strlen(want);
	/* "file" matches file.open, file.write...; "file.open" only itself. */
	return strcmp(type, want) == 0 || (strncmp(type, want, n) == 0 && type[n] == '.');
}

void moat_cli_sleep(double s)
{
	if (s <= 0)
		return;
	struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int moat_cli_audit_walk(const char *path, const moat_cli_walk *w)
{
	_cleanup_(unmap) mapped m = {0};
	if (map_file(path, &m) != 0)
		return MOAT_EXIT_ERROR;
	uint64_t last_us = 0;
	bool first = true;
	for (const char *p = m.p, *end = m.p + m.len; p && p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_t *j = json_loadb(p, len, 0, NULL);
		p += len + 1;
		if (!json_is_object(j)) {
			json_decref(j);
			continue;
		}
		const char *type = json_string_value(json_object_get(j, "type"));
		const char *time = json_string_value(json_object_get(j, "time"));
		uint64_t us = 0;
		bool has_time = time && moat_audit_parse_time(time, &us) == 0;
		if (!type_matches(type, w->type) || (w->since_us && (!has_time || us < w->since_us))) {
			json_decref(j);
			continue;
		}
		if (w->realtime && has_time) {
			if (!first && us > last_us) {
				double s = (double)(us - last_us) / 1e6 / w->speed;
				if (w->max_idle > 0 && s > w->max_idle)
					s = w->max_idle;
				moat_cli_sleep(s);
			}
			last_us = us;
			first = false;
		}
		if (w->json) {
			char *s = moat_audit_format_json_line(p - len - 1, len);
			printf("%s\n", s ? s : "?");
			free(s);
		} else {
			char *s = moat_audit_format_readable(j);
			printf("%s\n", s ? s : "?");
			free(s);
		}
		if (w->realtime)
			fflush(stdout);
		json_decref(j);
	}
	/* Reading is not proving: say so when the chain does not hold. */
	moat_audit_verdict v;
	if (moat_audit_verify_buffer(m.p ? m.p : "", m.len, 0, &v) > 0)
		fprintf(stderr, "moat: warning: %s does not verify: line %zu: %s: %s\n", path, v.line,
			moat_audit_problem_to_string(v.problem), v.reason);
	return 0;
}

static int show_usage(FILE *f, int rc)
{
	fprintf(f, "usage: moat audit show LOG [--type TYPE] [--since TIME] [--json]\n\n"
		   "Prints the events of an audit log as a timeline.\n\n"
		   "  --type TYPE    only events of this type; 'file' matches file.open, file.write...\n"
		   "  --since TIME   only events at or after TIME: RFC 3339 (2024-05-01T12:00:00Z)\n"
		   "                 or DURATION-ago (10m-ago)\n"
		   "  --json         print the events' JSON lines as they are\n");
	return rc;
}

static int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{"type", required_argument, NULL, 'T'},
		{"since", required_argument, NULL, 'S'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	moat_cli_walk w = {.speed = 1};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'T':
			w.type = optarg;
			break;
		case 'S':
			if (parse_since(optarg, &w.since_us) < 0)
				return moat_cli_fail("--since %s: expected RFC 3339 time or DURATION-ago", optarg);
			break;
		case 'j':
			w.json = true;
			break;
		case 'h':
			return show_usage(stdout, 0);
		default:
			return show_usage(stderr, MOAT_EXIT_ERROR);
		}
	}
	if (argc - optind != 1)
		return show_usage(stderr, MOAT_EXIT_ERROR);
	return moat_cli_audit_walk(argv[optind], &w);
}

int moat_cmd_audit(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: moat audit verify|show LOG [OPTIONS]\n");
		return MOAT_EXIT_ERROR;
	}
	if (strcmp(argv[1], "verify") == 0)
		return cmd_verify(argc - 1, argv + 1);
	if (strcmp(argv[1], "show") == 0)
		return cmd_show(argc - 1, argv + 1);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		printf("usage: moat audit verify|show LOG [OPTIONS]\n");
		return 0;
	}
	return moat_cli_fail("audit: unknown subcommand '%s' (verify, show)", argv[1]);
}
