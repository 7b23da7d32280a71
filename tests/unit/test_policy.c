/* Unit tests: the policy file (parse, errors with line:column, profiles,
 * apply, YAML round trip, nesting, network decisions). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "policy.h"
#include "policy-internal.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/moat-policy-test.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	char p[128];
	snprintf(p, sizeof(p), "%s/input", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/output", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/token.txt", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static moat_policy *parse_ok(const char *yaml)
{
	moat_error err = {0};
	moat_policy *p = NULL;
	if (moat_policy_parse(yaml, strlen(yaml), "t.yaml", dir, "/home/u", &p, &err) < 0)
		fail_msg("unexpected error: %s\n--- policy:\n%s", err.msg, yaml);
	return p;
}

/* Parses yaml, expects failure, and checks the message starts with
 * "t.yaml:LINE:COL: " and contains want. */
static void parse_fails(const char *yaml, unsigned line, unsigned col, const char *want)
{
	moat_error err = {0};
	moat_policy *p = NULL;
	int r = moat_policy_parse(yaml, strlen(yaml), "t.yaml", dir, "/home/u", &p, &err);
	if (r >= 0) {
		moat_policy_free(p);
		fail_msg("expected an error containing '%s' for:\n%s", want, yaml);
	}
	assert_null(p);
	assert_int_equal(err.code, MOAT_EINPUT);
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "t.yaml:%u:%u: ", line, col);
	if (strncmp(err.msg, prefix, strlen(prefix)) != 0 || !strstr(err.msg, want))
		fail_msg("expected '%s...%s', got '%s'", prefix, want, err.msg);
}

static void test_minimal_defaults(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok("version: 1\n");
	moat_limits code;
	moat_limits_default_code(&code);
	assert_memory_equal(&p->limits, &code, sizeof(code));
	assert_int_equal(p->limits_set, 0);
	assert_int_equal(p->net, MOAT_NET_NONE);
	assert_int_equal(p->n_binds, 0);
	assert_null(p->exec_allow);
	assert_false(p->exec_workspace);
	assert_int_equal(p->workspace, MOAT_WORKSPACE_EPHEMERAL);
	assert_false(p->tty);
}

/* exec.approve: rules with a program and argument patterns; the YAML
 * carries them; a nested run keeps its parent's; compiled into the run's
 * config; filesystem.approve_write stays refused. */
static void test_exec_approve(void **state)
{
	(void)state;
	const char *yaml = "version: 1\nexec:\n  approve:\n    - {path: /usr/bin/git, args: [push, \"*\"]}\n"
			   "    - {path: /usr/bin/rm}\n";
	_cleanup_policy_ moat_policy *p = parse_ok(yaml);
	assert_int_equal(p->n_exec_approve, 2);
	assert_string_equal(p->exec_approve[0].path, "/usr/bin/git");
	assert_string_equal(p->exec_approve[0].args[0], "push");
	assert_string_equal(p->exec_approve[0].args[1], "*");
	assert_null(p->exec_approve[0].args[2]);
	assert_null(p->exec_approve[1].args);
	_cleanup_free_ char *y = moat_policy_to_yaml(p);
	assert_non_null(strstr(y, "{path: /usr/bin/git, args: [push, '*']}"));
	_cleanup_policy_ moat_policy *again = parse_ok(y);
	assert_int_equal(again->n_exec_approve, 2);
	assert_null(again->exec_approve[1].args);
	moat_error err = {0};
	_cleanup_policy_ moat_policy *bare = parse_ok("version: 1\n");
	_cleanup_policy_ moat_policy *r = NULL;
	assert_int_equal(moat_policy_intersect(p, bare, &r, &err), 0);
	assert_int_equal(r->n_exec_approve, 2);
	assert_string_equal(r->exec_approve[1].path, "/usr/bin/rm");
	_cleanup_config_ moat_config *c = NULL;
	assert_int_equal(moat_policy_compile(p, NULL, &c, &err), 0);
	assert_int_equal(c->n_exec_approve, 2);
	assert_string_equal(c->exec_approve[0].args[0], "push");
	parse_fails("version: 1\nexec:\n  approve:\n    - {path: git}\n", 4, 14, "not a clean absolute path");
	parse_fails("version: 1\nexec:\n  approve:\n    - {args: [x]}\n", 4, 7, "no 'path'");
	parse_fails("version: 1\nexec:\n  approve:\n    - /usr/bin/git\n", 4, 7, "expected a mapping");
	parse_fails("version: 1\nfilesystem:\n  approve_write: [/out/x]\n", 3, 3, "not built yet");
}

/* exec.workspace: a switch, off by default, on in the agent profile; a
 * nested run has it only where its parent does. */
static void test_exec_workspace(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *on = parse_ok("version: 1\nexec: {workspace: true}\n");
	assert_true(on->exec_workspace);
	_cleanup_policy_ moat_policy *off = parse_ok("version: 1\n");
	moat_error err = {0};
	_cleanup_policy_ moat_policy *agent = NULL;
	assert_int_equal(moat_policy_load_profile("agent", &agent, &err), 0);
	assert_true(agent->exec_workspace);
	_cleanup_policy_ moat_policy *code = NULL;
	assert_int_equal(moat_policy_load_profile("code", &code, &err), 0);
	assert_false(code->exec_workspace);
	_cleanup_policy_ moat_policy *r = NULL;
	assert_int_equal(moat_policy_intersect(off, on, &r, &err), 0);
	assert_false(r->exec_workspace);
	moat_policy_free(r);
	r = NULL;
	assert_int_equal(moat_policy_intersect(on, on, &r, &err), 0);
	assert_true(r->exec_workspace);
	_cleanup_config_ moat_config *c = NULL;
	assert_int_equal(moat_policy_compile(on, NULL, &c, &err), 0);
	assert_true(c->exec_workspace);
}

