/* moat oci (and moat-oci): the OCI runtime command line that runc, crun
 * and runsc share, for podman, containerd and Kubernetes. Parses options,
 * calls libmoat (oci.h), prints. */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "moat-config.h"
#include "oci.h"

#include <jansson.h>

static const char *log_path;
static bool log_json;

/* An error goes to stderr and, with --log, to the log the caller reads
 * (podman and containerd show the last line of it). */
static int oci_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int oci_fail(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "moat-oci: %s\n", msg);
	if (log_path) {
		FILE *f = fopen(log_path, "ae");
		if (f) {
			char t[64];
			time_t now = time(NULL);
			struct tm tm;
			strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
			if (log_json) {
				fputs("{\"level\":\"error\",\"msg\":\"", f);
				for (const char *c = msg; *c; c++) {
					if (*c == '"' || *c == '\\')
						fputc('\\', f);
					if ((unsigned char)*c >= 0x20)
						fputc(*c, f);
				}
				fprintf(f, "\",\"time\":\"%s\"}\n", t);
			} else {
				fprintf(f, "time=\"%s\" level=error msg=\"%s\"\n", t, msg);
			}
			fclose(f);
		}
	}
	return 1;
}

static int fail_err(const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	return oci_fail("%s", moat_error_format(err, buf, sizeof(buf)));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: moat-oci [--root DIR] [--log FILE] [--log-format text|json] COMMAND [OPTIONS]\n\n"
		   "An OCI runtime: the runc command line, every container in a moat sandbox.\n\n"
		   "  create [--bundle DIR] [--pid-file F] [--console-socket S] ID\n"
		   "  start ID\n"
		   "  state ID\n"
		   "  kill [--all] ID [SIGNAL]\n"
		   "  delete [--force] ID\n"
		   "  exec [--process FILE] [--tty] [--console-socket S] [--detach] [--pid-file F]\n"
		   "       [--cwd DIR] [--env NAME=VALUE] ID [COMMAND [ARG...]]\n"
		   "  list [--format table|json] [--quiet]\n"
		   "  features\n"
		   "  --version\n\n"
		   "The annotation dev.moat.policy names the policy (a file or a built-in profile),\n"
		   "dev.moat.audit the audit log. docs/oci.md tells what is honoured and refused.\n");
}

/* Options before and after the command word; getopt_long with "+" so
 * that an exec's own command's options stay its own. */
static int cmd_create(const char *root, int argc, char **argv)
{
	static const struct option opts[] = {
		{"bundle", required_argument, NULL, 'b'},   {"pid-file", required_argument, NULL, 'p'},
		{"console-socket", required_argument, NULL, 'c'}, {"no-pivot", no_argument, NULL, 'n'},
		{"no-new-keyring", no_argument, NULL, 'k'}, {"preserve-fds", required_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	moat_oci_create_opts o = {0};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+b:", opts, NULL)) != -1) {
		switch (c) {
		case 'b': o.bundle = optarg; break;
		case 'p': o.pid_file = optarg; break;
		case 'c': o.console_socket = optarg; break;
		case 'n': case 'k': break; /* moat always pivots; keyrings: seccomp refuses them */
		case 'f':
			if (strcmp(optarg, "0") != 0)
				return oci_fail("create --preserve-fds: passing descriptors is not supported");
			break;
		default: return oci_fail("create: bad option (see 'moat-oci --help')");
		}
	}
	if (optind != argc - 1)
		return oci_fail("create: expected one container id");
	pid_t pid;
	moat_error err = {0};
	if (moat_oci_create(root, argv[optind], &o, &pid, &err) < 0)
		return fail_err(&err);
	return 0;
}

static int cmd_kill(const char *root, int argc, char **argv)
{
	static const struct option opts[] = {{"all", no_argument, NULL, 'a'}, {NULL, 0, NULL, 0}};
	bool all = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+a", opts, NULL)) != -1) {
		if (c != 'a')
			return oci_fail("kill: bad option");
		all = true;
	}
	if (optind >= argc || argc - optind > 2)
		return oci_fail("kill: expected ID [SIGNAL]");
	int sig = SIGTERM;
	if (argc - optind == 2 && (sig = moat_oci_signal_from_string(argv[optind + 1])) < 0)
		return oci_fail("kill: %s is not a signal", argv[optind + 1]);
	moat_error err = {0};
	if (moat_oci_kill(root, argv[optind], sig, all, &err) < 0)
		return fail_err(&err);
	return 0;
}

