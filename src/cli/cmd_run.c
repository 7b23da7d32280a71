/* moat run [OPTIONS] -- COMMAND [ARG...]: one command in a fresh sandbox. */
#include <getopt.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>

#include "audit.h"
#include "cli.h"
#include "config.h"
#include "egress.h"
#include "nested.h"
#include "policy.h"
#include "probe.h"
#include "record.h"
#include "secretstore.h"
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
		"  --direct-stdout      the command's stdout is moat's own (a pipe), not\n"
		"                       captured: no output limit, recording or secret\n"
		"                       redaction on it (for a reader doing those: mcp wrap)\n"
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
		"  --secret NAME=env:VAR@HOST  the sandbox sees a placeholder in $NAME; the\n"
		"                       gateway sends VAR's value to HOST only (also\n"
		"                       NAME=file:PATH@HOST; docs/secrets.md)\n"
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
	OPT_SECRET,
	OPT_DIRECT_STDOUT,
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
	{"secret", required_argument, NULL, OPT_SECRET},
	{"direct-stdout", no_argument, NULL, OPT_DIRECT_STDOUT},
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

/* --ro/--rw HOST[:PATH]: HOST may be relative to the caller's folder; PATH
 * inside must be absolute (checked with the policy's fields). */
static int add_bind(moat_policy *o, const char *spec, unsigned flags, moat_error *err)
{
	if (strlen(spec) >= 2 * MOAT_MAX_PATH)
		return moat_error_set(err, MOAT_EINPUT, "bind %.40s...: path too long", spec);
	const char *colon = strchr(spec, ':');
	/* The colon separates, so a host path may not contain one; a path
	 * that does is rejected rather than read two ways. */
	if (colon && strchr(colon + 1, ':'))
		return moat_error_set(err, MOAT_EINPUT, "bind %s: more than one ':' (expected HOST[:PATH])", spec);
	_cleanup_free_ char *host = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
	if (!host)
		return moat_error_set(err, ENOMEM, "bind");
	const char *dst = colon ? colon + 1 : host;
	if (!host[0] || !dst[0])
		return moat_error_set(err, MOAT_EINPUT, "bind needs a host path and a sandbox path");
	/* A relative HOST without :PATH has no obvious place inside. */
	if (!colon && host[0] != '/')
		return moat_error_set(err, MOAT_EINPUT, "%s %s: a relative host path needs :PATH (where to put it inside)",
				      flags & MOAT_BIND_RW ? "--rw" : "--ro", spec);
	_cleanup_free_ char *abs = NULL;
	if (abs_host_path(host, &abs) < 0)
		return moat_error_set(err, errno, "bind %s", spec);
	return moat_policy_add_bind(o, abs, dst, flags, err);
}

/* NAME=VALUE, or NAME: the caller's value, not passed when unset (a bad
 * name is refused either way). Appended to *env. */
static int add_env(char ***env, const char *spec, moat_error *err)
{
	if (moat__strv_length(*env) >= MOAT_MAX_ENV)
		return moat_error_set(err, MOAT_EINPUT, "env: more than %d variables", MOAT_MAX_ENV);
	const char *v = strchr(spec, '=') ? NULL : getenv(spec);
	_cleanup_free_ char *kv = NULL;
	if (!strchr(spec, '=') && asprintf(&kv, "%s=%s", spec, v ? v : "") < 0)
		return moat_error_set(err, ENOMEM, "env");
	const char *entry = kv ? kv : spec;
	int r = moat_env_spec_check(entry, err);
	if (r < 0)
		return r;
	if (kv && !v)
		return 0;
	return moat__strv_push(env, entry) < 0 ? moat_error_set(err, ENOMEM, "env") : 0;
}