static void test_full(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok(
		"version: 1\n"
		"name: support-agent\n"
		"filesystem:\n"
		"  read_only: [/usr/share, ./input, \"./input:/data\", {host: /nonexistent-moat, optional: true}]\n"
		"  read_write: [./output]\n"
		"  out: ./output\n"
		"  workspace: persistent\n"
		"  cwd: /data\n"
		"exec:\n"
		"  allow: [/usr/bin/python3, /bin/sh]\n"
		"network:\n"
		"  default: deny\n"
		"  allow:\n"
		"    - host: api.github.com\n"
		"      methods: [GET]\n"
		"      ports: [443]\n"
		"      paths: [/repos/*, /user]\n"
		"    - \"*.pythonhosted.org\"\n"
		"  deny: [evil.example.com]\n"
		"  approve:\n"
		"    - host: api.sendgrid.com\n"
		"      methods: [POST]\n"
		"  allow_private: [10.1.0.0/16, \"fd00::/8\"]\n"
		"  hosts: {internal.example.com: 10.1.2.3}\n"
		"  resolver: 9.9.9.9\n"
		"secrets:\n"
		"  GITHUB_TOKEN: {from: \"env:GITHUB_TOKEN\", hosts: [api.github.com]}\n"
		"  FILE_TOKEN: {from: \"file:token.txt\", hosts: [\"*.example.org\"]}\n"
		"env: {LANG: C.UTF-8, EMPTY: \"\"}\n"
		"limits: {memory: 512M, pids: 128, cpu: 1.5, wall: 300s, cpu_time: 2m, output: 16M, disk: 1G,\n"
		"         tmp: 32M, inodes: 1000, files: 64, fsize: 1.5G}\n"
		"audit: {log: ./audit.jsonl, files: true, record: true}\n"
		"require: [userns, seccomp, landlock]\n"
		"tty: true\n"
		"stdin: token.txt\n"
		"result: \"-\"\n"
		"hostname: box\n");
	assert_string_equal(p->name, "support-agent");
	assert_int_equal(p->n_binds, 5);
	assert_string_equal(p->binds[0].src, "/usr/share");
	assert_string_equal(p->binds[0].dst, "/usr/share");
	char want[128];
	snprintf(want, sizeof(want), "%s/input", dir);
	assert_string_equal(p->binds[1].src, want);
	assert_string_equal(p->binds[1].dst, want);
	assert_string_equal(p->binds[2].src, want);
	assert_string_equal(p->binds[2].dst, "/data");
	assert_int_equal(p->binds[3].flags, MOAT_BIND_OPTIONAL);
	assert_int_equal(p->binds[4].flags, MOAT_BIND_RW);
	snprintf(want, sizeof(want), "%s/output", dir);
	assert_string_equal(p->out_dir, want);
	assert_int_equal(p->workspace, MOAT_WORKSPACE_PERSISTENT);
	assert_string_equal(p->cwd, "/data");
	assert_string_equal(p->exec_allow[1], "/bin/sh");
	assert_null(p->exec_allow[2]);
	assert_int_equal(p->net, MOAT_NET_PROXY);
	assert_int_equal(p->allow.n, 2);
	assert_string_equal(p->allow.v[0].host, "api.github.com");
	assert_int_equal(p->allow.v[0].n_ports, 1);
	assert_int_equal(p->allow.v[0].ports[0], 443);
	assert_string_equal(p->allow.v[0].methods[0], "GET");
	assert_string_equal(p->allow.v[0].paths[0], "/repos/*");
	assert_string_equal(p->allow.v[1].host, "*.pythonhosted.org");
	assert_int_equal(p->deny.n, 1);
	assert_int_equal(p->approve.n, 1);
	assert_string_equal(p->allow_private[1], "fd00::/8");
	assert_int_equal(p->n_hosts, 1);
	assert_string_equal(p->hosts[0].address, "10.1.2.3");
	assert_string_equal(p->resolver, "9.9.9.9");
	assert_int_equal(p->n_secrets, 2);
	assert_string_equal(p->secrets[0].from, "env:GITHUB_TOKEN");
	snprintf(want, sizeof(want), "file:%s/token.txt", dir);
	assert_string_equal(p->secrets[1].from, want);
	assert_string_equal(p->env[0], "LANG=C.UTF-8");
	assert_string_equal(p->env[1], "EMPTY=");
	assert_int_equal(p->limits.memory_bytes, 512ull << 20);
	assert_int_equal(p->limits.pids, 128);
	assert_int_equal(p->limits.cpus_milli, 1500);
	assert_int_equal(p->limits.wall_ms, 300000);
	assert_int_equal(p->limits.cpu_ms, 120000);
	assert_int_equal(p->limits.fsize, 3ull << 29);
	assert_int_equal(p->limits.disk_inodes, 1000);
	assert_int_equal(p->limits_set, 0x7ff);
	snprintf(want, sizeof(want), "%s/audit.jsonl", dir);
	assert_string_equal(p->audit_log, want);
	assert_true(p->audit_files);
	assert_true(p->record);
	assert_int_equal(p->require, MOAT_LAYER_USERNS | MOAT_LAYER_SECCOMP | MOAT_LAYER_LANDLOCK);
	assert_true(p->tty);
	assert_string_equal(p->result_path, "-");
	assert_string_equal(p->hostname, "box");
}

static void test_json(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok(
		"{\"version\": 1, \"limits\": {\"memory\": \"64M\", \"pids\": 8},"
		" \"network\": {\"allow\": [{\"host\": \"example.com\", \"ports\": [443]}]},"
		" \"env\": [\"A=1\", \"B\"], \"tty\": false}");
	assert_int_equal(p->limits.memory_bytes, 64ull << 20);
	assert_int_equal(p->limits.pids, 8);
	assert_int_equal(p->net, MOAT_NET_PROXY);
	assert_string_equal(p->env[0], "A=1");
	assert_string_equal(p->env[1], "B");
}

static void test_values(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok("version: 1\nlimits: {wall: 1.5, memory: unlimited, files: 8, "
						    "tmp: 4096, output: 2K}\naudit: {record: ./rec.cast}\n"
						    "filesystem: {read_only: [{host: \"~/\", path: /home, optional: true}]}\n");
	assert_int_equal(p->limits.wall_ms, 1500);
	assert_int_equal(p->limits.memory_bytes, MOAT_UNLIMITED);
	assert_int_equal(p->limits.files, 8);
	assert_int_equal(p->limits.tmp_bytes, 4096);
	assert_int_equal(p->limits.output_bytes, 2048);
	assert_true(p->record);
	assert_non_null(strstr(p->record_path, "/rec.cast"));
	assert_string_equal(p->binds[0].src, "/home/u");
	moat_policy_free(TAKE_PTR(p));
	/* The same ranges as the flags (config.c), with the same words. */
	parse_fails("version: 1\nlimits: {files: 0}\n", 2, 17, "limits.files: 0 is too small (at least 8");
	parse_fails("version: 1\nlimits: {pids: 4194305}\n", 2, 16, "limits.pids: 4194305 is too large");
	p = parse_ok("version: 1\nnetwork: {mode: proxy}\n");
	assert_int_equal(p->net, MOAT_NET_PROXY);
}

