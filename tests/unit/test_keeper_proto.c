/* The front <-> keeper protocol's messages (keeper-proto.c): every message
 * survives a round trip, and bad input gets one error naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "keeper-proto.h"

#include <jansson.h>

static void roundtrip(const moat_keeper_msg *in, moat_keeper_msg *out)
{
	moat_error err = {0};
	_cleanup_free_ char *s = NULL;
	assert_int_equal(moat__keeper_encode(in, &s, &err), 0);
	moat_keeper_msg_init(out, _MOAT_KEEPER_MSG_INVALID);
	int r = moat__keeper_decode(s, strlen(s), out, &err);
	if (r < 0)
		fail_msg("%s: %s", s, err.msg);
	assert_int_equal(out->type, in->type);
	assert_true(out->tag == in->tag);
}

/* What decoding text gives: 0, or the negative errno with the message
 * compared to want. */
static void refused(const char *text, int code, const char *want)
{
	moat_keeper_msg m;
	moat_keeper_msg_init(&m, _MOAT_KEEPER_MSG_INVALID);
	moat_error err = {0};
	int r = moat__keeper_decode(text, strlen(text), &m, &err);
	moat_keeper_msg_done(&m);
	if (r != -code || strcmp(err.msg, want) != 0)
		fail_msg("%s: got %d '%s', want %d '%s'", text, r, err.msg, -code, want);
}

static void test_hello(void **state)
{
	(void)state;
	moat_keeper_msg a, b;
	moat_keeper_msg_init(&a, MOAT_KEEPER_HELLO);
	a.versions[0] = 1;
	a.versions[1] = 7;
	a.n_versions = 2;
	roundtrip(&a, &b);
	assert_int_equal(b.n_versions, 2);
	assert_int_equal(b.versions[1], 7);
	assert_int_equal(moat__keeper_pick_version(b.versions, b.n_versions), 1);
	unsigned none[] = {0, 9};
	assert_int_equal(moat__keeper_pick_version(none, 2), 0);
	moat_keeper_msg_done(&b);

	moat_keeper_msg_init(&a, MOAT_KEEPER_HELLO);
	a.version = 1;
	strcpy(a.sandbox, "0123456789abcdef01234567");
	a.pid = 4242;
	roundtrip(&a, &b);
	assert_int_equal(b.version, 1);
	assert_string_equal(b.sandbox, a.sandbox);
	assert_int_equal(b.pid, 4242);
	moat_keeper_msg_done(&b);
}

static void test_spawn(void **state)
{
	(void)state;
	char *argv[] = {"/bin/sh", "-c", "echo \"hi\"\n", NULL};
	char *env[] = {"A=1", "B=two=2", NULL};
	moat_keeper_msg a, b;
	moat_keeper_msg_init(&a, MOAT_KEEPER_SPAWN);
	a.tag = 99;
	a.argv = argv;
	a.env = env;
	a.cwd = "/tmp";
	a.stdio[1] = a.stdio[2] = true;
	roundtrip(&a, &b);
	assert_string_equal(b.argv[2], argv[2]);
	assert_null(b.argv[3]);
	assert_string_equal(b.env[1], "B=two=2");
	assert_string_equal(b.cwd, "/tmp");
	assert_false(b.stdio[0]);
	assert_true(b.stdio[1] && b.stdio[2]);
	assert_false(b.tty);
	assert_false(b.attached);
	moat_keeper_msg_done(&b);
	assert_null(b.argv);
	assert_false(b.and_wait);
	a.attached = true;
	a.and_wait = true;
	roundtrip(&a, &b);
	assert_true(b.attached);
	/* A spawn that is its own wait (moatd's pooled runs). */
	assert_true(b.and_wait);
	a.and_wait = false;
	assert_int_equal(b.rows, 0);
	assert_int_equal(b.cols, 0);
	moat_keeper_msg_done(&b);
	/* With a terminal, the front's window size comes along. */
	a.tty = true;
	a.stdio[1] = a.stdio[2] = false;
	a.rows = 50;
	a.cols = 200;
	roundtrip(&a, &b);
	assert_true(b.tty);
	assert_int_equal(b.rows, 50);
	assert_int_equal(b.cols, 200);
	moat_keeper_msg_done(&b);
	a.tty = false;
	a.stdio[1] = a.stdio[2] = true;

	/* The encoder refuses what the decoder would. */
	moat_error err = {0};
	char *s = NULL;
	char *empty[] = {NULL};
	a.argv = empty;
	assert_int_equal(moat__keeper_encode(&a, &s, &err), -EINVAL);
	assert_string_equal(err.msg, "spawn.argv: must hold at least one string");
	a.argv = argv;
	a.tty = true;
	assert_int_equal(moat__keeper_encode(&a, &s, &err), -EINVAL);
	assert_string_equal(err.msg, "spawn.stdio: must be empty with spawn.tty");
	assert_null(s);
	a.tty = false;
	assert_int_equal(moat__keeper_encode(&a, &s, &err), -EINVAL);
	assert_string_equal(err.msg, "spawn.rows: a window size without spawn.tty");
	assert_null(s);
	a.rows = a.cols = 0;
}