/* The limit options, each the policy field at offset. */
static const struct {
	int opt;
	size_t offset;
	unsigned bit;
	moat_unit unit;
} limit_options[] = {
	{OPT_TIME, offsetof(moat_limits, wall_ms), MOAT_LIMIT_WALL, MOAT_UNIT_DURATION},
	{OPT_CPU, offsetof(moat_limits, cpu_ms), MOAT_LIMIT_CPU_TIME, MOAT_UNIT_DURATION},
	{OPT_MEM, offsetof(moat_limits, memory_bytes), MOAT_LIMIT_MEMORY, MOAT_UNIT_SIZE},
	{OPT_PIDS, offsetof(moat_limits, pids), MOAT_LIMIT_PIDS, MOAT_UNIT_COUNT},
	{OPT_OUTPUT, offsetof(moat_limits, output_bytes), MOAT_LIMIT_OUTPUT, MOAT_UNIT_SIZE},
	{OPT_TMP_SIZE, offsetof(moat_limits, tmp_bytes), MOAT_LIMIT_TMP, MOAT_UNIT_SIZE},
	{OPT_DISK, offsetof(moat_limits, disk_bytes), MOAT_LIMIT_DISK, MOAT_UNIT_SIZE},
	{OPT_INODES, offsetof(moat_limits, disk_inodes), MOAT_LIMIT_INODES, MOAT_UNIT_COUNT},
	{OPT_FILES, offsetof(moat_limits, files), MOAT_LIMIT_FILES, MOAT_UNIT_COUNT},
	{OPT_FSIZE, offsetof(moat_limits, fsize), MOAT_LIMIT_FSIZE, MOAT_UNIT_SIZE},
	{OPT_CPUS, offsetof(moat_limits, cpus_milli), MOAT_LIMIT_CPU, MOAT_UNIT_CPUS},
};

static int set_limit(moat_policy *o, int opt, const char *value, moat_error *err)
{
	for (size_t i = 0; i < ELEMENTSOF(limit_options); i++) {
		if (limit_options[i].opt != opt)
			continue;
		uint64_t v = 0;
		int r;
		switch (limit_options[i].unit) {
		case MOAT_UNIT_DURATION: r = moat_parse_duration_ms(value, &v, err); break;
		case MOAT_UNIT_SIZE: r = moat_parse_size(value, &v, err); break;
		case MOAT_UNIT_CPUS: r = moat_parse_cpus_milli(value, &v, err); break;
		default: r = moat_parse_count(value, &v, err); break;
		}
		/* Checked here, so that the message names the flag as well as
		 * the field ("--pids: limits.pids: 0 is too small ..."). */
		if (r < 0 || (r = moat_limit_check(limit_options[i].offset, v, err)) < 0)
			return r;
		memcpy((char *)&o->limits + limit_options[i].offset, &v, sizeof(v));
		o->limits_set |= limit_options[i].bit;
		return 0;
	}
	return moat_error_set(err, EINVAL, "not a limit option");
}

void moat_cli_run_opts_done(moat_cli_run_opts *o)
{
	free(o->profile);
	free(o->policy_path);
	free(o->net_log);
	moat_policy_free(o->overlay);
	*o = (moat_cli_run_opts){0};
}

/* Parses the options of `moat run` (and of commands that take the same
 * ones) into o: --profile, --policy and --net-log for the front, every
 * other one as a field of the policy overlay. Returns the index of the
 * first command word, or -1 after printing an error. */
