/* moat run [OPTIONS] -- COMMAND [ARG...]: one command in a fresh sandbox. */
#include <getopt.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>

#include "audit.h"
#include "cli.h"
#include "config.h"
#include "egress.h"
#include "policy.h"
#include "probe.h"
#include "record.h"
#include "sandbox.h"
#include "units.h"

int moat_cli_fail(const char *fmt, ...)
{
	va_list ap;
	_cleanup_free_ char *raw = NULL, *shown = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&raw, fmt, ap);
	va_end(ap);
	/* One line whatever the values echoed in it hold (moat__escape_controls). */
	shown = n >= 0 ? moat__escape_controls_dup(raw) : NULL;
	fprintf(stderr, "moat: %s\n", shown ? shown : "out of memory formatting an error");
	return MOAT_EXIT_ERROR;
}

static void run_usage(FILE *f)
{
	moat_limits d;
	moat_limits_default_code(&d);
	char wall[32], cpu[32], mem[32], out[32], tmp[32], disk[32];
	moat_format_duration_ms(d.wall_ms, wall, sizeof(wall));
	moat_format_duration_ms(d.cpu_ms, cpu, sizeof(cpu));
	moat_format_size(d.memory_bytes, mem, sizeof(mem));
	moat_format_size(d.output_bytes, out, sizeof(out));
	moat_format_size(d.tmp_bytes, tmp, sizeof(tmp));
	moat_format_size(d.disk_bytes, disk, sizeof(disk));
	fprintf(f,
		"usage: moat run [OPTIONS] -- COMMAND [ARG...]\n"
		"\n"
		"Runs COMMAND in a fresh sandbox: new user, mount, pid, ipc, uts, network and\n"
		"cgroup namespaces, a read-only root with the host's /usr, no network, an\n"
		"empty environment, and hard limits. Works as root and rootless.\n"
		"\n"
		"files:\n"
		"  --ro HOST[:PATH]     bind HOST read-only at PATH (default: same path)\n"
		"  --rw HOST[:PATH]     bind HOST read-write at PATH\n"
		"  --out DIR            writable output directory, at /out inside\n"
		"  --cwd PATH           working directory inside (default /out, else /tmp)\n"
		"  --stdin FILE         read standard input from FILE\n"
		"  -t, --tty            give the command a pseudo-terminal of its own\n"
		"environment:\n"
		"  --env NAME[=VALUE]   pass NAME from the caller, or set it (repeatable);\n"
		"                       otherwise only PATH, HOME, LANG and TERM are set\n"
		"  --hostname NAME      hostname inside (default moat)\n"
		"limits (defaults of the code profile in brackets):\n"
		"  --time S             wall clock [%s]\n"
		"  --cpu S              CPU time of all processes together [%s]\n"
		"  --mem BYTES          memory, swap off [%s]\n"
		"  --pids N             processes and threads [%llu]\n"
		"  --output BYTES       stdout and stderr together [%s]\n"
		"  --tmp-size BYTES     size of /tmp [%s]\n"
		"  --disk BYTES         what /out may hold, a tmpfs copied to --out after\n"
		"                       the run [%s]\n"
		"  --inodes N           files and folders /out may hold [%llu]\n"
		"  --files N            open files per process [%llu]\n"
		"  --fsize BYTES        largest file a process may write\n"
		"  --cpus N             CPU bandwidth, e.g. 0.5\n"
		"  sizes take K, M, G; durations ms, s, m, h; 'unlimited' lifts a limit\n"
		"policy:\n"
		"  --profile NAME       built-in policy: code (default) or agent\n"
		"  --policy FILE        policy file (YAML); the options above change single\n"
		"                       fields on top (see 'moat policy explain FILE')\n"
		"network (docs/network.md):\n"
		"  --net none|proxy     no network (default), or egress through moat's gateway\n"
		"  --net transparent    as proxy, and every TCP connection and DNS query redirected\n"
		"                       to the gateway (for programs that ignore proxy variables)\n"
		"  --allow-host PAT[:PORTS]  allow a host (exact or *.example.com), ports 80\n"
		"                       and 443 unless given as :PORT[,PORT]; implies proxy\n"
		"  --allow-private CIDR let the gateway reach a private or special range\n"
		"  --net-host NAME=ADDR answer NAME with ADDR instead of asking DNS\n"
		"  --resolver IP[:PORT] the name server the gateway asks\n"
		"  --net-log FILE       append each net.request event as a JSON line\n"
		"reporting:\n"
		"  --result FILE|-      write the JSON result to FILE (or stdout)\n"
		"  --audit FILE         append the run's events to a hash-chained audit log\n"
		"  --audit-files        also record which files the command opened, wrote,\n"
		"                       removed, and which programs it ran (with --audit;\n"
		"                       alone, as in the agent profile, it does nothing)\n"
		"  --audit-max-size BYTES  the most the run adds to the audit log; past it,\n"
		"                       one audit.overflow event and the rest is counted [4M]\n"
		"  --record FILE.cast   record the terminal output (asciicast v2)\n"
		"\n"
		"exit status: the command's own; 128+N when signal N ended it (a limit kills\n"
		"with SIGKILL: 137, the result says which); 125 when moat failed; 126 when the\n"
		"command cannot be executed; 127 when it is not found.\n"
		"\n"
		"example:\n"
		"  moat run --ro ./input:/input --out ./output --time 5s --result - \\\n"
		"      -- python3 -c 'print(open(\"/input/data.txt\").read().upper())'\n",
		wall, cpu, mem, (unsigned long long)d.pids, out, tmp, disk,
		(unsigned long long)d.disk_inodes, (unsigned long long)d.files);
}