/* One test per class of error, each checking the message and where. */
static void test_errors(void **state)
{
	(void)state;
	parse_fails("version: 1\nfilesystem:\n  read_onyl: [/usr]\n", 3, 3,
		    "unknown key 'filesystem.read_onyl' in filesystem (expected one of: read_only, read_write");
	parse_fails("version: 1\nfilesytem: {}\n", 2, 1, "unknown key 'filesytem' (expected one of: version");
	parse_fails("version: 1\nlimits:\n  memroy: 1G\n", 3, 3, "unknown key 'limits.memroy'");
	parse_fails("version: 1\nnetwork:\n  allow:\n    - {host: a.example.com, method: [GET]}\n", 4, 29,
		    "unknown key 'method' in network.allow[0]");
	parse_fails("version: 1\nfilesystem:\n  read_only: /usr\n", 3, 14, "filesystem.read_only: got a single value "
									  "(expected a list)");
	parse_fails("version: 1\nfilesystem:\n  read_only:\n", 3, 13, "got nothing (expected a list)");
	parse_fails("version: 1\ntty: yes\n", 2, 6, "'yes' is not a boolean (expected true or false");
	parse_fails("version: 1\ntty: \"true\"\n", 2, 6, "is not a boolean");
	parse_fails("version: 1\nlimits:\n  memory: 12X\n", 3, 11, "limits.memory: '12X' is not a size");
	parse_fails("version: 1\nlimits: {wall: soon}\n", 2, 16, "limits.wall: 'soon' is not a duration");
	parse_fails("version: 1\nlimits: {pids: 1.5}\n", 2, 16, "is not a whole number");
	parse_fails("version: 1\nlimits: {pids: 0}\n", 2, 16, "0 would stop anything");
	parse_fails("version: 1\nlimits: {cpu: fast}\n", 2, 15, "is not a number of CPUs");
	parse_fails("version: 1\nfilesystem:\n  read_only: [/nonexistent-moat-path]\n", 3, 15,
		    "path '/nonexistent-moat-path' does not exist");
	parse_fails("version: 1\nfilesystem:\n  out: ./missing\n", 3, 8, "does not exist (expected an existing host "
									 "path, relative paths start at the policy's folder)");
	parse_fails("version: 1\nnetwork:\n  allow: [\"*\"]\n", 3, 11, "'*' would match every host");
	parse_fails("version: 1\nnetwork:\n  allow: [\"*.com\"]\n", 3, 11, "matches too much");
	parse_fails("version: 1\nsecrets:\n  T: {from: \"env:T\", hosts: [\"*.\"]}\n", 3, 30, "would match every host");
	parse_fails("version: 1\nlimits:\n  memory: 1G\n  memory: 2G\n", 4, 3,
		    "duplicate key 'memory' (first at line 3");
	parse_fails("version: 1\nversion: 1\n", 2, 1, "duplicate key 'version'");
	parse_fails("version: 1\nx: &a [/usr]\n", 2, 4, "anchor '&a'");
	parse_fails("version: 1\nfilesystem:\n  read_only: *a\n", 3, 14, "alias '*a'");
	parse_fails("version: 1\nlimits:\n  <<: {memory: 1G}\n", 3, 3, "merge key '<<'");
	parse_fails("version: 1\nname: !!str moat\n", 2, 7, "tag '");
	parse_fails("version: 1\nlimits: !custom {}\n", 2, 9, "tag '!custom'");
	parse_fails("version: 1\n---\nversion: 1\n", 2, 1, "a second YAML document");
	parse_fails("name: x\n", 1, 1, "missing key 'version'");
	parse_fails("version: 2\n", 1, 10, "version 2 is not supported (expected 1)");
	parse_fails("", 1, 1, "empty policy");
	parse_fails("- 1\n", 1, 1, "the policy is a list");
	parse_fails("version: 1\nname: [unclosed\n", 3, 1, "not valid YAML");
	parse_fails("version: 1\nnetwork:\n  mode: none\n  allow: [example.com]\n", 3, 9, "network.mode: none, but");
	parse_fails("version: 1\nnetwork: {default: allow}\n", 2, 20, "expected deny");
	parse_fails("version: 1\nnetwork: {allow: [{host: a.example.com, methods: [get]}]}\n", 2, 51, "HTTP method");
	parse_fails("version: 1\nnetwork: {allow: [{host: a.example.com, ports: [70000]}]}\n", 2, 49, "too large");
	parse_fails("version: 1\nnetwork: {allow: [{host: a.example.com, paths: [\"/a*b\"]}]}\n", 2, 49, "'*' only");
	parse_fails("version: 1\nnetwork: {allow: [{ports: [443]}]}\n", 2, 19, "missing 'host'");
	parse_fails("version: 1\nnetwork: {allow_private: [10.0.0.1/8]}\n", 2, 27, "bits set after the prefix");
	parse_fails("version: 1\nnetwork: {allow_private: [0.0.0.0/0]}\n", 2, 27, "every address");
	parse_fails("version: 1\nnetwork: {hosts: {a.example.com: nowhere}}\n", 2, 34, "not an IP address");
	parse_fails("version: 1\nsecrets: {T: {from: \"vault:x\", hosts: [a.example.com]}}\n", 2, 21,
		    "expected env:VARIABLE or file:PATH");
	parse_fails("version: 1\nsecrets: {T: {from: \"env:T\", hosts: []}}\n", 2, 37, "empty list");
	parse_fails("version: 1\nsecrets: {T: {from: \"env:T\"}}\n", 2, 14, "missing 'hosts'");
	parse_fails("version: 1\nenv: {A: }\n", 2, 10, "write \"\" for an empty value");
	parse_fails("version: 1\nenv: [A=1, A=2]\n", 2, 12, "A is set twice");
	parse_fails("version: 1\nenv: [\"1A=x\"]\n", 2, 7, "not a variable name");
	parse_fails("version: 1\nrequire: [apparmor]\n", 2, 11, "not a layer");
	parse_fails("version: 1\nfilesystem: {workspace: forever}\n", 2, 25, "expected ephemeral or persistent");
	parse_fails("version: 1\nfilesystem: {cwd: work}\n", 2, 19, "not a clean absolute path");
	parse_fails("version: 1\nfilesystem: {read_only: [\"/usr:/proc\"]}\n", 2, 26, "moat builds /proc itself");
	parse_fails("version: 1\nfilesystem: {read_only: [/usr, \"/etc:/usr\"]}\n", 2, 32, "/usr is bound twice");
	parse_fails("version: 1\nfilesystem: {read_only: [\"/a:/b:/c\"]}\n", 2, 26, "more than one ':'");
	parse_fails("version: 1\nfilesystem: {read_only: [\"~root/x\"]}\n", 2, 26, "'~user' is not supported");
	parse_fails("version: 1\nexec: {allow: [python3]}\n", 2, 16, "not a clean absolute path");
	parse_fails("version: 1\nhostname: a.b\n", 2, 11, "expected one label");
	parse_fails("version: 1\nname: \"a\\0b\"\n", 2, 7, "NUL byte");
}

static void test_limits_caps(void **state)
{
	(void)state;
	/* Deep nesting and huge lists are refused, not parsed. */
	char deep[256] = "version: 1\nname: ";
	for (int i = 0; i < 40; i++)
		strcat(deep, "[");
	parse_fails(deep, 2, 22, "nested too deeply");
	moat_error err = {0};
	moat_policy *p = NULL;
	size_t big = MOAT_POLICY_MAX_BYTES + 1;
	char *buf = calloc(1, big + 1);
	memset(buf, ' ', big);
	assert_true(moat_policy_parse(buf, big, "t.yaml", dir, NULL, &p, &err) < 0);
	assert_non_null(strstr(err.msg, "larger than"));
	free(buf);
}

static void test_profiles(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_policy_ moat_policy *code = NULL, *agent = NULL;
	assert_int_equal(moat_policy_load_profile("code", &code, &err), 0);
	moat_limits want;
	moat_limits_default_code(&want);
	assert_memory_equal(&code->limits, &want, sizeof(want));
	assert_int_equal(code->net, MOAT_NET_NONE);
	assert_int_equal(moat_policy_load_profile("agent", &agent, &err), 0);
	assert_int_equal(agent->net, MOAT_NET_PROXY);
	assert_int_equal(agent->workspace, MOAT_WORKSPACE_PERSISTENT);
	assert_true(agent->limits.memory_bytes > code->limits.memory_bytes);
	moat_policy *none = NULL;
	assert_true(moat_policy_load_profile("nope", &none, &err) < 0);
	assert_non_null(strstr(err.msg, "expected one of: agent, code"));
	assert_non_null(moat_policy_profile_text("code"));
	assert_null(moat_policy_profile_text("nope"));
}

/* One model of a run: the base policy, the front's overlay merged once,
 * compiled into the run specification, which carries the hash of the
 * effective policy and nothing only the front uses. */