static int cmd_delete(const char *root, int argc, char **argv)
{
	static const struct option opts[] = {{"force", no_argument, NULL, 'f'}, {NULL, 0, NULL, 0}};
	bool force = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+f", opts, NULL)) != -1) {
		if (c != 'f')
			return oci_fail("delete: bad option");
		force = true;
	}
	if (optind != argc - 1)
		return oci_fail("delete: expected one container id");
	moat_error err = {0};
	if (moat_oci_delete(root, argv[optind], force, &err) < 0)
		return fail_err(&err);
	return 0;
}

static int cmd_exec(const char *root, int argc, char **argv)
{
	static const struct option opts[] = {
		{"process", required_argument, NULL, 'p'}, {"tty", no_argument, NULL, 't'},
		{"console-socket", required_argument, NULL, 'c'}, {"detach", no_argument, NULL, 'd'},
		{"pid-file", required_argument, NULL, 'P'}, {"cwd", required_argument, NULL, 'w'},
		{"env", required_argument, NULL, 'e'}, {"user", required_argument, NULL, 'u'},
		{"no-new-privs", no_argument, NULL, 'n'}, {"preserve-fds", required_argument, NULL, 'f'},
		{"cap", required_argument, NULL, 'C'}, {"process-label", required_argument, NULL, 'l'},
		{"apparmor", required_argument, NULL, 'A'}, {NULL, 0, NULL, 0},
	};
	moat_oci_exec_opts o = {0};
	_cleanup_strv_free_ char **env = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:tdc:e:u:", opts, NULL)) != -1) {
		switch (c) {
		case 'p': o.process_file = optarg; break;
		case 't': o.tty = true; break;
		case 'c': o.console_socket = optarg; break;
		case 'd': o.detach = true; break;
		case 'P': o.pid_file = optarg; break;
		case 'w': o.cwd = optarg; break;
		case 'e':
			if (moat__strv_push(&env, optarg) < 0)
				return oci_fail("exec: out of memory");
			break;
		case 'n': break; /* always: moat sets no_new_privs */
		case 'C': return oci_fail("exec --cap %s: refused: a container's processes get no capability", optarg);
		case 'u': return oci_fail("exec --user: not supported (processes run as the sandbox's user)");
		case 'f':
			if (strcmp(optarg, "0") != 0)
				return oci_fail("exec --preserve-fds: passing descriptors is not supported");
			break;
		case 'l': case 'A': break; /* LSM labels: moat's own confinement applies */
		default: return oci_fail("exec: bad option (see 'moat-oci --help')");
		}
	}
	if (optind >= argc)
		return oci_fail("exec: expected a container id");
	const char *id = argv[optind];
	o.argv = argv + optind + 1;
	o.env = env;
	int status = 0;
	moat_error err = {0};
	if (moat_oci_exec(root, id, &o, &status, &err) < 0)
		return fail_err(&err);
	return status;
}

static int cmd_list(const char *root, int argc, char **argv)
{
	bool json = false, quiet = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--format=json") == 0 || (strcmp(argv[i], "--format") == 0 && i + 1 < argc &&
							      strcmp(argv[++i], "json") == 0) ||
		    strcmp(argv[i], "-f") == 0)
			json = true;
		else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0)
			quiet = true;
	}
	_cleanup_free_ char *list = NULL;
	moat_error err = {0};
	if (moat_oci_list(root, &list, &err) < 0)
		return fail_err(&err);
	if (json) {
		printf("%s\n", list);
		return 0;
	}
	/* The table, from the JSON: a front prints. */
	json_t *a = json_loads(list, 0, NULL);
	if (!quiet)
		printf("%-24s %-8s %-10s %s\n", "ID", "PID", "STATUS", "BUNDLE");
	size_t i;
	json_t *s;
	json_array_foreach(a, i, s) {
		const char *id = json_string_value(json_object_get(s, "id"));
		if (quiet)
			printf("%s\n", id ? id : "");
		else
			printf("%-24s %-8lld %-10s %s\n", id ? id : "", (long long)json_integer_value(json_object_get(s, "pid")),
			       json_string_value(json_object_get(s, "status")) ?: "",
			       json_string_value(json_object_get(s, "bundle")) ?: "");
	}
	json_decref(a);
	return 0;
}

static int one_id(const char *what, int argc)
{
	if (argc != 2)
		return oci_fail("%s: expected one container id", what);
	return 0;
}