enum {
	OPT_RO = 1000,
	OPT_RW,
	OPT_OUT,
	OPT_CWD,
	OPT_ENV,
	OPT_STDIN,
	OPT_HOSTNAME,
	OPT_TIME,
	OPT_CPU,
	OPT_MEM,
	OPT_PIDS,
	OPT_OUTPUT,
	OPT_TMP_SIZE,
	OPT_DISK,
	OPT_INODES,
	OPT_FILES,
	OPT_FSIZE,
	OPT_CPUS,
	OPT_RESULT,
	OPT_AUDIT,
	OPT_AUDIT_FILES,
	OPT_AUDIT_MAX_SIZE,
	OPT_RECORD,
	OPT_PROFILE,
	OPT_POLICY,
	OPT_NET, /* the network options are handled by run_net.c */
	OPT_ALLOW_HOST,
	OPT_ALLOW_PRIVATE,
	OPT_NET_HOST,
	OPT_RESOLVER,
	OPT_NET_LOG,
};

static const struct option run_options[] = {
	{"ro", required_argument, NULL, OPT_RO},
	{"rw", required_argument, NULL, OPT_RW},
	{"out", required_argument, NULL, OPT_OUT},
	{"cwd", required_argument, NULL, OPT_CWD},
	{"env", required_argument, NULL, OPT_ENV},
	{"stdin", required_argument, NULL, OPT_STDIN},
	{"tty", no_argument, NULL, 't'},
	{"hostname", required_argument, NULL, OPT_HOSTNAME},
	{"time", required_argument, NULL, OPT_TIME},
	{"cpu", required_argument, NULL, OPT_CPU},
	{"mem", required_argument, NULL, OPT_MEM},
	{"pids", required_argument, NULL, OPT_PIDS},
	{"output", required_argument, NULL, OPT_OUTPUT},
	{"tmp-size", required_argument, NULL, OPT_TMP_SIZE},
	{"disk", required_argument, NULL, OPT_DISK},
	{"inodes", required_argument, NULL, OPT_INODES},
	{"files", required_argument, NULL, OPT_FILES},
	{"fsize", required_argument, NULL, OPT_FSIZE},
	{"cpus", required_argument, NULL, OPT_CPUS},
	{"result", required_argument, NULL, OPT_RESULT},
	{"audit", required_argument, NULL, OPT_AUDIT},
	{"audit-files", no_argument, NULL, OPT_AUDIT_FILES},
	{"audit-max-size", required_argument, NULL, OPT_AUDIT_MAX_SIZE},
	{"record", required_argument, NULL, OPT_RECORD},
	{"profile", required_argument, NULL, OPT_PROFILE},
	{"policy", required_argument, NULL, OPT_POLICY},
	{"net", required_argument, NULL, OPT_NET},
	{"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
	{"allow-private", required_argument, NULL, OPT_ALLOW_PRIVATE},
	{"net-host", required_argument, NULL, OPT_NET_HOST},
	{"resolver", required_argument, NULL, OPT_RESOLVER},
	{"net-log", required_argument, NULL, OPT_NET_LOG},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static int set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

/* Makes a host path absolute against the caller's working directory. */
static int abs_host_path(const char *p, char **ret)
{
	/* An empty path stays empty, to meet the policy's own check of the
	 * field ("empty string") rather than become the current folder. */
	if (p[0] == '/' || !p[0])
		return (*ret = strdup(p)) ? 0 : -ENOMEM;
	char cwd[MOAT_MAX_PATH];
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	return asprintf(ret, "%s/%s", cwd, p) < 0 ? -ENOMEM : 0;
}

static int add_bind(moat_config *c, const char *spec, unsigned flags, moat_error *err)
{
	/* HOST may be relative to the caller's folder; PATH inside must be
	 * absolute (checked by validation). */
	_cleanup_free_ char *abs = NULL;
	const char *colon = strchr(spec, ':');
	_cleanup_free_ char *host = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
	if (!host)
		return moat_error_set(err, ENOMEM, "bind");
	if (host[0] && abs_host_path(host, &abs) < 0)
		return moat_error_set(err, errno, "bind %s", spec);
	_cleanup_free_ char *full = NULL;
	if (abs) {
		if (asprintf(&full, "%s%s%s", abs, colon ? ":" : "", colon ? colon + 1 : (host[0] == '/' ? "" : "")) < 0)
			return moat_error_set(err, ENOMEM, "bind");
		/* A relative HOST without :PATH has no obvious place inside. */
		if (!colon && host[0] != '/')
			return moat_error_set(err, MOAT_EINPUT,
					      "%s %s: a relative host path needs :PATH (where to put it inside)",
					      flags & MOAT_BIND_RW ? "--rw" : "--ro", spec);
	}
	return moat_config_add_bind_spec(c, full ? full : spec, flags, err);
}

/* --env NAME=VALUE, or --env NAME: the caller's value, not passed when
 * unset (a bad name is refused either way). */
static int add_env(moat_config *c, const char *spec, moat_error *err)
{
	if (strchr(spec, '='))
		return moat_config_add_env(c, spec, err);
	const char *v = getenv(spec);
	_cleanup_free_ char *kv = NULL;
	if (asprintf(&kv, "%s=%s", spec, v ? v : "") < 0)
		return moat_error_set(err, ENOMEM, "env");
	if (v)
		return moat_config_add_env(c, kv, err);
	/* Checked on a scratch configuration, then dropped. */
	_cleanup_config_ moat_config *scratch = moat_config_new();
	if (!scratch)
		return moat_error_set(err, ENOMEM, "env");
	return moat_config_add_env(scratch, kv, err);
}

/* Parses the options of `moat run` (and of commands that take the same
 * ones) into c. Returns the index of the first command word, or -1 after
 * printing an error. */
int moat_cli_parse_run_options(int argc, char **argv, moat_config *c, bool *ret_help)
{
	moat_error err = {0};
	int opt, r = 0;
	optind = 1;
	opterr = 0;
	*ret_help = false;
	while ((opt = getopt_long(argc, argv, "+th", run_options, NULL)) != -1) {
		const char *name = NULL;
		for (const struct option *o = run_options; o->name; o++)
			if (o->val == opt)
				name = o->name;
		switch (opt) {
		case 'h':
			*ret_help = true;
			return 0;
		case 't':
			c->tty = true;
			break;
		case OPT_RO:
			r = add_bind(c, optarg, 0, &err);
			break;
		case OPT_RW:
			r = add_bind(c, optarg, MOAT_BIND_RW, &err);
			break;
		case OPT_OUT: {
			_cleanup_free_ char *abs = NULL;
			r = abs_host_path(optarg, &abs);
			if (r < 0)
				r = moat_error_set(&err, r, "--out %s", optarg);
			else
				r = set_str(&c->out_dir, abs);
			break;
		}
		case OPT_CWD:
			r = set_str(&c->cwd, optarg);
			break;
		case OPT_ENV:
			r = add_env(c, optarg, &err);
			break;
		case OPT_STDIN:
			r = set_str(&c->stdin_path, optarg);
			break;
		case OPT_HOSTNAME:
			r = set_str(&c->hostname, optarg);
			break;
		case OPT_TIME:
			r = moat_parse_duration_ms(optarg, &c->limits.wall_ms, &err);
			break;
		case OPT_CPU:
			r = moat_parse_duration_ms(optarg, &c->limits.cpu_ms, &err);
			break;
		case OPT_MEM:
			r = moat_parse_size(optarg, &c->limits.memory_bytes, &err);
			break;
		case OPT_PIDS:
			r = moat_parse_count(optarg, &c->limits.pids, &err);
			break;
		case OPT_OUTPUT:
			r = moat_parse_size(optarg, &c->limits.output_bytes, &err);
			break;
		case OPT_TMP_SIZE:
			r = moat_parse_size(optarg, &c->limits.tmp_bytes, &err);
			break;
		case OPT_DISK:
			r = moat_parse_size(optarg, &c->limits.disk_bytes, &err);
			break;
		case OPT_INODES:
			r = moat_parse_count(optarg, &c->limits.disk_inodes, &err);
			break;
		case OPT_FILES:
			r = moat_parse_count(optarg, &c->limits.files, &err);
			break;
		case OPT_FSIZE:
			r = moat_parse_size(optarg, &c->limits.fsize, &err);
			break;
		case OPT_CPUS:
			r = moat_parse_cpus_milli(optarg, &c->limits.cpus_milli, &err);
			break;
		case OPT_RESULT:
			r = set_str(&c->result_path, optarg);
			break;
		case OPT_AUDIT:
			r = set_str(&c->audit_path, optarg);
			break;
		case OPT_AUDIT_FILES:
			c->audit_files = true;
			break;
		case OPT_AUDIT_MAX_SIZE:
			r = moat_parse_size(optarg, &c->audit_max_size, &err);
			if (r >= 0 && (c->audit_max_size < MOAT_AUDIT_MIN_MAX_SIZE || c->audit_max_size > MOAT_AUDIT_MAX_MAX_SIZE))
				r = moat_error_set(&err, MOAT_EINPUT, "'%s' is out of range (expected 64K to 1T)", optarg);
			break;
		case OPT_RECORD:
			r = set_str(&c->record_path, optarg);
			break;
		case OPT_PROFILE:
			r = set_str(&c->profile, optarg);
			break;
		case OPT_POLICY:
			r = set_str(&c->policy_path, optarg);
			break;
		case OPT_NET:
		case OPT_ALLOW_HOST:
		case OPT_ALLOW_PRIVATE:
		case OPT_NET_HOST:
		case OPT_RESOLVER:
		case OPT_NET_LOG:
			r = moat_cli_run_net_option(c, name, optarg, &err);
			break;
		case '?':
		default:
			if (optopt && optopt < 256)
				moat_cli_fail("run: unknown option '-%c' (see 'moat run --help')", optopt);
			else if (optopt)
				moat_cli_fail("run: option '%s' needs a value", argv[optind - 1]);
			else
				moat_cli_fail("run: unknown option '%s' (see 'moat run --help')", argv[optind - 1]);
			return -1;
		}
		if (r < 0) {
			char buf[MOAT_ERROR_MAX + 64];
			if (err.code == 0)
				moat_error_set(&err, r, "out of memory");
			moat_error_format(&err, buf, sizeof(buf));
			if (name && err.code == MOAT_EINPUT && !strstr(buf, "--"))
				moat_cli_fail("run: --%s: %s", name, buf);
			else
				moat_cli_fail("run: %s", buf);
			return -1;
		}
	}
	return optind;
}

static int run_fail_err(const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	return moat_cli_fail("%s", moat_error_format(err, buf, sizeof(buf)));
}

/* --profile/--policy first, the flags on top (cli.h). */
int moat_cli_load_run_config(int argc, char **argv, moat_config **ret, moat_policy **ret_policy, bool *ret_help)
{
	/* First pass: only to learn --profile and --policy (and to report bad
	 * options once). */
	_cleanup_config_ moat_config *scratch = moat_config_new();
	if (!scratch)
		return moat_cli_fail("out of memory"), -1;
	int first = moat_cli_parse_run_options(argc, argv, scratch, ret_help);
	if (first < 0 || *ret_help)
		return first;

	/* Second pass: the policy fills a fresh configuration, then the flags
	 * change single fields on top. */
	_cleanup_config_ moat_config *c = moat_config_new();
	_cleanup_policy_ moat_policy *p = NULL;
	moat_error err = {0};
	if (!c)
		return moat_cli_fail("out of memory"), -1;
	if (moat_policy_load_into(scratch->profile, scratch->policy_path, c, &p, &err) < 0)
		return run_fail_err(&err), -1;
	/* The policy's pass-through names (env: [NAME]) take this process's
	 * values, as --env NAME does. */
	for (char **e = p->env; e && *e; e++)
		if (!strchr(*e, '=') && add_env(c, *e, &err) < 0)
			return run_fail_err(&err), -1;
	moat_limits before = c->limits;
	first = moat_cli_parse_run_options(argc, argv, c, ret_help);
	if (first < 0)
		return -1;
	if (moat_policy_take_flags(p, c, &before, &err) < 0)
		return run_fail_err(&err), -1;
	*ret = TAKE_PTR(c);
	if (ret_policy)
		*ret_policy = TAKE_PTR(p);
	return first;
}

/* The policy's require: list, checked against the host before anything
 * starts, so a run that would lack a required layer never begins. */
static int check_host_requirements(const moat_policy *p, moat_error *err)
{
	if (!p->require)
		return 0;
	char *names[8] = {NULL};
	size_t n = 0;
	for (unsigned bit = 1; bit && n + 1 < ELEMENTSOF(names); bit <<= 1)
		if ((p->require & bit) && moat_layer_to_string((moat_layer)bit))
			names[n++] = (char *)moat_layer_to_string((moat_layer)bit);
	moat_host h;
	moat_host_probe(&h);
	return moat_host_require(&h, names, err);
}

int moat_cmd_run(int argc, char **argv)
{
	_cleanup_config_ moat_config *c = NULL;
	_cleanup_policy_ moat_policy *policy = NULL;
	bool help;
	int first = moat_cli_load_run_config(argc, argv, &c, &policy, &help);
	if (help) {
		run_usage(stdout);
		return 0;
	}
	if (first < 0)
		return MOAT_EXIT_ERROR;
	if (first >= argc)
		return moat_cli_fail("run: no command given (usage: moat run [OPTIONS] -- COMMAND [ARG...])");
	c->argv = moat__strv_copy(argv + first);
	if (!c->argv)
		return moat_cli_fail("out of memory");

	moat_result res;
	moat_error err = {0};
	if (policy && moat_policy_attach(policy, c, &err) < 0)
		return moat_cli_fail("out of memory");
	if (policy && check_host_requirements(policy, &err) < 0) {
		char ebuf[MOAT_ERROR_MAX + 64];
		return moat_cli_fail("run: %s", moat_error_format(&err, ebuf, sizeof(ebuf)));
	}
	moat_run_io io;
	moat_run_io_init(&io);
	char buf[MOAT_ERROR_MAX + 64];
	_cleanup_audit_ moat_audit *audit = NULL;
	if (c->audit_path && moat_audit_open(c->audit_path, NULL, &audit, &err) < 0)
		return moat_cli_fail("%s", moat_error_format(&err, buf, sizeof(buf)));
	if (audit && moat_audit_set_max_size(audit, c->audit_max_size ? c->audit_max_size : MOAT_AUDIT_DEFAULT_MAX_SIZE,
					     &err) < 0)
		return moat_cli_fail("%s", moat_error_format(&err, buf, sizeof(buf)));
	_cleanup_record_ moat_record *rec = NULL;
	if (c->record_path) {
		moat_record_header h = {.term = c->tty ? getenv("TERM") : NULL, .command = c->argv[0]};
		struct winsize ws;
		if (c->tty && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
			h.width = ws.ws_col, h.height = ws.ws_row;
		if (moat_record_open(c->record_path, &h, moat_audit_redactor(audit), &rec, &err) < 0)
			return moat_cli_fail("%s", moat_error_format(&err, buf, sizeof(buf)));
	}
	io.audit = audit;
	io.record = rec;
	/* moat run is a filter: what is piped into it is the command's input. */
	io.stdin_inherit = true;
	moat_egress egress;
	int r = moat_egress_from_policy(c, policy, audit, &egress, &err);
	if (r < 0)
		return moat_cli_fail("run: %s", moat_error_format(&err, buf, sizeof(buf)));
	io.gateway = moat_egress_gateway(&egress);
	r = moat_sandbox_run(c, &io, &res, &err);
	moat_egress_done(&egress);
	if (r < 0)
		moat_cli_fail("%s", moat_error_format(&err, buf, sizeof(buf)));
	else if (res.error[0])
		moat_cli_fail("%s", res.error);
	if (rec && moat_record_close(TAKE_PTR(rec), &err) < 0) {
		moat_cli_fail("%s", moat_error_format(&err, buf, sizeof(buf)));
		return MOAT_EXIT_ERROR;
	}
	/* A run whose record has a hole must not look fully audited. */
	if (audit && moat_audit_failed(audit)) {
		moat_cli_fail("audit log %s: an event could not be written; the log is incomplete", c->audit_path);
		return MOAT_EXIT_ERROR;
	}
	if (c->result_path) {
		moat_error werr = {0};
		if (moat_result_write(&res, c->result_path, &werr) < 0) {
			moat_cli_fail("%s", moat_error_format(&werr, buf, sizeof(buf)));
			return MOAT_EXIT_ERROR;
		}
	}
	return res.exit_status;
}