static void test_compile(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok("version: 1\nfilesystem: {read_only: [/usr/share], out: ./output,"
						    " cwd: /out}\nenv: {A: b}\nlimits: {memory: 64M}\n"
						    "network: {allow: [a.example.com, {host: b.example.com, methods: [GET]}]}\n"
						    "hostname: box\naudit: {log: /tmp/a.jsonl}\nresult: /tmp/r.json\n");
	moat_error err = {0};

	/* The flags of `moat run --mem 128M --allow-host a.example.com
	 * --allow-host c.example.com:8443 --ro /etc:/e --env X=1 -t`. */
	_cleanup_policy_ moat_policy *o = moat_policy_overlay_new();
	assert_non_null(o);
	o->limits.memory_bytes = 128ull << 20;
	o->limits_set = MOAT_LIMIT_MEMORY;
	assert_int_equal(moat_policy_add_allow_host(o, "a.example.com", &err), 0);
	assert_int_equal(moat_policy_add_allow_host(o, "c.example.com:8443", &err), 0);
	assert_int_equal(moat_policy_add_bind(o, "/etc/", "/e", 0, &err), 0);
	assert_int_equal(moat__strv_push(&o->env, "X=1"), 0);
	o->tty = true;
	assert_int_equal(moat_policy_merge_overlay(p, o, &err), 0);
	assert_int_equal(p->limits.memory_bytes, 128ull << 20);
	assert_true(p->limits_set & MOAT_LIMIT_MEMORY);
	assert_int_equal(p->net, MOAT_NET_PROXY); /* an unset mode keeps the policy's */
	/* A host the policy allows as a whole is not added twice. */
	assert_int_equal(p->allow.n, 3);
	assert_string_equal(p->allow.v[2].host, "c.example.com");
	assert_int_equal(p->allow.v[2].ports[0], 8443);
	assert_int_equal(p->n_binds, 2);
	assert_string_equal(p->binds[1].src, "/etc");
	assert_true(p->tty);

	_cleanup_strv_free_ char **argv = NULL;
	assert_int_equal(moat__strv_push(&argv, "/bin/true"), 0);
	_cleanup_config_ moat_config *c = NULL;
	assert_int_equal(moat_policy_compile(p, argv, &c, &err), 0);
	assert_string_equal(c->argv[0], "/bin/true");
	assert_int_equal(c->n_binds, 2);
	assert_string_equal(c->binds[0].dst, "/usr/share");
	assert_string_equal(c->binds[1].dst, "/e");
	assert_string_equal(c->cwd, "/out");
	assert_non_null(c->out_dir);
	assert_string_equal(c->env[0], "A=b");
	assert_string_equal(c->env[1], "X=1");
	assert_int_equal(c->limits.memory_bytes, 128ull << 20);
	assert_int_equal(c->limits.pids, 64);
	assert_int_equal(c->net, MOAT_NET_PROXY);
	assert_true(c->tty);
	assert_string_equal(c->hostname, "box");
	assert_null(c->profile);
	/* The hash is that of the policy without the front's output paths,
	 * so it is the same wherever the run reports. */
	_cleanup_free_ char *run = moat_policy_to_yaml_run(p);
	char want[MOAT_AUDIT_HASH_HEX];
	moat_audit_hash(run, strlen(run), want);
	assert_string_equal(c->policy_sha256, want);
	assert_null(strstr(run, "/tmp/a.jsonl"));
	assert_null(strstr(run, "/tmp/r.json"));
	assert_non_null(c->policy_yaml);
	assert_non_null(strstr(c->policy_yaml, "/e"));
	free(p->audit_log);
	p->audit_log = strdup("/elsewhere.jsonl");
	_cleanup_config_ moat_config *c2 = NULL;
	assert_int_equal(moat_policy_compile(p, NULL, &c2, &err), 0);
	assert_string_equal(c2->policy_sha256, c->policy_sha256);
	assert_null(c2->argv);
	/* A limit changes the hash. */
	p->limits.pids = 65;
	moat_config_free(c2);
	c2 = NULL;
	assert_int_equal(moat_policy_compile(p, NULL, &c2, &err), 0);
	assert_string_not_equal(c2->policy_sha256, c->policy_sha256);
}

/* A bad value from the overlay is refused with the message of the policy
 * field it sets, and the policy is left to the caller to drop. */
static void test_overlay_refused(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_policy_ moat_policy *base = NULL;
	assert_int_equal(moat_policy_load_base(NULL, NULL, &base, &err), 0);
	assert_null(base->profile); /* the default, not named */

	_cleanup_policy_ moat_policy *o = moat_policy_overlay_new();
	o->hostname = strdup("a b");
	assert_true(moat_policy_merge_overlay(base, o, &err) < 0);
	assert_int_equal(err.code, MOAT_EINPUT);
	if (strncmp(err.msg, "hostname: ", 10) != 0)
		fail_msg("message \"%s\" does not start with the field", err.msg);

	_cleanup_policy_ moat_policy *b2 = NULL, *o2 = moat_policy_overlay_new();
	assert_int_equal(moat_policy_load_base("agent", NULL, &b2, &err), 0);
	assert_string_equal(b2->profile, "agent");
	assert_int_equal(moat_policy_add_bind(o2, "/usr", "relative", 0, &err), 0);
	assert_true(moat_policy_merge_overlay(b2, o2, &err) < 0);
	if (strncmp(err.msg, "filesystem.read_only: ", 22) != 0)
		fail_msg("message \"%s\" does not start with the field", err.msg);

	/* Both a profile and a file: refused without a flag's name. */
	_cleanup_policy_ moat_policy *b3 = NULL;
	assert_true(moat_policy_load_base("code", "/nonexistent-moat.yaml", &b3, &err) < 0);
	assert_null(strstr(err.msg, "--"));

	/* Inside a sandbox, an overlay wider than the parent's policy is
	 * refused naming the field. */
	char parent[] = "/tmp/moat-test-parent-XXXXXX";
	int fd = mkstemp(parent);
	assert_true(fd >= 0);
	const char *py = "version: 1\nlimits: {memory: 128M}\n";
	assert_int_equal(write(fd, py, strlen(py)), (ssize_t)strlen(py));
	close(fd);
	setenv(MOAT_PARENT_POLICY_ENV, parent, 1);
	_cleanup_policy_ moat_policy *b4 = NULL, *o4 = moat_policy_overlay_new();
	assert_int_equal(moat_policy_load_base(NULL, NULL, &b4, &err), 0);
	assert_int_equal(b4->limits.memory_bytes, 128ull << 20); /* the default narrowed */
	o4->limits.memory_bytes = 1ull << 30;
	o4->limits_set = MOAT_LIMIT_MEMORY;
	int r = moat_policy_merge_overlay(b4, o4, &err);
	unsetenv(MOAT_PARENT_POLICY_ENV);
	unlink(parent);
	assert_true(r < 0);
	assert_string_equal(err.msg, "limits.memory: 1G exceeds the parent's 128M");
}

static void test_yaml_round_trip(void **state)
{
	(void)state;
	const char *src = "version: 1\nname: \"null\"\nfilesystem: {read_only: [/usr/share, \"/etc:/host-etc\", "
			  "{host: /nonexistent-moat, optional: true}], read_write: [./output], workspace: persistent}\n"
			  "exec: {allow: [/bin/sh]}\n"
			  "network: {allow: [{host: \"*.example.com\", ports: [443, 8443], methods: [GET, HEAD], "
			  "paths: [\"/v1/*\"]}], deny: [x.example.com], approve: [{host: y.example.com}], "
			  "allow_private: [10.0.0.0/8], hosts: {db.example.com: 10.0.0.5}, resolver: 10.0.0.53}\n"
			  "secrets: {TOK: {from: \"env:TOK\", hosts: [api.example.com]}}\n"
			  "env: [\"A=1\", B, \"C=x: y\"]\nlimits: {cpu: 0.25, memory: 1.5G, wall: unlimited}\n"
			  "audit: {log: /tmp/a.jsonl, files: true, record: true}\nrequire: [cgroup, netns]\n"
			  "tty: true\nhostname: box\n";
	_cleanup_policy_ moat_policy *p = parse_ok(src);
	_cleanup_free_ char *y1 = moat_policy_to_yaml(p);
	assert_non_null(y1);
	_cleanup_policy_ moat_policy *q = parse_ok(y1);
	_cleanup_free_ char *y2 = moat_policy_to_yaml(q);
	assert_string_equal(y1, y2);
	assert_string_equal(q->name, "null");
	assert_int_equal(q->limits.cpus_milli, 250);
	assert_int_equal(q->limits.wall_ms, MOAT_UNLIMITED);
	assert_string_equal(q->env[2], "C=x: y");
	assert_int_equal(q->allow.v[0].ports[1], 8443);
	assert_int_equal(q->binds[2].flags, MOAT_BIND_OPTIONAL);

	/* Both profiles survive the trip too. */
	const char *const *names = moat_policy_profile_names();
	for (size_t i = 0; names[i]; i++) {
		moat_error err = {0};
		_cleanup_policy_ moat_policy *pr = NULL;
		assert_int_equal(moat_policy_load_profile(names[i], &pr, &err), 0);
		_cleanup_free_ char *y = moat_policy_to_yaml(pr);
		_cleanup_policy_ moat_policy *back = parse_ok(y);
		assert_memory_equal(&back->limits, &pr->limits, sizeof(pr->limits));
		assert_int_equal(back->net, pr->net);
	}
}