int moat_cmd_oci(int argc, char **argv)
{
	char root[4096];
	if (moat_oci_default_root(root, sizeof(root)) < 0)
		return oci_fail("the default --root is too long");
	int i = 1;
	/* Global options, as runc takes them; those that change nothing
	 * here are accepted and said so in the help. */
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		const char *v = NULL;
		const char *eq = strchr(a, '=');
		char name[64];
		size_t n = eq ? (size_t)(eq - a) : strlen(a);
		if (n >= sizeof(name))
			return oci_fail("unknown option %.64s", a);
		memcpy(name, a, n);
		name[n] = '\0';
		bool takes = strcmp(name, "--root") == 0 || strcmp(name, "--log") == 0 ||
			     strcmp(name, "--log-format") == 0 || strcmp(name, "--criu") == 0 ||
			     strcmp(name, "--rootless") == 0 || strcmp(name, "--cgroup-manager") == 0;
		if (takes) {
			if (eq)
				v = eq + 1;
			else if (i + 1 < argc)
				v = argv[++i];
			else
				return oci_fail("%s needs a value", name);
		}
		if (strcmp(name, "--version") == 0 || strcmp(name, "-v") == 0) {
			printf("moat-oci version %s\nspec: %s\n", MOAT_VERSION, MOAT_OCI_VERSION);
			return 0;
		} else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(name, "--root") == 0) {
			if (snprintf(root, sizeof(root), "%s", v) >= (int)sizeof(root))
				return oci_fail("--root: too long");
		} else if (strcmp(name, "--log") == 0) {
			log_path = v;
		} else if (strcmp(name, "--log-format") == 0) {
			if (strcmp(v, "json") != 0 && strcmp(v, "text") != 0)
				return oci_fail("--log-format %s: expected text or json", v);
			log_json = strcmp(v, "json") == 0;
		} else if (strcmp(name, "--systemd-cgroup") == 0 ||
			   (strcmp(name, "--cgroup-manager") == 0 && strcmp(v, "systemd") == 0)) {
			/* moat makes and removes each container's cgroup
			 * itself, at linux.cgroupsPath as the cgroupfs driver
			 * reads it; a systemd scope would be a second owner. */
			return oci_fail("--systemd-cgroup: not supported: moat has the cgroupfs cgroup driver only, not "
					"systemd's (use podman --cgroup-manager=cgroupfs, or containerd's SystemdCgroup = "
					"false)");
		} else if (strcmp(name, "--debug") == 0 || strcmp(name, "--rootless") == 0 ||
			   strcmp(name, "--criu") == 0 || strcmp(name, "--cgroup-manager") == 0) {
			/* nothing to do: moat is rootless or not by itself */
		} else {
			return oci_fail("unknown option %s (see 'moat-oci --help')", a);
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 1;
	}
	const char *cmd = argv[i];
	int sub_argc = argc - i;
	char **sub = argv + i;
	moat_error err = {0};
	if (strcmp(cmd, "create") == 0)
		return cmd_create(root, sub_argc, sub);
	if (strcmp(cmd, "start") == 0) {
		if (one_id(cmd, sub_argc))
			return 1;
		return moat_oci_start(root, sub[1], &err) < 0 ? fail_err(&err) : 0;
	}
	if (strcmp(cmd, "state") == 0) {
		if (one_id(cmd, sub_argc))
			return 1;
		_cleanup_free_ char *json = NULL;
		if (moat_oci_state(root, sub[1], &json, &err) < 0)
			return fail_err(&err);
		printf("%s\n", json);
		return 0;
	}
	if (strcmp(cmd, "kill") == 0)
		return cmd_kill(root, sub_argc, sub);
	if (strcmp(cmd, "delete") == 0)
		return cmd_delete(root, sub_argc, sub);
	if (strcmp(cmd, "exec") == 0)
		return cmd_exec(root, sub_argc, sub);
	if (strcmp(cmd, "list") == 0 || strcmp(cmd, "ps") == 0)
		return cmd_list(root, sub_argc, sub);
	if (strcmp(cmd, "features") == 0) {
		_cleanup_free_ char *f = moat_oci_features_json();
		if (!f)
			return oci_fail("features: out of memory");
		printf("%s\n", f);
		return 0;
	}
	if (strcmp(cmd, "__oci-keeper") == 0 && sub_argc == 5)
		return moat__oci_keeper_main(sub[1], sub[2], sub[3], sub[4], 3);
	if (strcmp(cmd, "run") == 0 || strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0 ||
	    strcmp(cmd, "checkpoint") == 0 || strcmp(cmd, "restore") == 0 || strcmp(cmd, "update") == 0 ||
	    strcmp(cmd, "events") == 0)
		return oci_fail("%s: not supported by moat", cmd);
	return oci_fail("unknown command '%s' (see 'moat-oci --help')", cmd);
}