static void test_exit_and_others(void **state)
{
	(void)state;
	moat_keeper_msg a, b;
	moat_keeper_msg_init(&a, MOAT_KEEPER_EXIT);
	a.tag = 3;
	a.exit.id = 5;
	strcpy(a.exit.status, "signaled");
	a.exit.signal = 9;
	a.exit.exit_status = 137;
	a.exit.wall_ms = 12;
	a.exit.cpu_user_ms = 3;
	a.exit.max_rss_bytes = 1 << 20;
	roundtrip(&a, &b);
	assert_int_equal(b.exit.id, 5);
	assert_string_equal(b.exit.status, "signaled");
	assert_int_equal(b.exit.exit_code, -1);
	assert_int_equal(b.exit.signal, 9);
	assert_int_equal(b.exit.exit_status, 137);
	assert_true(b.exit.max_rss_bytes == 1 << 20);
	/* Without limit and sandbox (a keeper of before): none. */
	assert_string_equal(b.exit.limit, "");
	assert_null(b.sandbox_report);
	moat_keeper_msg_done(&b);

	/* The limit met, and the sandbox's report, ride along. */
	strcpy(a.exit.limit, "memory");
	a.sandbox_report = json_pack("{s:{s:b}, s:I}", "isolation", "userns", 1, "memory_peak_bytes", (json_int_t)4096);
	roundtrip(&a, &b);
	assert_string_equal(b.exit.limit, "memory");
	assert_true(json_equal(b.sandbox_report, a.sandbox_report));
	moat_keeper_msg_done(&b);
	moat_error err = {0};
	char *s = NULL;
	strcpy(a.exit.limit, "Mem\n");
	assert_int_equal(moat__keeper_encode(&a, &s, &err), -EINVAL);
	assert_string_equal(err.msg, "exit.limit: not a limit's name");
	assert_null(s);
	json_decref(a.sandbox_report);
	a.sandbox_report = NULL;

	moat_keeper_msg_init(&a, MOAT_KEEPER_SIGNAL);
	a.id = 2;
	a.signal = 15;
	roundtrip(&a, &b);
	assert_int_equal(b.signal, 15);

	moat_keeper_msg_init(&a, MOAT_KEEPER_STATUS);
	a.tag = 1;
	roundtrip(&a, &b);
	assert_int_equal(b.state[0], '\0');
	strcpy(a.state, "running");
	strcpy(a.sandbox, "0123456789abcdef01234567");
	a.pid = 10;
	a.commands[0] = 1;
	a.commands[1] = 4;
	a.n_commands = 2;
	roundtrip(&a, &b);
	assert_string_equal(b.state, "running");
	assert_int_equal(b.n_commands, 2);
	assert_int_equal(b.commands[1], 4);
	assert_false(b.net_known);
	assert_int_equal(b.approvals_pending, 0);
	/* The gateway's counters and the gates' counts (session show). */
	a.net_known = true;
	a.net_allowed = 3;
	a.net_denied = 2;
	a.net_bytes_up = 1000;
	a.net_bytes_down = 5000000000ull;
	a.approvals_pending = 1;
	a.approvals_leases = 2;
	roundtrip(&a, &b);
	assert_true(b.net_known);
	assert_int_equal(b.net_allowed, 3);
	assert_int_equal(b.net_denied, 2);
	assert_int_equal(b.net_bytes_up, 1000);
	assert_int_equal(b.net_bytes_down, 5000000000ull);
	assert_int_equal(b.approvals_pending, 1);
	assert_int_equal(b.approvals_leases, 2);

	moat_keeper_msg_init(&a, MOAT_KEEPER_ERROR);
	a.tag = 8;
	a.error_errno = EPERM;
	a.message = "spawn: no";
	roundtrip(&a, &b);
	assert_int_equal(b.error_errno, EPERM);
	assert_string_equal(b.message, "spawn: no");
	moat_keeper_msg_done(&b);
}