/* audit.max_size: a size in range, the default when unset, and a nested
 * run never above its parent. */
static void test_audit_max_size(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_policy_ moat_policy *p = parse_ok("version: 1\naudit: {max_size: 8M}\n");
	assert_int_equal(p->audit_max_size, 8ull << 20);
	parse_fails("version: 1\naudit: {max_size: 1K}\n", 2, 19, "audit.max_size: '1K' is out of range (expected 64K to 1T)");
	parse_fails("version: 1\naudit: {max_size: 2T}\n", 2, 19, "out of range");
	parse_fails("version: 1\naudit: {max_size: lots}\n", 2, 19, "audit.max_size");
	_cleanup_policy_ moat_policy *bare = parse_ok("version: 1\n");
	/* An overlay's cap replaces the policy's. */
	_cleanup_policy_ moat_policy *o = moat_policy_overlay_new(), *m = moat_policy_copy(bare);
	o->audit_max_size = 1ull << 20;
	assert_int_equal(moat_policy_merge_overlay(m, o, &err), 0);
	assert_int_equal(m->audit_max_size, 1ull << 20);
	moat_policy *r = NULL;
	assert_int_equal(moat_policy_intersect(bare, p, &r, &err), 0);
	assert_int_equal(r->audit_max_size, MOAT_AUDIT_DEFAULT_MAX_SIZE);
	moat_policy_free(TAKE_PTR(r));
	assert_int_equal(moat_policy_intersect(p, bare, &r, &err), 0);
	assert_int_equal(r->audit_max_size, MOAT_AUDIT_DEFAULT_MAX_SIZE);
	moat_policy_free(TAKE_PTR(r));
}

/* network.mode: pod (a Kubernetes pod's network namespace, joined by
 * moat-oci): parsed, refused beside rules nothing would enforce, never a
 * child's widening of a gateway or of no network, kept by the YAML. */
static void test_net_pod(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_policy_ moat_policy *pod = parse_ok("version: 1\nnetwork: {mode: pod}\n");
	assert_int_equal(pod->net, MOAT_NET_POD);
	assert_false(moat_net_uses_gateway(pod->net));
	parse_fails("version: 1\nnetwork:\n  mode: pod\n  allow: [example.com]\n", 3, 9,
		    "network.mode: pod, but the policy has egress rules");
	parse_fails("version: 1\nnetwork:\n  mode: pod\n  budget: {bytes_up: 1M}\n", 3, 9, "network.mode: pod, but");
	parse_fails("version: 1\nnetwork:\n  mode: pod\n  hosts: {a.example.com: 10.0.0.1}\n", 3, 9,
		    "network.mode: pod, but");
	parse_fails("version: 1\nnetwork: {mode: host}\n", 2, 17, "expected none, proxy, transparent or pod");
	_cleanup_policy_ moat_policy *none = parse_ok("version: 1\n");
	_cleanup_policy_ moat_policy *proxy = parse_ok("version: 1\nnetwork: {allow: [example.com]}\n");
	moat_policy *r = NULL;
	assert_int_equal(moat_policy_intersect(none, pod, &r, &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "network.mode: pod, but the parent has no network"));
	assert_int_equal(moat_policy_intersect(proxy, pod, &r, &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "network.mode: pod, but the parent's egress goes through the gateway"));
	assert_int_equal(moat_policy_intersect(pod, pod, &r, &err), 0);
	assert_int_equal(r->net, MOAT_NET_POD);
	moat_policy_free(TAKE_PTR(r));
	_cleanup_free_ char *y = moat_policy_to_yaml(pod);
	assert_non_null(strstr(y, "mode: pod"));
	_cleanup_free_ char *x = moat_policy_explain(pod);
	assert_non_null(strstr(x, "egress does NOT pass moat's gateway"));
}

static void test_intersect(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_policy_ moat_policy *parent = parse_ok(
		"version: 1\nfilesystem: {read_only: [\"./input:/data\"], read_write: [\"./output:/work\"]}\n"
		"exec: {allow: [/usr/bin/python3, /bin/sh]}\n"
		"network: {allow: [\"*.example.com\", {host: api.example.org, methods: [GET, POST]}],"
		" approve: [{host: mail.example.com, methods: [POST]}], allow_private: [10.0.0.0/8]}\n"
		"secrets: {TOK: {from: \"env:TOK\", hosts: [\"*.example.com\"]}}\n"
		"limits: {memory: 512M, wall: 60s}\nrequire: [seccomp]\naudit: {files: true}\n");
	moat_policy *r = NULL;

	/* A narrower child is accepted and keeps the parent's holds. */
	_cleanup_policy_ moat_policy *ok = parse_ok(
		"version: 1\nfilesystem: {read_only: [/usr/share, /tmp]}\nexec: {allow: [/bin/sh]}\n"
		"network: {allow: [a.example.com, {host: b.example.com, ports: [443]}, {host: api.example.org, methods: [GET]}], "
		"approve: [{host: c.example.com, ports: [80]}], "
		"allow_private: [10.1.0.0/16]}\nsecrets: {TOK: {from: \"env:TOK\", hosts: [a.example.com]}}\n"
		"limits: {memory: 256M}\n");
	assert_int_equal(moat_policy_intersect(parent, ok, &r, &err), 0);
	assert_int_equal(r->limits.memory_bytes, 256ull << 20);
	/* Unset in the child: the smaller of its default (10s) and the parent's. */
	assert_int_equal(r->limits.wall_ms, 10000);
	assert_int_equal(r->approve.n, 2);
	assert_int_equal(r->require, MOAT_LAYER_SECCOMP);
	assert_true(r->audit_files);
	assert_int_equal(moat_policy_net_decide(r, "mail.example.com", 443, "POST", "/", NULL, 0),
			 MOAT_POLICY_NET_APPROVE);
	moat_policy_free(TAKE_PTR(r));

	/* A child without exec.allow inherits the parent's. */
	_cleanup_policy_ moat_policy *bare = parse_ok("version: 1\n");
	assert_int_equal(moat_policy_intersect(parent, bare, &r, &err), 0);
	assert_string_equal(r->exec_allow[0], "/usr/bin/python3");
	assert_int_equal(r->net, MOAT_NET_NONE);
	moat_policy_free(TAKE_PTR(r));

	static const struct {
		const char *child, *msg;
	} wider[] = {
		{"limits: {memory: 1G}", "limits.memory: 1G exceeds the parent's 512M"},
		{"limits: {wall: unlimited}", "limits.wall: unlimited exceeds the parent's 1m"},
		{"filesystem: {read_only: [/var]}", "filesystem.read_only: /var is not visible in the parent"},
		{"filesystem: {read_write: [/usr/share]}", "filesystem.read_write: /usr/share is read-only"},
		{"exec: {allow: [/usr/bin/curl]}", "exec.allow: /usr/bin/curl is not allowed by the parent"},
		{"network: {allow: [other.org]}", "network.allow[0]: other.org is not allowed"},
		{"network: {allow: [\"*.com.example.com\", \"*.org\"]}", "matches too much"},
		{"network: {allow: [{host: api.example.org, methods: [DELETE]}]}", "network.allow[0]: api.example.org"},
		{"network: {allow: [{host: api.example.org}]}", "network.allow[0]: api.example.org"},
		{"network: {allow: [mail.example.org]}", "not allowed"},
		/* The parent's port-less allow opens 80 and 443, nothing more. */
		{"network: {allow: [{host: a.example.com, ports: [8080]}]}", "network.allow[0]: a.example.com"},
		/* A port-less approval holds every port, more than the parent's
		 * port-less allow (80, 443) grants. */
		{"network: {approve: [a.example.com]}", "network.approve[0]: a.example.com"},
		{"network: {allow_private: [192.168.0.0/16]}", "network.allow_private: 192.168.0.0/16"},
		{"network: {hosts: {a.example.com: 10.0.0.1}}", "network.hosts.a.example.com"},
		{"secrets: {TOK: {from: \"env:OTHER\", hosts: [a.example.com]}}", "secrets.TOK"},
		{"secrets: {TOK: {from: \"env:TOK\", hosts: [a.example.org]}}", "secrets.TOK.hosts: a.example.org"},
	};
	for (size_t i = 0; i < ELEMENTSOF(wider); i++) {
		char src[512];
		snprintf(src, sizeof(src), "version: 1\n%s\n", wider[i].child);
		moat_policy *c = NULL;
		moat_error perr = {0};
		if (moat_policy_parse(src, strlen(src), "t.yaml", dir, NULL, &c, &perr) < 0) {
			if (!strstr(perr.msg, wider[i].msg))
				fail_msg("%s: %s", wider[i].child, perr.msg);
			continue;
		}
		r = NULL;
		int rc = moat_policy_intersect(parent, c, &r, &err);
		moat_policy_free(c);
		if (rc >= 0) {
			moat_policy_free(r);
			fail_msg("accepted a wider child: %s", wider[i].child);
		}
		assert_null(r);
		if (!strstr(err.msg, wider[i].msg))
			fail_msg("%s: got '%s', expected '%s'", wider[i].child, err.msg, wider[i].msg);
	}

	/* No network in the parent: none in the child. */
	_cleanup_policy_ moat_policy *offline = parse_ok("version: 1\n");
	_cleanup_policy_ moat_policy *wants = parse_ok("version: 1\nnetwork: {mode: proxy}\n");
	assert_true(moat_policy_intersect(offline, wants, &r, &err) < 0);
	assert_non_null(strstr(err.msg, "the parent has no network"));
}