int moat_cli_parse_run_options(int argc, char **argv, moat_cli_run_opts *ro, bool *ret_help)
{
	moat_error err = {0};
	int opt, r = 0;
	optind = 1;
	opterr = 0;
	*ret_help = false;
	if (!ro->overlay && !(ro->overlay = moat_policy_overlay_new()))
		return moat_cli_fail("out of memory"), -1;
	moat_policy *o = ro->overlay;
	while ((opt = getopt_long(argc, argv, "+th", run_options, NULL)) != -1) {
		const char *name = NULL;
		for (const struct option *op = run_options; op->name; op++)
			if (op->val == opt)
				name = op->name;
		switch (opt) {
		case 'h':
			*ret_help = true;
			return 0;
		case 't':
			o->tty = true;
			break;
		case OPT_DIRECT_STDOUT:
			o->stdout_direct = true;
			break;
		case OPT_RO:
			r = add_bind(o, optarg, 0, &err);
			break;
		case OPT_RW:
			r = add_bind(o, optarg, MOAT_BIND_RW, &err);
			break;
		case OPT_OUT: {
			_cleanup_free_ char *abs = NULL;
			r = abs_host_path(optarg, &abs);
			if (r < 0)
				r = moat_error_set(&err, r, "--out %s", optarg);
			else
				r = set_str(&o->out_dir, abs);
			break;
		}
		case OPT_CWD:
			r = set_str(&o->cwd, optarg);
			break;
		case OPT_ENV:
			r = add_env(&o->env, optarg, &err);
			break;
		case OPT_STDIN:
			r = set_str(&o->stdin_path, optarg);
			break;
		case OPT_HOSTNAME:
			r = set_str(&o->hostname, optarg);
			break;
		case OPT_TIME:
		case OPT_CPU:
		case OPT_MEM:
		case OPT_PIDS:
		case OPT_OUTPUT:
		case OPT_TMP_SIZE:
		case OPT_DISK:
		case OPT_INODES:
		case OPT_FILES:
		case OPT_FSIZE:
		case OPT_CPUS:
			r = set_limit(o, opt, optarg, &err);
			break;
		case OPT_RESULT:
			r = set_str(&o->result_path, optarg);
			break;
		case OPT_AUDIT:
			r = set_str(&o->audit_log, optarg);
			break;
		case OPT_AUDIT_FILES:
			o->audit_files = true;
			break;
		case OPT_AUDIT_MAX_SIZE:
			r = moat_parse_size(optarg, &o->audit_max_size, &err);
			if (r >= 0 && (o->audit_max_size < MOAT_AUDIT_MIN_MAX_SIZE || o->audit_max_size > MOAT_AUDIT_MAX_MAX_SIZE))
				r = moat_error_set(&err, MOAT_EINPUT, "'%s' is out of range (expected 64K to 1T)", optarg);
			break;
		case OPT_RECORD:
			r = set_str(&o->record_path, optarg);
			break;
		case OPT_PROFILE:
			r = set_str(&ro->profile, optarg);
			break;
		case OPT_POLICY:
			r = set_str(&ro->policy_path, optarg);
			break;
		case OPT_NET:
		case OPT_ALLOW_HOST:
		case OPT_ALLOW_PRIVATE:
		case OPT_NET_HOST:
		case OPT_RESOLVER:
		case OPT_NET_LOG:
		case OPT_SECRET:
			r = moat_cli_run_net_option(ro, name, optarg, &err);
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

/* The policy's pass-through names (env: [NAME]) take this process's
 * values, as --env NAME does; they come after the policy's NAME=VALUE
 * entries. */
static int resolve_policy_env(moat_policy *p, moat_error *err)
{
	_cleanup_strv_free_ char **env = NULL;
	for (char **e = p->env; e && *e; e++)
		if (strchr(*e, '=') && moat__strv_push(&env, *e) < 0)
			return moat_error_set(err, ENOMEM, "env");
	for (char **e = p->env; e && *e; e++)
		if (!strchr(*e, '=')) {
			int r = add_env(&env, *e, err);
			if (r < 0)
				return r;
		}
	moat__strv_free(p->env);
	p->env = TAKE_PTR(env);
	return 0;
}

/* The base policy (--profile/--policy), then the other options as an
 * overlay on top (cli.h). */
static int load_run_policy(int argc, char **argv, moat_policy **ret, char **ret_net_log, bool *ret_help,
			   bool is_run)
{
	_cleanup_(moat_cli_run_opts_done) moat_cli_run_opts o = {0};
	int first = moat_cli_parse_run_options(argc, argv, &o, ret_help);
	if (first < 0 || *ret_help)
		return first;
	/* The commands that share moat run's options (session create, judge,
	 * eval, policy) have no stdout of the command to hand over. */
	if (!is_run && o.overlay->stdout_direct)
		return moat_cli_fail("--direct-stdout: only moat run takes it"), -1;
	if (o.profile && o.policy_path)
		return moat_cli_fail("--profile and --policy both given (expected one of them)"), -1;
	_cleanup_policy_ moat_policy *p = NULL;
	moat_error err = {0};
	if (moat_policy_load_base(o.profile, o.policy_path, &p, &err) < 0 || resolve_policy_env(p, &err) < 0 ||
	    moat_policy_merge_overlay(p, o.overlay, &err) < 0)
		return run_fail_err(&err), -1;
	*ret = TAKE_PTR(p);
	if (ret_net_log)
		*ret_net_log = TAKE_PTR(o.net_log);
	return first;
}

int moat_cli_load_run_policy(int argc, char **argv, moat_policy **ret, char **ret_net_log, bool *ret_help)
{
	return load_run_policy(argc, argv, ret, ret_net_log, ret_help, false);
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

struct after_clone {
	moat_egress *egress;
	moat_nest_server *nest;
	moat_audit *audit;
};

/* Once the init is cloned (threads may start from then on): the gateway's
 * TLS and the delegation socket's server. */
static int after_clone(void *arg, moat_error *err)
{
	struct after_clone *a = arg;
	int r = moat_egress_tls_arm(a->egress, "run", err);
	if (r >= 0 && a->nest)
		r = moat_nest_server_start(a->nest, a->audit, err);
	return r;
}

/* Inside a sandbox (MOAT_PARENT_POLICY set) no namespace can be made: the
 * run is delegated to the outer sandbox's front through its socket, with
 * this run's effective policy, already narrowed by the parent's. */
static int run_delegated(const moat_policy *policy, char *const *argv)
{
	moat_error err = {0};
	char buf[MOAT_ERROR_MAX + 64];
	int r = moat_nest_run(policy, argv, &err);
	if (r < 0)
		return moat_cli_fail("run: %s", moat_error_format(&err, buf, sizeof(buf)));
	return r;
}

int moat_cmd_run(int argc, char **argv)
{
	_cleanup_policy_ moat_policy *policy = NULL;
	_cleanup_free_ char *net_log = NULL;
	bool help;
	int first = load_run_policy(argc, argv, &policy, &net_log, &help, true);
	if (help) {
		run_usage(stdout);
		return 0;
	}
	if (first < 0)
		return MOAT_EXIT_ERROR;
	if (first >= argc)
		return moat_cli_fail("run: no command given (usage: moat run [OPTIONS] -- COMMAND [ARG...])");

	const char *parent = getenv(MOAT_PARENT_POLICY_ENV);
	if (parent && parent[0] && policy->stdout_direct)
		return moat_cli_fail("run: --direct-stdout: not inside a sandbox (the outer one relays the output)");
	if (parent && parent[0])
		return run_delegated(policy, argv + first);
	if (policy->stdout_direct && policy->record_path)
		return moat_cli_fail("run: --direct-stdout and --record both given (a recording needs the output)");

	moat_result res;
	moat_error err = {0};
	char buf[MOAT_ERROR_MAX + 64];
	_cleanup_config_ moat_config *spec = NULL;
	/* Before the compile: the socket's bind is part of the policy. */
	_cleanup_(moat_nest_server_freep) moat_nest_server *nest = NULL;
	if (policy->exec_delegate && moat_nest_server_new(policy, &nest, &err) < 0)
		return moat_cli_fail("run: %s", moat_error_format(&err, buf, sizeof(buf)));
	if (moat_policy_compile(policy, argv + first, &spec, &err) < 0)
		return moat_cli_fail("run: %s", moat_error_format(&err, buf, sizeof(buf)));
	const moat_config *c = spec;
	if (check_host_requirements(policy, &err) < 0)
		return moat_cli_fail("run: %s", moat_error_format(&err, buf, sizeof(buf)));
	moat_run_io io;
	moat_run_io_init(&io);
	/* The values are read now, before the sandbox exists, into memory its
	 * init will not inherit; the sandbox gets placeholders. */
	_cleanup_secrets_ moat_secrets *secrets = NULL;
	if (moat_secrets_open(policy, &secrets, &err) < 0 || moat_secrets_apply_env(secrets, spec, &err) < 0)
		return moat_cli_fail("run: %s", moat_error_format(&err, buf, sizeof(buf)));
	io.secrets = secrets;
	/* Where the run reports is the front's: from the effective policy
	 * (audit.log, audit.record, result), not from the run specification. */
	_cleanup_audit_ moat_audit *audit = NULL;
	if (policy->audit_log && moat_audit_open(policy->audit_log, NULL, &audit, &err) < 0)
		return moat_cli_fail("%s", moat_error_format(&err, buf, sizeof(buf)));
	if (audit && moat_audit_set_max_size(audit, policy->audit_max_size ? policy->audit_max_size
									   : MOAT_AUDIT_DEFAULT_MAX_SIZE,
					     &err) < 0)
		return moat_cli_fail("%s", moat_error_format(&err, buf, sizeof(buf)));
	_cleanup_record_ moat_record *rec = NULL;
	if (policy->record_path) {
		moat_record_header h = {.term = c->tty ? getenv("TERM") : NULL, .command = c->argv[0]};
		struct winsize ws;
		if (c->tty && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
			h.width = ws.ws_col, h.height = ws.ws_row;
		/* Redacted with the audit log's redactor, or without an audit
		 * log with the secrets' own: a recording never holds a value. */
		const moat_redactor *red = audit ? moat_audit_redactor(audit) : moat_secrets_redactor(secrets);
		if (moat_record_open(policy->record_path, &h, red, &rec, &err) < 0)
			return moat_cli_fail("%s", moat_error_format(&err, buf, sizeof(buf)));
	}
	io.audit = audit;
	io.record = rec;
	/* moat run is a filter: what is piped into it is the command's input. */
	io.stdin_inherit = true;
	io.stdout_direct = policy->stdout_direct;
	io.stdout_direct_fd = STDOUT_FILENO;
	moat_egress egress;
	int r = moat_egress_from_policy(policy, net_log, audit, &egress, &err);
	if (r < 0)
		return moat_cli_fail("run: %s", moat_error_format(&err, buf, sizeof(buf)));
	/* A test upstream's authority, for the test suite only: production
	 * upstreams are verified against the host's trust store alone. */
	if ((r = moat_egress_tls_prepare(&egress, spec, getenv("MOAT_TEST_UPSTREAM_CA"), &err)) < 0) {
		moat_egress_done(&egress);
		return moat_cli_fail("run: %s", moat_error_format(&err, buf, sizeof(buf)));
	}
	egress.cfg.secrets = secrets;
	struct after_clone ac = {.egress = &egress, .nest = nest, .audit = audit};
	io.after_clone = after_clone;
	io.after_clone_arg = &ac;
	io.gateway = moat_egress_gateway(&egress);
	r = moat_sandbox_run(c, &io, &res, &err);
	/* Siblings end with the run, and their events are in before the
	 * log is closed. */
	moat_nest_server_free(TAKE_PTR(nest));
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
		moat_cli_fail("audit log %s: an event could not be written; the log is incomplete", policy->audit_log);
		return MOAT_EXIT_ERROR;
	}
	if (policy->result_path) {
		moat_error werr = {0};
		if (moat_result_write(&res, policy->result_path, &werr) < 0) {
			moat_cli_fail("%s", moat_error_format(&werr, buf, sizeof(buf)));
			return MOAT_EXIT_ERROR;
		}
	}
	return res.exit_status;
}