static void test_bad_input_names_the_field(void **state)
{
	(void)state;
	refused("", EINVAL, "message: not JSON ('[' or '{' expected near end of file at byte 0)");
	refused("[1]", EINVAL, "message: not a JSON object");
	refused("{}", EINVAL, "type: missing");
	refused("{\"type\":3}", EINVAL, "type: not a string");
	refused("{\"type\":\"launch\"}", EINVAL, "type: unknown message type 'launch'");
	refused("{\"type\":\"wait\",\"tag\":1,\"id\":1,\"id\":2}", EINVAL,
		"message: not JSON (duplicate object key near '\"id\"' at byte 34)");
	refused("{\"type\":\"wait\",\"tag\":1}", EINVAL, "wait.id: missing");
	refused("{\"type\":\"wait\",\"id\":1}", EINVAL, "wait.tag: missing");
	refused("{\"type\":\"wait\",\"tag\":1,\"id\":-1}", EINVAL, "wait.id: -1 is out of range (0..4294967295)");
	refused("{\"type\":\"wait\",\"tag\":1,\"id\":1,\"pid\":3}", EINVAL, "wait.pid: unknown field");
	refused("{\"type\":\"spawn\",\"tag\":1}", EINVAL, "spawn.argv: missing");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[]}", EINVAL, "spawn.argv: must hold at least one string");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\",\"b\",3]}", EINVAL, "spawn.argv[2]: not a string");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\\u0000b\"]}", EINVAL,
		"message: not JSON (\\u0000 is not allowed without JSON_ALLOW_NUL near '\"a\\u0000b\"' at byte 42)");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"env\":[\"PATH\"]}", EINVAL,
		"spawn.env[0]: not NAME=VALUE");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"cwd\":\"tmp\"}", EINVAL,
		"spawn.cwd: not an absolute path");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"tty\":1}", EINVAL, "spawn.tty: not true or false");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"attached\":\"yes\"}", EINVAL,
		"spawn.attached: not true or false");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"wait\":1}", EINVAL,
		"spawn.wait: not true or false");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"stdio\":[true,false]}", EINVAL,
		"spawn.stdio: not an array of three booleans");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"tty\":true,\"stdio\":[true,false,false]}", EINVAL,
		"spawn.stdio: must be empty with spawn.tty");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"rows\":24,\"cols\":80}", EINVAL,
		"spawn.rows: a window size without spawn.tty");
	refused("{\"type\":\"status\",\"tag\":1,\"sandbox\":\"0123456789abcdef01234567\",\"pid\":1,"
		"\"state\":\"running\",\"commands\":[],\"net\":{\"allowed\":-1}}",
		EINVAL, "status.net.allowed: -1 is out of range (0..9223372036854775807)");
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"tty\":true,\"rows\":70000}", EINVAL,
		"spawn.rows: 70000 is out of range (0..65535)");
	refused("{\"type\":\"signal\",\"tag\":1,\"id\":1,\"signal\":0}", EINVAL, "signal.signal: 0 is out of range (1..64)");
	refused("{\"type\":\"hello\",\"versions\":[]}", EINVAL, "hello.versions: must hold at least one version");
	refused("{\"type\":\"hello\",\"versions\":[1],\"tag\":2}", EINVAL, "hello.tag: unknown field");
	refused("{\"type\":\"hello\",\"version\":1,\"sandbox\":\"../x\",\"pid\":1}", EINVAL,
		"hello.sandbox: not a sandbox id");
	refused("{\"type\":\"exit\",\"tag\":1,\"id\":1,\"status\":\"oom\"}", EINVAL,
		"exit.status: not exited, signaled or setup_error");
	refused("{\"type\":\"exit\",\"tag\":1,\"id\":1,\"status\":\"signaled\",\"exit_code\":-1,\"signal\":9,\"exit_status\":137,\"wall_ms\":1,\"cpu_user_ms\":0,\"cpu_sys_ms\":0,\"max_rss_bytes\":0,"
		"\"limit\":\"../x\"}", EINVAL,
		"exit.limit: not a limit's name");
	refused("{\"type\":\"exit\",\"tag\":1,\"id\":1,\"status\":\"signaled\",\"exit_code\":-1,\"signal\":9,\"exit_status\":137,\"wall_ms\":1,\"cpu_user_ms\":0,\"cpu_sys_ms\":0,\"max_rss_bytes\":0,"
		"\"limit\":\"abcdefghijklmnopqrstuvwxyz\"}",
		E2BIG, "exit.limit: longer than 23 bytes");
	refused("{\"type\":\"exit\",\"tag\":1,\"id\":1,\"status\":\"signaled\",\"exit_code\":-1,\"signal\":9,\"exit_status\":137,\"wall_ms\":1,\"cpu_user_ms\":0,\"cpu_sys_ms\":0,\"max_rss_bytes\":0,"
		"\"sandbox\":[]}", EINVAL,
		"exit.sandbox: not an object");

	/* Caps: a packet over the size, a vector over its count. */
	size_t big = MOAT_KEEPER_MAX_MSG + 1;
	char *buf = malloc(big + 1);
	memset(buf, ' ', big);
	buf[big] = '\0';
	refused(buf, E2BIG, "message: larger than 65536 bytes");
	free(buf);
	size_t n = MOAT_KEEPER_MAX_ARGS + 1;
	buf = malloc(64 + n * 4);
	char *p = buf + sprintf(buf, "{\"type\":\"spawn\",\"tag\":1,\"argv\":[");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s\"a\"", i ? "," : "");
	strcpy(p, "]}");
	refused(buf, E2BIG, "spawn.argv: more than 1024 entries");
	free(buf);
}