static void test_net_decide(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok(
		"version: 1\nnetwork:\n"
		"  allow:\n"
		"    - host: api.github.com\n      methods: [GET]\n      paths: [\"/repos/*\", /user]\n"
		"    - host: \"*.pythonhosted.org\"\n      ports: [443]\n"
		"    - docs.example.com\n"
		"  deny:\n    - host: docs.example.com\n      paths: [\"/admin/*\"]\n"
		"  approve:\n    - host: api.github.com\n      methods: [POST]\n");
	char rule[64];
	assert_int_equal(moat_policy_net_decide(p, "api.github.com", 443, "GET", "/repos/x?q=1", rule, sizeof(rule)),
			 MOAT_POLICY_NET_ALLOW);
	assert_string_equal(rule, "network.allow[0]");
	assert_int_equal(moat_policy_net_decide(p, "API.GitHub.com.", 443, "GET", "/user", NULL, 0),
			 MOAT_POLICY_NET_ALLOW);
	assert_int_equal(moat_policy_net_decide(p, "api.github.com", 443, "GET", "/users", NULL, 0),
			 MOAT_POLICY_NET_DENY);
	assert_int_equal(moat_policy_net_decide(p, "api.github.com", 443, "GET", "/repos/../admin", NULL, 0),
			 MOAT_POLICY_NET_DENY);
	assert_int_equal(moat_policy_net_decide(p, "api.github.com", 443, "DELETE", "/repos/x", NULL, 0),
			 MOAT_POLICY_NET_DENY);
	/* Inside a TLS tunnel method and path are unknown: the allow rule
	 * limited to GET cannot match, the approve rule for POST can (unknown
	 * leans towards refusal: a person decides). */
	assert_int_equal(moat_policy_net_decide(p, "api.github.com", 443, NULL, NULL, rule, sizeof(rule)),
			 MOAT_POLICY_NET_APPROVE);
	assert_string_equal(rule, "network.approve[0]");
	assert_int_equal(moat_policy_net_decide(p, "api.github.com", 443, "POST", "/repos/x", rule, sizeof(rule)),
			 MOAT_POLICY_NET_APPROVE);
	assert_string_equal(rule, "network.approve[0]");
	assert_int_equal(moat_policy_net_decide(p, "files.pythonhosted.org", 443, NULL, NULL, NULL, 0),
			 MOAT_POLICY_NET_ALLOW);
	assert_int_equal(moat_policy_net_decide(p, "files.pythonhosted.org", 80, NULL, NULL, NULL, 0),
			 MOAT_POLICY_NET_DENY);
	assert_int_equal(moat_policy_net_decide(p, "pythonhosted.org", 443, NULL, NULL, NULL, 0), MOAT_POLICY_NET_DENY);
	assert_int_equal(moat_policy_net_decide(p, "docs.example.com", 443, "GET", "/guide", NULL, 0),
			 MOAT_POLICY_NET_ALLOW);
	assert_int_equal(moat_policy_net_decide(p, "docs.example.com", 443, "GET", "/admin/x", rule, sizeof(rule)),
			 MOAT_POLICY_NET_DENY);
	assert_string_equal(rule, "network.deny[0]");
	/* network.mode: pod: the pod's network carries everything, no rule is
	 * asked; the answer says so rather than a deny that does not hold. */
	_cleanup_policy_ moat_policy *pod = parse_ok("version: 1\nnetwork: {mode: pod}\n");
	assert_int_equal(moat_policy_net_decide(pod, "api.github.com", 443, "GET", "/", rule, sizeof(rule)),
			 MOAT_POLICY_NET_UNFILTERED);
	assert_string_equal(rule, "network.mode");
	assert_int_equal(moat_policy_net_decide(pod, NULL, 0, NULL, NULL, NULL, 0), MOAT_POLICY_NET_UNFILTERED);
	assert_string_equal(moat_policy_net_verdict_to_string(MOAT_POLICY_NET_UNFILTERED), "unfiltered");
	_cleanup_policy_ moat_policy *none = parse_ok("version: 1\n");
	assert_int_equal(moat_policy_net_decide(none, "api.github.com", 443, NULL, NULL, NULL, 0), MOAT_POLICY_NET_DENY);
	/* A deny rule beats a broader allow whatever their order in the file. */
	_cleanup_policy_ moat_policy *shadow = parse_ok("version: 1\nnetwork:\n"
							"  allow: [\"*.example.com\"]\n"
							"  deny: [secret.example.com]\n");
	assert_int_equal(moat_policy_net_decide(shadow, "www.example.com", 443, NULL, NULL, NULL, 0),
			 MOAT_POLICY_NET_ALLOW);
	assert_int_equal(moat_policy_net_decide(shadow, "secret.example.com", 443, NULL, NULL, rule, sizeof(rule)),
			 MOAT_POLICY_NET_DENY);
	assert_string_equal(rule, "network.deny[0]");
	/* A deny rule holds when the path is unknown or could be read two ways. */
	assert_int_equal(moat_policy_net_decide(p, "docs.example.com", 443, NULL, NULL, NULL, 0), MOAT_POLICY_NET_DENY);
	assert_int_equal(moat_policy_net_decide(p, "docs.example.com", 443, "GET", "/x/%2e%2e/admin/", NULL, 0),
			 MOAT_POLICY_NET_DENY);
	assert_int_equal(moat_policy_net_decide(p, "docs.example.com", 443, "GET", "//admin/x", NULL, 0),
			 MOAT_POLICY_NET_DENY);
	assert_int_equal(moat_policy_net_decide(p, "evil.com", 443, "GET", "/", rule, sizeof(rule)),
			 MOAT_POLICY_NET_DENY);
	assert_string_equal(rule, "network.default");
	assert_int_equal(moat_policy_net_decide(p, "", 443, "GET", "/", NULL, 0), MOAT_POLICY_NET_DENY);
	assert_int_equal(moat_policy_net_decide(p, NULL, 443, "GET", "/", NULL, 0), MOAT_POLICY_NET_DENY);
	assert_string_equal(moat_policy_net_verdict_to_string(MOAT_POLICY_NET_APPROVE), "approve");
}

