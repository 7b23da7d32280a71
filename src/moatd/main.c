/* moatd [--config FILE] [--socket PATH] [--listen HOST:PORT] [--check-config]:
 * the HTTP API (docs/api.md). Parses its options and configuration and
 * hands over to the server loop. */
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/limits.h>
#include <string.h>
#include <unistd.h>

#include "moatd.h"
#include "policy.h"
#include "server.h"
#include "util.h"

extern const char moatd_openapi_yaml[];

static void usage(FILE *f)
{
	fprintf(f, "usage: moatd [--config FILE] [--socket PATH] [--listen HOST:PORT] [--state-dir DIR]\n"
		   "       moatd --check-config [--config FILE]\n"
		   "\n"
		   "Serves moat's HTTP API (docs/api.md): runs, sessions, exec (streamed or\n"
		   "detached), audit, judge, approvals and metrics, on a unix socket\n"
		   "(/run/moat/moatd.sock as root, $XDG_RUNTIME_DIR/moat/moatd.sock otherwise)\n"
		   "and optionally on TCP with bearer tokens (TLS when the configuration gives a\n"
		   "certificate).\n"
		   "\n"
		   "  --config FILE        configuration (default /etc/moat/moatd.yaml when it exists)\n"
		   "  --socket PATH        the unix socket\n"
		   "  --listen HOST:PORT   also serve TCP (loopback unless tls is configured)\n"
		   "  --state-dir DIR      moatd's own records (owners of sessions, audit logs)\n"
		   "  --check-config       read the configuration and token file, say what is wrong, exit\n"
		   "  --help               this text\n");
}

static int fail(const char *what, const moat_error *err)
{
	fprintf(stderr, "moatd: %s: %s%s%s\n", what, err->msg,
		err->code && err->code != MOAT_EINPUT && err->code < 4096 ? ": " : "",
		err->code && err->code != MOAT_EINPUT && err->code < 4096 ? strerror(err->code) : "");
	return 1;
}

static int read_file(const char *path, size_t max, char **ret, moat_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "%s", path);
	_cleanup_free_ char *buf = malloc(max + 1);
	if (!buf)
		return moat_error_set(err, ENOMEM, "%s", path);
	ssize_t n = moat__read_all(fd, buf, max + 1);
	if (n < 0)
		return moat_error_set(err, (int)-n, "%s", path);
	if ((size_t)n > max)
		return moat_error_set(err, EFBIG, "%s: larger than %zu bytes", path, max);
	buf[n] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

static char *runtime_default(const char *leaf)
{
	char *p = NULL;
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (getuid() == 0)
		n = asprintf(&p, "/run/moat/%s", leaf);
	else if (xdg && xdg[0] == '/')
		n = asprintf(&p, "%s/moat/%s", xdg, leaf);
	else
		n = asprintf(&p, "/tmp/moat-%u/%s", (unsigned)getuid(), leaf);
	return n < 0 ? NULL : p;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'}, {"socket", required_argument, NULL, 's'},
		{"listen", required_argument, NULL, 'l'}, {"state-dir", required_argument, NULL, 'd'},
		{"check-config", no_argument, NULL, 'C'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	moat_stdio_ensure_open();
	const char *config = NULL, *sock = NULL, *listen = NULL, *state = NULL;
	bool check = false;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'c': config = optarg; break;
		case 's': sock = optarg; break;
		case 'l': listen = optarg; break;
		case 'd': state = optarg; break;
		case 'C': check = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "moatd: unexpected '%s' (see moatd --help)\n", argv[optind]);
		return 2;
	}
	moatd_config cfg;
	moatd_config_init(&cfg);
	moat_error err = {0};
	int rc = 0;
	if (!config && access("/etc/moat/moatd.yaml", F_OK) == 0)
		config = "/etc/moat/moatd.yaml";
	if (config) {
		_cleanup_free_ char *text = NULL;
		if (read_file(config, 1u << 20, &text, &err) < 0 || moatd_config_parse(text, strlen(text), &cfg, &err) < 0) {
			rc = fail(config, &err);
			goto out;
		}
	}
	if (cfg.tokens) {
		_cleanup_free_ char *text = NULL;
		if (read_file(cfg.tokens, 4u << 20, &text, &err) < 0 ||
		    moatd_tokens_parse(text, strlen(text), &cfg, &err) < 0) {
			rc = fail(cfg.tokens, &err);
			goto out;
		}
	}
	if (sock) {
		free(cfg.socket);
		cfg.socket = strdup(sock);
	}
	if (listen) {
		free(cfg.listen);
		cfg.listen = strdup(listen);
	}
	if (state) {
		free(cfg.state_dir);
		cfg.state_dir = strdup(state);
	}
	if (!cfg.socket)
		cfg.socket = runtime_default("moatd.sock");
	if (!cfg.state_dir)
		cfg.state_dir = runtime_default("moatd");
	if (!cfg.socket || !cfg.state_dir || (sock && !cfg.socket)) {
		fprintf(stderr, "moatd: out of memory\n");
		rc = 1;
		goto out;
	}
	/* Each token ceiling must be a policy moatd can hold requests to. */
	for (size_t i = 0; i < cfg.n_tlim; i++) {
		_cleanup_policy_ moat_policy *p = NULL;
		if (cfg.tlim[i].policy &&
		    (moat_policy_load_file(cfg.tlim[i].policy, &p, &err) < 0 || moatd_ceiling_check(p, &err) < 0)) {
			char what[128];
			snprintf(what, sizeof(what), "%s.%s.policy", cfg.tlim[i].section, cfg.tlim[i].name);
			rc = fail(what, &err);
			goto out;
		}
	}
	if (check) {
		printf("moatd: configuration ok (socket %s, %zu token(s))\n", cfg.socket, cfg.n_tokens);
		goto out;
	}
	/* moat itself: configured, or the one beside this binary. */
	char moat[PATH_MAX];
	if (cfg.moat)
		snprintf(moat, sizeof(moat), "%s", cfg.moat);
	else {
		ssize_t n = readlink("/proc/self/exe", moat, sizeof(moat) - 8);
		if (n <= 0) {
			fprintf(stderr, "moatd: cannot find my own path\n");
			rc = 1;
			goto out;
		}
		moat[n] = '\0';
		char *sl = strrchr(moat, '/');
		strcpy(sl ? sl + 1 : moat, "moat");
	}
	if (access(moat, X_OK) < 0) {
		fprintf(stderr, "moatd: %s: not executable (set 'moat:' in the configuration)\n", moat);
		rc = 1;
		goto out;
	}
	if (moatd_serve(&cfg, moat, moatd_openapi_yaml, &err) < 0)
		rc = fail("serve", &err);
out:
	moatd_config_done(&cfg);
	return rc;
}