static void test_approvals(void **state)
{
	(void)state;
	moat_keeper_msg in, out;
	moat_keeper_msg_init(&in, MOAT_KEEPER_APPROVALS);
	in.tag = 9;
	in.body = json_pack("{s:s, s:s}", "op", "approve", "id", "a0123abcd");
	roundtrip(&in, &out);
	assert_true(json_equal(in.body, out.body));
	moat_keeper_msg_done(&in);
	moat_keeper_msg_done(&out);
	/* The body is the approval gates' to check; the frame only makes
	 * sure there is one object. */
	moat_error err = {0};
	_cleanup_free_ char *s = NULL;
	moat_keeper_msg_init(&in, MOAT_KEEPER_APPROVALS);
	assert_int_equal(moat__keeper_encode(&in, &s, &err), -EINVAL);
	assert_string_equal(err.msg, "approvals.body: not an object");
	refused("{\"type\":\"approvals\",\"tag\":1}", EINVAL, "approvals.body: missing");
	refused("{\"type\":\"approvals\",\"tag\":1,\"body\":[1]}", EINVAL, "approvals.body: not an object");
	refused("{\"type\":\"approvals\",\"tag\":1,\"body\":{},\"id\":1}", EINVAL, "approvals.id: unknown field");
}

static void test_lifetime(void **state)
{
	(void)state;
	moat_keeper_msg a, b;
	moat_keeper_msg_init(&a, MOAT_KEEPER_LIFETIME);
	a.tag = 9;
	a.ttl_ms = 8ull * 3600 * 1000;
	a.idle_ms = 1500;
	roundtrip(&a, &b);
	assert_true(b.ttl_ms == a.ttl_ms && b.idle_ms == 1500);
	moat_keeper_msg_done(&b);
	a.ttl_ms = MOAT_KEEPER_MAX_LIFETIME_MS + 1;
	moat_error err = {0};
	char *s = NULL;
	assert_int_equal(moat__keeper_encode(&a, &s, &err), -EINVAL);
	refused("{\"type\":\"lifetime\",\"tag\":1,\"ttl_ms\":0}", EINVAL, "lifetime.idle_ms: missing");
	refused("{\"type\":\"lifetime\",\"tag\":1,\"ttl_ms\":-1,\"idle_ms\":0}", EINVAL,
		"lifetime.ttl_ms: -1 is out of range (0..31622400000)");
	refused("{\"type\":\"lifetime\",\"tag\":1,\"ttl_ms\":1,\"idle_ms\":0,\"dir\":\"/x\"}", EINVAL,
		"lifetime.dir: unknown field");
}