static void test_required(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok("version: 1\nrequire: [userns, landlock, cgroup]\n");
	moat_isolation iso = {.userns = true, .landlock_abi = 7};
	snprintf(iso.cgroup, sizeof(iso.cgroup), "v1");
	moat_error err = {0};
	assert_int_equal(moat_policy_check_required(p, &iso, &err), 0);
	iso.landlock_abi = 0;
	assert_true(moat_policy_check_required(p, &iso, &err) < 0);
	assert_non_null(strstr(err.msg, "requires landlock"));
	iso.landlock_abi = 1;
	snprintf(iso.cgroup, sizeof(iso.cgroup), "none");
	assert_true(moat_policy_check_required(p, &iso, &err) < 0);
	assert_non_null(strstr(err.msg, "requires cgroup"));
}

/* network.budget: parsed, carried through YAML, only shrunk by a child,
 * shown by explain. */
static void test_net_budget(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_policy_ moat_policy *p = parse_ok(
		"version: 1\nnetwork: {allow: [a.example.com], budget: {bytes_up: 10M, bytes_down: 1G,"
		" requests_per_minute: 600, connections: 32}}\n");
	assert_int_equal(p->budget.bytes_up, 10ull << 20);
	assert_int_equal(p->budget.bytes_down, 1ull << 30);
	assert_int_equal(p->budget.requests_per_minute, 600);
	assert_int_equal(p->budget.connections, 32);
	_cleanup_free_ char *y = moat_policy_to_yaml(p);
	_cleanup_policy_ moat_policy *back = parse_ok(y);
	assert_memory_equal(&back->budget, &p->budget, sizeof(p->budget));
	_cleanup_free_ char *e = moat_policy_explain(p);
	assert_non_null(strstr(e, "budget:    10485760 bytes up 1073741824 bytes down 600 requests a minute 32 connections at once\n"));

	moat_policy *r = NULL;
	_cleanup_policy_ moat_policy *narrow = parse_ok(
		"version: 1\nnetwork: {allow: [a.example.com], budget: {bytes_up: 1M}}\n");
	assert_int_equal(moat_policy_intersect(p, narrow, &r, &err), 0);
	assert_int_equal(r->budget.bytes_up, 1ull << 20);
	assert_int_equal(r->budget.connections, 32); /* inherited */
	moat_policy_free(TAKE_PTR(r));
	_cleanup_policy_ moat_policy *wide = parse_ok(
		"version: 1\nnetwork: {allow: [a.example.com], budget: {connections: 64}}\n");
	assert_true(moat_policy_intersect(p, wide, &r, &err) < 0);
	assert_non_null(strstr(err.msg, "network.budget.connections: 64 exceeds the parent's 32"));

	static const struct {
		const char *src, *msg;
	} bad[] = {
		{"network: {budget: {bytes_up: 0}}", "0 would forbid all egress"},
		{"network: {budget: {connections: 20000}}", "too large"},
		{"network: {budget: {requests: 5}}", "unknown key 'requests'"},
		{"network: {budget: [1]}", "a mapping"},
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char src[256];
		snprintf(src, sizeof(src), "version: 1\n%s\n", bad[i].src);
		moat_policy *c = NULL;
		moat_error perr = {0};
		assert_true(moat_policy_parse(src, strlen(src), "t.yaml", dir, NULL, &c, &perr) < 0);
		if (!strstr(perr.msg, bad[i].msg))
			fail_msg("%s: %s", bad[i].src, perr.msg);
	}
}

static void test_explain(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok(
		"version: 1\nname: demo\nfilesystem: {read_only: [./input], read_write: [\"./output:/work\"]}\n"
		"network: {allow: [{host: api.example.com, methods: [GET]}, {host: alt.example.com, ports: [8443]},"
		" {host: two.example.com, ports: [81, 8080]}],"
		" deny: [secret.example.com], approve: [mail.example.com]}\n"
		"secrets: {TOK: {from: \"env:SECRET_SOURCE\", hosts: [api.example.com]}}\n");
	_cleanup_free_ char *e = moat_policy_explain(p);
	assert_non_null(e);
	assert_non_null(strstr(e, "policy demo\n"));
	assert_non_null(strstr(e, "read-only:  ./input\n"));
	assert_non_null(strstr(e, "read-write: ./output at /work\n"));
	/* Every rule says which ports it covers, also when the policy names
	 * none: 80 and 443 for an allow, every port for a deny or approval. */
	assert_non_null(strstr(e, "allowed:  api.example.com ports 80,443 (GET)\n"));
	assert_non_null(strstr(e, "allowed:  alt.example.com port 8443\n"));
	assert_non_null(strstr(e, "allowed:  two.example.com ports 81,8080\n"));
	assert_non_null(strstr(e, "denied:   secret.example.com every port\n"));
	assert_non_null(strstr(e, "held:     mail.example.com every port\n"));
	assert_non_null(strstr(e, "TOK from env:SECRET_SOURCE, sent only to api.example.com; the sandbox sees a placeholder in TOK\n"));
	assert_non_null(strstr(e, "memory 256M"));
}

/* The list form of secrets: every field, the round trip through YAML, the
 * inside copy, and one error per class with its line and column. */
static void test_secrets_list(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok("version: 1\n"
						   "secrets:\n"
						   "  - name: github\n"
						   "    from: env:GITHUB_TOKEN\n"
						   "    env: GITHUB_TOKEN\n"
						   "    inject:\n"
						   "      host: api.github.com\n"
						   "      header: Authorization\n"
						   "      format: \"Bearer {value}\"\n"
						   "      methods: [GET, POST]\n"
						   "      paths: [\"/repos/myorg/*\"]\n"
						   "    expires: 2h\n"
						   "    max_uses: 10\n"
						   "  - name: model-key\n"
						   "    from: file:token.txt\n"
						   "    inject: {host: api.example.com, header: x-api-key}\n"
						   "  - name: aws-decoy\n"
						   "    env: AWS_SECRET_ACCESS_KEY\n"
						   "    honeytoken: true\n");
	assert_int_equal(p->n_secrets, 3);
	const moat_secret *s = &p->secrets[0];
	assert_string_equal(s->name, "github");
	assert_string_equal(s->from, "env:GITHUB_TOKEN");
	assert_string_equal(s->env, "GITHUB_TOKEN");
	assert_string_equal(s->hosts[0], "api.github.com");
	assert_null(s->hosts[1]);
	assert_string_equal(s->header, "Authorization");
	assert_string_equal(s->format, "Bearer {value}");
	assert_string_equal(s->methods[1], "POST");
	assert_string_equal(s->paths[0], "/repos/myorg/*");
	assert_int_equal(s->expires_ms, 2 * 3600 * 1000);
	assert_int_equal(s->max_uses, 10);
	assert_null(p->secrets[1].env);
	assert_null(p->secrets[1].format);
	assert_true(p->secrets[2].honeytoken);
	assert_null(p->secrets[2].from);

	/* Written out and read back, the policy is the same. */
	_cleanup_free_ char *y1 = moat_policy_to_yaml(p);
	assert_non_null(y1);
	moat_error err = {0};
	_cleanup_policy_ moat_policy *q = NULL;
	assert_int_equal(moat_policy_parse(y1, strlen(y1), "y", "/", NULL, &q, &err), 0);
	_cleanup_free_ char *y2 = moat_policy_to_yaml(q);
	assert_string_equal(y1, y2);
	_cleanup_policy_ moat_policy *c = moat_policy_copy(p);
	_cleanup_free_ char *y3 = moat_policy_to_yaml(c);
	assert_string_equal(y1, y3);
	/* Inside, where a file secret lives is not shown. */
	_cleanup_free_ char *in = moat_policy_to_yaml_inside(p);
	assert_null(strstr(in, "token.txt"));
	assert_non_null(strstr(in, "file:/hidden"));

	_cleanup_free_ char *e = moat_policy_explain(p);
	assert_non_null(strstr(e, "github from env:GITHUB_TOKEN, sent only to api.github.com, for GET, POST, on "
				  "/repos/myorg/*, as the header Authorization, for 2h, at most 10 times; the sandbox sees "
				  "a placeholder in GITHUB_TOKEN\n"));
	assert_non_null(strstr(e, "aws-decoy: a decoy in AWS_SECRET_ACCESS_KEY; any use is an alert\n"));
	assert_non_null(strstr(e, "sent only to api.example.com, as the header x-api-key; the sandbox sees nothing"));
}

