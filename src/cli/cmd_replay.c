/* moat replay FILE.cast | --audit LOG: play a terminal recording back in
 * the terminal, or walk an audit log's events at the pace they happened. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "util.h"

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: moat replay FILE.cast [--speed X] [--max-idle S]\n"
		   "       moat replay --audit LOG [--speed X] [--max-idle S] [--type TYPE]\n\n"
		   "Plays a terminal recording (asciicast v2, as written by 'moat run --record')\n"
		   "back in the terminal, or prints an audit log's events at the pace they happened.\n\n"
		   "  --speed X      play X times faster (default 1)\n"
		   "  --max-idle S   never wait more than S seconds between two events\n"
		   "  --type TYPE    with --audit: only events of this type (or type prefix)\n");
	return rc;
}

static bool parse_positive(const char *s, double *ret)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e6)
		return false;
	*ret = v;
	return true;
}

/* Reads one asciicast v2 file and writes its output events to stdout. */
static int play_cast(const char *path, double speed, double max_idle)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f)
		return moat_cli_fail("%s: %s", path, strerror(errno));
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	json_t *h = n > 0 ? json_loadb(line, (size_t)n, 0, NULL) : NULL;
	json_int_t version = json_integer_value(json_object_get(h, "version"));
	json_decref(h);
	if (version != 2)
		return moat_cli_fail("%s: not an asciicast v2 recording", path);
	double last = 0;
	size_t lineno = 1;
	while ((n = getline(&line, &cap, f)) > 0) {
		lineno++;
		json_t *e = json_loadb(line, (size_t)n, 0, NULL);
		double t;
		const char *code, *data;
		size_t len;
		if (json_unpack(e, "[F s s%]", &t, &code, &data, &len) < 0) {
			json_decref(e);
			return moat_cli_fail("%s:%zu: not an asciicast event", path, lineno);
		}
		if (strcmp(code, "o") == 0) {
			double wait = (t - last) / speed;
			if (max_idle > 0 && wait > max_idle)
				wait = max_idle;
			moat_cli_sleep(wait);
			last = t;
			fwrite(data, 1, len, stdout);
			fflush(stdout);
		}
		json_decref(e);
	}
	return 0;
}

int moat_cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{"speed", required_argument, NULL, 's'},
		{"max-idle", required_argument, NULL, 'i'},
		{"audit", required_argument, NULL, 'a'},
		{"type", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	moat_cli_walk w = {.speed = 1, .realtime = true};
	const char *audit = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!parse_positive(optarg, &w.speed))
				return moat_cli_fail("--speed %s: expected a positive number", optarg);
			break;
		case 'i':
			if (!parse_positive(optarg, &w.max_idle))
				return moat_cli_fail("--max-idle %s: expected a positive number of seconds", optarg);
			break;
		case 'a':
			audit = optarg;
			break;
		case 'T':
			w.type = optarg;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, MOAT_EXIT_ERROR);
		}
	}
	if (audit) {
		if (optind != argc)
			return usage(stderr, MOAT_EXIT_ERROR);
		return moat_cli_audit_walk(audit, &w);
	}
	if (w.type || argc - optind != 1)
		return usage(stderr, MOAT_EXIT_ERROR);
	return play_cast(argv[optind], w.speed, w.max_idle);
}