static void test_copied(void **state)
{
	(void)state;
	moat_keeper_msg a, b;
	moat_keeper_msg_init(&a, MOAT_KEEPER_COPIED);
	a.tag = 3;
	a.into = true;
	a.host = "src/a";
	a.path = "/tmp/a";
	a.files = 2;
	a.dirs = 1;
	a.bytes = 99;
	a.message = "a FIFO (refused)";
	roundtrip(&a, &b);
	assert_true(b.into && b.files == 2 && b.dirs == 1 && b.bytes == 99);
	assert_string_equal(b.host, "src/a");
	assert_string_equal(b.path, "/tmp/a");
	assert_string_equal(b.message, "a FIFO (refused)");
	moat_keeper_msg_done(&b);
	a.host = NULL;
	moat_error err = {0};
	char *s = NULL;
	assert_int_equal(moat__keeper_encode(&a, &s, &err), -EINVAL);
	refused("{\"type\":\"spawn\",\"tag\":1,\"argv\":[\"a\"],\"record\":\"x.cast\"}", EINVAL,
		"spawn.record: not an absolute path");
	refused("{\"type\":\"copied\",\"tag\":1,\"into\":true,\"path\":\"/x\",\"files\":0,\"dirs\":0,\"bytes\":0}",
		EINVAL, "copied.host: missing");
	refused("{\"type\":\"copied\",\"tag\":1,\"into\":1,\"host\":\"h\",\"path\":\"/x\",\"files\":0,\"dirs\":0,"
		"\"bytes\":0}",
		EINVAL, "copied.into: not true or false");
}

static void test_ids(void **state)
{
	(void)state;
	assert_true(moat__keeper_id_valid("0123456789abcdef01234567"));
	assert_false(moat__keeper_id_valid("0123456789ABCDEF01234567"));
	assert_false(moat__keeper_id_valid("0123456789abcdef0123456"));
	assert_false(moat__keeper_id_valid("0123456789abcdef012345678"));
	assert_false(moat__keeper_id_valid("../3456789abcdef01234567"));
	assert_false(moat__keeper_id_valid(""));
	assert_false(moat__keeper_id_valid(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_spawn),
		cmocka_unit_test(test_exit_and_others),
		cmocka_unit_test(test_bad_input_names_the_field),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_approvals),
		cmocka_unit_test(test_lifetime),
		cmocka_unit_test(test_copied),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