static void test_secrets_errors(void **state)
{
	(void)state;
	parse_fails("version: 1\nsecrets:\n  - name: a\n    from: hunter2\n    env: A\n    inject: {host: x.example}\n", 4,
		    11, "the value itself is never written in a policy");
	parse_fails("version: 1\nsecrets:\n  - {from: env:A, env: A, inject: {host: x.example}}\n", 3, 5, "missing 'name'");
	parse_fails("version: 1\nsecrets:\n  - {name: \"a b\", from: env:A, env: A, inject: {host: x.example}}\n", 3, 12,
		    "expected 1 to 64 letters");
	parse_fails("version: 1\nsecrets:\n  - {name: a, env: A, inject: {host: x.example}}\n", 3, 5, "missing 'from'");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A}\n", 3, 5, "missing 'inject'");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, inject: {host: x.example}}\n", 3, 5,
		    "neither 'env' nor 'inject.header'");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {header: X-Key}}\n", 3, 44,
		    "missing 'host'");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: \"*.com\"}}\n", 3, 51,
		    "matches too much");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example, header: Host}}\n",
		    3, 70, "set by the gateway itself");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example, header: X, format: "
		    "Bearer}}\n", 3, 81, "{value} exactly once");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example, format: "
		    "\"B {value}\"}}\n", 3, 70, "without 'header'");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example, methods: [get]}}\n",
		    3, 72, "not an HTTP method");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example, paths: [\"/a*\"]}}\n",
		    3, 70, "'*' only at the end");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example, port: 1}}\n", 3, 62,
		    "unknown key 'port'");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example}, expires: soon}\n",
		    3, 72, "expires");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example}, max_uses: 0}\n",
		    3, 73, "would forbid every use");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, hosts: [x.example], inject: {host: x.example}}\n",
		    3, 43, "both 'hosts' and 'inject.host'");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example}}\n"
		    "  - {name: a, from: env:B, env: B, inject: {host: x.example}}\n", 4, 5, "listed twice");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example}}\n"
		    "  - {name: b, from: env:B, env: A, inject: {host: x.example}}\n", 4, 5, "holds the secret a already");
	parse_fails("version: 1\nsecrets:\n  - {name: d, env: D, honeytoken: true, from: env:D}\n", 3, 47,
		    "a honeytoken has no value");
	parse_fails("version: 1\nsecrets:\n  - {name: d, honeytoken: true}\n", 3, 27, "without 'env'");
	parse_fails("version: 1\nsecrets:\n  - {name: a, from: env:A, env: A, inject: {host: x.example}, extra: 1}\n", 3, 63,
		    "unknown key 'extra'");
	parse_fails("version: 1\nsecrets: token\n", 2, 10, "expected a list of {name, from, env, inject}");
}

/* --secret NAME=env:VAR@HOST: an overlay secret merged into the policy,
 * checked with the file's checks; a malformed or clashing one is refused. */
static void test_secret_flag(void **state)
{
	(void)state;
	_cleanup_policy_ moat_policy *p = parse_ok("version: 1\n");
	_cleanup_policy_ moat_policy *o = moat_policy_overlay_new();
	moat_error err = {0};
	assert_int_equal(moat_policy_add_secret_spec(o, "MODEL_KEY=env:HOST_KEY@api.example.com", &err), 0);
	assert_int_equal(moat_policy_merge_overlay(p, o, &err), 0);
	assert_int_equal(p->n_secrets, 1);
	assert_string_equal(p->secrets[0].name, "MODEL_KEY");
	assert_string_equal(p->secrets[0].env, "MODEL_KEY");
	assert_string_equal(p->secrets[0].from, "env:HOST_KEY");
	assert_string_equal(p->secrets[0].hosts[0], "api.example.com");
	/* The same name again clashes, in the overlay and in the merge. */
	assert_true(moat_policy_add_secret_spec(o, "MODEL_KEY=env:OTHER@api.example.com", &err) < 0);
	assert_non_null(strstr(err.msg, "has a secret named MODEL_KEY already"));
	assert_true(moat_policy_merge_overlay(p, o, &err) < 0);
	assert_non_null(strstr(err.msg, "has a secret named MODEL_KEY already"));
	/* The library names the field; moat run puts its flag in front. */
	assert_int_equal(strncmp(err.msg, "secrets: ", 9), 0);

	static const struct {
		const char *spec, *want;
	} bad[] = {
		{"NOEQUALS", "expected NAME=env:VAR@HOST"},
		{"K=env:V", "expected NAME=env:VAR@HOST"},
		{"K=env:V@", "expected NAME=env:VAR@HOST"},
		{"K=@host.example", "expected NAME=env:VAR@HOST"},
		{"K=hunter2@host.example", "never written in a policy"},
		{"K=env:V@*.com", "matches too much"},
		{"K-1=env:V@host.example", "not a variable name"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_policy_ moat_policy *q = parse_ok("version: 1\n");
		_cleanup_policy_ moat_policy *d = moat_policy_overlay_new();
		moat_error e2 = {0};
		int r = moat_policy_add_secret_spec(d, bad[i].spec, &e2);
		if (r >= 0)
			r = moat_policy_merge_overlay(q, d, &e2);
		if (r >= 0 || !strstr(e2.msg, bad[i].want))
			fail_msg("--secret %s: expected '%s', got '%s'", bad[i].spec, bad[i].want, e2.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_defaults),
		cmocka_unit_test(test_secrets_list),
		cmocka_unit_test(test_secrets_errors),
		cmocka_unit_test(test_secret_flag),
		cmocka_unit_test(test_exec_workspace),
		cmocka_unit_test(test_exec_approve),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits_caps),
		cmocka_unit_test(test_profiles),
		cmocka_unit_test(test_compile),
		cmocka_unit_test(test_overlay_refused),
		cmocka_unit_test(test_yaml_round_trip),
		cmocka_unit_test(test_audit_max_size),
		cmocka_unit_test(test_intersect),
		cmocka_unit_test(test_net_pod),
		cmocka_unit_test(test_net_budget),
		cmocka_unit_test(test_net_decide),
		cmocka_unit_test(test_required),
		cmocka_unit_test(test_explain),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
