/* moatd's pure parts (src/moatd/api.c, config.c): the router, the request
 * decoders with their errors naming the field, base64 and UTF-8, the
 * configuration, the token file and the roles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/sha.h>
#include <string.h>

#include "config.h"
#include "moatd.h"

static void test_routes(void **state)
{
	(void)state;
	char id[MOATD_ID_MAX + 1];
	assert_int_equal(moatd_route_match("GET", "/v1/health", id), MOATD_R_HEALTH);
	assert_int_equal(moatd_route_match("POST", "/v1/health", id), MOATD_R_BAD_METHOD);
	assert_int_equal(moatd_route_match("GET", "/metrics", id), MOATD_R_METRICS);
	assert_int_equal(moatd_route_match("POST", "/v1/runs", id), MOATD_R_RUN);
	assert_int_equal(moatd_route_match("GET", "/v1/runs", id), MOATD_R_BAD_METHOD);
	assert_int_equal(moatd_route_match("POST", "/v1/sessions", id), MOATD_R_SESSION_CREATE);
	assert_int_equal(moatd_route_match("GET", "/v1/sessions", id), MOATD_R_SESSION_LIST);
	assert_int_equal(moatd_route_match("GET", "/v1/sessions/abc", id), MOATD_R_SESSION_GET);
	assert_string_equal(id, "abc");
	assert_int_equal(moatd_route_match("DELETE", "/v1/sessions/a.b-c_d", id), MOATD_R_SESSION_DELETE);
	assert_string_equal(id, "a.b-c_d");
	assert_int_equal(moatd_route_match("POST", "/v1/sessions/x1/exec", id), MOATD_R_SESSION_EXEC);
	assert_int_equal(moatd_route_match("GET", "/v1/sessions/x1/exec", id), MOATD_R_BAD_METHOD);
	assert_string_equal(id, "");
	assert_int_equal(moatd_route_match("GET", "/v1/sessions/x1/audit", id), MOATD_R_SESSION_AUDIT);
	assert_int_equal(moatd_route_match("PUT", "/v1/sessions/x1/files", id), MOATD_R_SESSION_FILE_PUT);
	/* Keys that could be read as a path or an option are no route. */
	assert_int_equal(moatd_route_match("GET", "/v1/sessions/..", id), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match("GET", "/v1/sessions/-rf", id), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match("GET", "/v1/sessions/", id), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match("GET", "/v1/sessions/a/b/exec", id), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match("GET", "/v1/sessions/a%2fb", id), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match("GET", "/v2/health", id), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match("GET", "/v1/health/", id), MOATD_R_NOT_FOUND);
	assert_true(moatd_route_changes(MOATD_R_RUN));
	assert_false(moatd_route_changes(MOATD_R_SESSION_LIST));
}

static void test_roles(void **state)
{
	(void)state;
	assert_true(moatd_role_allows(MOATD_ROLE_NONE, MOATD_R_HEALTH));
	assert_false(moatd_role_allows(MOATD_ROLE_NONE, MOATD_R_METRICS));
	assert_true(moatd_role_allows(MOATD_ROLE_VIEWER, MOATD_R_METRICS));
	assert_true(moatd_role_allows(MOATD_ROLE_VIEWER, MOATD_R_SESSION_AUDIT));
	assert_false(moatd_role_allows(MOATD_ROLE_VIEWER, MOATD_R_RUN));
	assert_false(moatd_role_allows(MOATD_ROLE_VIEWER, MOATD_R_SESSION_EXEC));
	assert_false(moatd_role_allows(MOATD_ROLE_VIEWER, MOATD_R_SESSION_DELETE));
	assert_true(moatd_role_allows(MOATD_ROLE_AGENT, MOATD_R_RUN));
	assert_true(moatd_role_allows(MOATD_ROLE_AGENT, MOATD_R_SESSION_EXEC));
	assert_true(moatd_role_allows(MOATD_ROLE_OPERATOR, MOATD_R_SESSION_DELETE));
	assert_true(moatd_may_touch_session(MOATD_ROLE_AGENT, "uid:5", "uid:5"));
	assert_false(moatd_may_touch_session(MOATD_ROLE_AGENT, "uid:5", "uid:6"));
	assert_false(moatd_may_touch_session(MOATD_ROLE_AGENT, "uid:5", NULL));
	assert_false(moatd_may_touch_session(MOATD_ROLE_VIEWER, "uid:5", "uid:5"));
	assert_true(moatd_may_touch_session(MOATD_ROLE_OPERATOR, "uid:5", NULL));
	assert_int_equal(moatd_role_from_name("agent"), MOATD_ROLE_AGENT);
	assert_int_equal(moatd_role_from_name("root"), MOATD_ROLE_NONE);
}

/* Decodes body; on failure the message must start with field. */
static int dec(moatd_body_kind k, moatd_role role, const char *body, const char *field, moatd_request *r)
{
	moat_error err = {0};
	int rc = moatd_request_decode(k, role, body, strlen(body), r, &err);
	if (field) {
		if (rc >= 0 || strncmp(err.msg, field, strlen(field)) != 0)
			fail_msg("%s: expected an error naming '%s', got %d '%s'", body, field, rc, err.msg);
		return err.code;
	}
	if (rc < 0)
		fail_msg("%s: %s", body, err.msg);
	return 0;
}

static void test_decode_run(void **state)
{
	(void)state;
	moatd_request r;
	dec(MOATD_BODY_RUN, MOATD_ROLE_AGENT,
	    "{\"argv\":[\"sh\",\"-c\",\"x\"],\"profile\":\"code\",\"env\":{\"A\":\"1\"},\"cwd\":\"/tmp\","
	    "\"limits\":{\"time\":\"5s\",\"memory\":1048576},\"stdin_base64\":\"aGk=\","
	    "\"files\":[{\"path\":\"/in/a\",\"content\":\"x\"}]}",
	    NULL, &r);
	assert_string_equal(r.argv[0], "sh");
	assert_string_equal(r.argv[2], "x");
	assert_null(r.argv[3]);
	assert_string_equal(r.opts[0], "--profile=code");
	assert_string_equal(r.opts[1], "--env=A=1");
	assert_string_equal(r.opts[2], "--cwd=/tmp");
	assert_string_equal(r.opts[3], "--time=5s");
	assert_string_equal(r.opts[4], "--mem=1048576");
	assert_int_equal(r.stdin_len, 2);
	assert_memory_equal(r.stdin_data, "hi", 2);
	assert_int_equal(r.n_files, 1);
	assert_string_equal(r.files[0].path, "/in/a");
	moatd_request_done(&r);

	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{", "body", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "[1]", "body", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{}", "argv", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[]}", "argv", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":\"ls\"}", "argv", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\",3]}", "argv[1]", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"a\\u0000b\"]}", "body", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"color\":1}", "color: unknown field", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"name\":\"x\"}", "name: unknown field", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"argv\":[\"id\"]}", "body", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"env\":{\"A=B\":\"1\"}}", "env.A=B", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"env\":{\"A\":1}}", "env.A", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"limits\":{\"time\":\"-5\"}}", "limits.time", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"limits\":{\"time\":\"5s --rw=/\"}}", "limits.time",
	    &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"limits\":{\"disk\":1}}", "limits.disk", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"limits\":{\"pids\":-1}}", "limits.pids", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"cwd\":\"tmp\"}", "cwd", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"profile\":\"../x\"}", "profile", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"stdin\":\"a\",\"stdin_base64\":\"YQ==\"}", "stdin",
	    &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"stdin_base64\":\"Y===\"}", "stdin_base64", &r);
	/* Paths moat's HOST:PATH syntax would read another way. */
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"files\":[{\"path\":\"/a:/b\",\"content\":\"\"}]}",
	    "files[0].path", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"files\":[{\"path\":\"/a/../b\",\"content\":\"\"}]}",
	    "files[0].path", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"files\":[{\"path\":\"rel\",\"content\":\"\"}]}",
	    "files[0].path", &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"files\":[{\"path\":\"/a\"}]}", "files[0].content",
	    &r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_ADMIN, "{\"argv\":[\"ls\"],\"files\":[{\"path\":\"/a\",\"content\":\"\",\"mode\":1}]}",
	    "files[0].mode", &r);
	/* An agent may not widen its sandbox; an operator may. */
	assert_int_equal(dec(MOATD_BODY_RUN, MOATD_ROLE_AGENT, "{\"argv\":[\"ls\"],\"policy\":{}}", "policy", &r), EACCES);
	assert_int_equal(dec(MOATD_BODY_RUN, MOATD_ROLE_AGENT, "{\"argv\":[\"ls\"],\"allow_hosts\":[\"x.com\"]}",
			     "allow_hosts", &r),
			 EACCES);
	dec(MOATD_BODY_RUN, MOATD_ROLE_OPERATOR, "{\"argv\":[\"ls\"],\"policy\":{\"limits\":{\"wall\":\"1s\"}}}", NULL, &r);
	assert_non_null(r.policy);
	moatd_request_done(&r);
	dec(MOATD_BODY_RUN, MOATD_ROLE_OPERATOR, "{\"argv\":[\"ls\"],\"policy\":{},\"profile\":\"code\"}", "profile and policy",
	    &r);
}

static void test_decode_other(void **state)
{
	(void)state;
	moatd_request r;
	dec(MOATD_BODY_SESSION, MOATD_ROLE_AGENT, "{\"name\":\"s1\",\"profile\":\"agent\"}", NULL, &r);
	assert_string_equal(r.opts[0], "--profile=agent");
	assert_string_equal(r.opts[1], "--name=s1");
	moatd_request_done(&r);
	dec(MOATD_BODY_SESSION, MOATD_ROLE_AGENT, "{\"argv\":[\"ls\"]}", "argv: unknown field", &r);
	dec(MOATD_BODY_SESSION, MOATD_ROLE_AGENT, "{\"name\":\"-x\"}", "name", &r);
	dec(MOATD_BODY_EXEC, MOATD_ROLE_AGENT, "{\"argv\":[\"ls\"],\"time\":3,\"stdin\":\"x\"}", NULL, &r);
	assert_string_equal(r.opts[0], "--time=3");
	moatd_request_done(&r);
	dec(MOATD_BODY_EXEC, MOATD_ROLE_AGENT, "{\"argv\":[\"ls\"],\"time\":\"x y\"}", "time", &r);
	dec(MOATD_BODY_EXEC, MOATD_ROLE_AGENT, "{\"argv\":[\"ls\"],\"wait\":\"no\"}", "wait", &r);
	dec(MOATD_BODY_EXEC, MOATD_ROLE_AGENT, "{\"argv\":[\"ls\"],\"files\":[]}", "files: unknown field", &r);
	dec(MOATD_BODY_JUDGE, MOATD_ROLE_AGENT, "{\"source\":\"print(1)\",\"cases\":[{\"stdin\":\"\"}]}", NULL, &r);
	assert_string_equal(r.source_name, "solution.py");
	assert_string_equal(r.cases, "{\"stdin\":\"\"}\n");
	moatd_request_done(&r);
	dec(MOATD_BODY_JUDGE, MOATD_ROLE_AGENT, "{\"source\":\"x\",\"cases\":[]}", "cases", &r);
	dec(MOATD_BODY_JUDGE, MOATD_ROLE_AGENT, "{\"cases\":[{}]}", "source", &r);
	dec(MOATD_BODY_JUDGE, MOATD_ROLE_AGENT, "{\"source\":\"x\",\"cases\":[{}],\"language\":\"c\"}", "language", &r);
}

static void test_limits_within(void **state)
{
	(void)state;
	moat_limits ceil;
	moat_limits_default_code(&ceil);
	moat_error err = {0};
	char *ok[] = {"--profile=code", "--time=1s", "--mem=1M", "--pids=2", "--env=A=1", NULL};
	assert_int_equal(moatd_limits_within(ok, &ceil, &err), 0);
	char *high[] = {"--time=1h", NULL};
	assert_int_equal(moatd_limits_within(high, &ceil, &err), -EACCES);
	assert_true(strncmp(err.msg, "limits.time: 1h is above", 24) == 0);
	char *lifted[] = {"--mem=unlimited", NULL};
	assert_int_equal(moatd_limits_within(lifted, &ceil, &err), -EACCES);
	assert_true(strncmp(err.msg, "limits.memory", 13) == 0);
	char *bad[] = {"--pids=many", NULL};
	assert_int_equal(moatd_limits_within(bad, &ceil, &err), -MOAT_EINPUT);
	/* Where the profile sets no limit, any value is narrower. */
	ceil.cpus_milli = 0;
	char *cpus[] = {"--cpus=64", NULL};
	assert_int_equal(moatd_limits_within(cpus, &ceil, &err), 0);
}

static void test_bytes(void **state)
{
	(void)state;
	char *d;
	size_t n;
	assert_int_equal(moatd_base64_decode("", 0, &d, &n), 0);
	assert_int_equal(n, 0);
	free(d);
	assert_int_equal(moatd_base64_decode("AP8A", 4, &d, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(d, "\0\xff\0", 3);
	free(d);
	assert_true(moatd_base64_decode("YQ", 2, &d, &n) < 0);
	assert_true(moatd_base64_decode("Y=Q=", 4, &d, &n) < 0);
	assert_true(moatd_base64_decode("YQ==YQ==", 8, &d, &n) < 0);
	assert_true(moatd_base64_decode("Y Q=", 4, &d, &n) < 0);
	for (size_t len = 0; len < 9; len++) {
		const char src[] = "\x01\xfe\x80hello";
		char *e = moatd_base64_encode(src, len);
		assert_int_equal(moatd_base64_decode(e, strlen(e), &d, &n), 0);
		assert_int_equal(n, len);
		assert_memory_equal(d, src, len);
		free(d);
		free(e);
	}
	assert_true(moatd_utf8_valid("h\xc3\xa9", 3));
	assert_true(moatd_utf8_valid("\xf0\x9f\x98\x80", 4));
	assert_false(moatd_utf8_valid("\xff", 1));
	assert_false(moatd_utf8_valid("\xc3", 1));        /* cut */
	assert_false(moatd_utf8_valid("\xc0\xaf", 2));    /* overlong */
	assert_false(moatd_utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
	assert_false(moatd_utf8_valid("a\0b", 3));
	json_t *o = json_object();
	assert_int_equal(moatd_json_set_bytes(o, "d", "d64", "\xff", 1), 0);
	assert_string_equal(json_string_value(json_object_get(o, "d64")), "/w==");
	assert_null(json_object_get(o, "d"));
	json_decref(o);
}

static void test_config(void **state)
{
	(void)state;
	moatd_config c;
	moat_error err = {0};
	moatd_config_init(&c);
	const char *y = "socket: /tmp/x.sock\nmax_connections: 8\ntimeout: 5s\nmax_body: 64K\n"
			"roles:\n  agent: {uids: [1001, 1002], gids: [50]}\n  viewer:\n    uids: [1003]\n"
			"quotas:\n  agent: {sandboxes: 2, runs_per_minute: 10}\n";
	assert_int_equal(moatd_config_parse(y, strlen(y), &c, &err), 0);
	assert_string_equal(c.socket, "/tmp/x.sock");
	assert_int_equal(c.max_connections, 8);
	assert_int_equal(c.timeout_s, 5);
	assert_int_equal(c.max_body, 65536);
	assert_int_equal(c.quota[MOATD_ROLE_AGENT].sandboxes, 2);
	assert_int_equal(c.quota[MOATD_ROLE_AGENT].runs_per_minute, 10);
	assert_int_equal(moatd_role_for_peer(&c, 0, 0, 0), MOATD_ROLE_ADMIN);
	assert_int_equal(moatd_role_for_peer(&c, 0, 1002, 9), MOATD_ROLE_AGENT);
	assert_int_equal(moatd_role_for_peer(&c, 0, 7, 50), MOATD_ROLE_AGENT);
	assert_int_equal(moatd_role_for_peer(&c, 0, 1003, 9), MOATD_ROLE_VIEWER);
	assert_int_equal(moatd_role_for_peer(&c, 0, 1004, 9), MOATD_ROLE_NONE);
	moatd_config_done(&c);

	json_t *j = NULL;
	const char *typed = "a: true\nb: '1'\nc: 2\nd: 1.5\ne: 3.1.0\nf: null\ng: -4\n";
	assert_int_equal(moatd_yaml_to_json(typed, strlen(typed), &j, &err), 0);
	assert_true(json_is_true(json_object_get(j, "a")));
	assert_string_equal(json_string_value(json_object_get(j, "b")), "1");
	assert_int_equal(json_integer_value(json_object_get(j, "c")), 2);
	assert_true(json_is_real(json_object_get(j, "d")));
	assert_string_equal(json_string_value(json_object_get(j, "e")), "3.1.0");
	assert_true(json_is_null(json_object_get(j, "f")));
	assert_int_equal(json_integer_value(json_object_get(j, "g")), -4);
	json_decref(j);

	static const struct {
		const char *text, *field;
	} bad[] = {
		{"sockt: /x\n", "sockt: unknown field"},
		{"roles: {root: {uids: [0]}}\n", "roles.root"},
		{"roles: {agent: {uids: [-1]}}\n", "roles.agent.uids[0]"},
		{"roles: {agent: {users: [1]}}\n", "roles.agent.users"},
		{"quotas: {agent: {cpu: 1}}\n", "quotas.agent.cpu"},
		{"max_body: lots\n", "max_body"},
		{"tls: {cert: /a}\n", "tls"},
		{"a: &x 1\nb: *x\n", "line"},
		{"socket: [1\n", "line"},
		{"max_connections: 0\n", "max_connections"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		moatd_config_init(&c);
		memset(&err, 0, sizeof(err));
		if (moatd_config_parse(bad[i].text, strlen(bad[i].text), &c, &err) >= 0 ||
		    strncmp(err.msg, bad[i].field, strlen(bad[i].field)) != 0)
			fail_msg("%s: expected an error naming %s, got '%s'", bad[i].text, bad[i].field, err.msg);
		moatd_config_done(&c);
	}
}

static void test_tokens(void **state)
{
	(void)state;
	moatd_config c;
	moat_error err = {0};
	moatd_config_init(&c);
	unsigned char d[32];
	char hex[65], text[256];
	SHA256((const unsigned char *)"s3cret", 6, d);
	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
	snprintf(text, sizeof(text), "# tokens\n\nagent %s ci-bot\nviewer %064d dash\n", hex, 0);
	assert_int_equal(moatd_tokens_parse(text, strlen(text), &c, &err), 0);
	assert_int_equal(c.n_tokens, 2);
	const char *name = NULL;
	assert_int_equal(moatd_role_for_bearer(&c, "Bearer s3cret", &name), MOATD_ROLE_AGENT);
	assert_string_equal(name, "ci-bot");
	assert_int_equal(moatd_role_for_bearer(&c, "Bearer s3cre", NULL), MOATD_ROLE_NONE);
	assert_int_equal(moatd_role_for_bearer(&c, "Bearer s3cret ", NULL), MOATD_ROLE_NONE);
	assert_int_equal(moatd_role_for_bearer(&c, "Basic s3cret", NULL), MOATD_ROLE_NONE);
	assert_int_equal(moatd_role_for_bearer(&c, "Bearer ", NULL), MOATD_ROLE_NONE);
	assert_int_equal(moatd_role_for_bearer(&c, NULL, NULL), MOATD_ROLE_NONE);
	moatd_config_done(&c);
	static const char *const bad[] = {
		"agent abc x\n", "king 0000000000000000000000000000000000000000000000000000000000000000 x\n",
		"agent 000000000000000000000000000000000000000000000000000000000000000G x\n",
		"agent 0000000000000000000000000000000000000000000000000000000000000000\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		moatd_config_init(&c);
		assert_true(moatd_tokens_parse(bad[i], strlen(bad[i]), &c, &err) < 0);
		assert_true(strncmp(err.msg, "line 1", 6) == 0);
		moatd_config_done(&c);
	}
}

/* The routes with a second key: an exec's id, an approval's. */
static void test_routes_sub(void **state)
{
	(void)state;
	char id[MOATD_ID_MAX + 1], sub[MOATD_ID_MAX + 1];
	const char *x = "/v1/sessions/s1/exec/0123456789abcdef0123456789abcdef";
	assert_int_equal(moatd_route_match_sub("GET", x, id, sub), MOATD_R_SESSION_EXEC_GET);
	assert_string_equal(id, "s1");
	assert_string_equal(sub, "0123456789abcdef0123456789abcdef");
	assert_int_equal(moatd_route_match_sub("POST", x, id, sub), MOATD_R_BAD_METHOD);
	assert_string_equal(id, "");
	assert_int_equal(moatd_route_match_sub("GET", "/v1/sessions/s1/exec/0123", id, sub), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match_sub("GET", "/v1/sessions/s1/exec/../owners", id, sub), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match_sub("GET", "/v1/sessions/s1/exec/0123456789ABCDEF0123456789abcdef", id, sub),
			 MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match_sub("GET", "/v1/approvals", id, sub), MOATD_R_APPROVAL_LIST);
	assert_int_equal(moatd_route_match_sub("POST", "/v1/approvals", id, sub), MOATD_R_BAD_METHOD);
	assert_int_equal(moatd_route_match_sub("POST", "/v1/approvals/a0123abcd", id, sub), MOATD_R_APPROVAL_DECIDE);
	assert_string_equal(sub, "a0123abcd");
	assert_int_equal(moatd_route_match_sub("GET", "/v1/approvals/a0123abcd", id, sub), MOATD_R_BAD_METHOD);
	assert_int_equal(moatd_route_match_sub("POST", "/v1/approvals/l0123abcd", id, sub), MOATD_R_NOT_FOUND);
	assert_int_equal(moatd_route_match_sub("POST", "/v1/approvals/a0123abcd/x", id, sub), MOATD_R_NOT_FOUND);
	/* Who may: a decision is a person's, never an agent's. */
	assert_false(moatd_role_allows(MOATD_ROLE_AGENT, MOATD_R_APPROVAL_DECIDE));
	assert_false(moatd_role_allows(MOATD_ROLE_VIEWER, MOATD_R_APPROVAL_DECIDE));
	assert_true(moatd_role_allows(MOATD_ROLE_OPERATOR, MOATD_R_APPROVAL_DECIDE));
	assert_true(moatd_role_allows(MOATD_ROLE_VIEWER, MOATD_R_APPROVAL_LIST));
	assert_false(moatd_role_allows(MOATD_ROLE_VIEWER, MOATD_R_SESSION_EXEC_GET));
	assert_true(moatd_route_changes(MOATD_R_APPROVAL_DECIDE));
}

static void test_decision(void **state)
{
	(void)state;
	json_t *r = NULL;
	moat_error err = {0};
	const char *b = "{\"decision\":\"approve\",\"kind\":\"for\",\"for\":\"10m\",\"scope\":\"path\",\"note\":\"ok\"}";
	assert_int_equal(moatd_decision_decode("a0123abcd", b, strlen(b), &r, &err), 0);
	assert_string_equal(json_string_value(json_object_get(r, "op")), "approve");
	assert_string_equal(json_string_value(json_object_get(r, "id")), "a0123abcd");
	assert_int_equal(json_integer_value(json_object_get(r, "for_ms")), 600000);
	assert_string_equal(json_string_value(json_object_get(r, "scope")), "path");
	json_decref(r);
	b = "{\"decision\":\"deny\",\"reason\":\"no\"}";
	assert_int_equal(moatd_decision_decode("a0123abcd", b, strlen(b), &r, &err), 0);
	assert_string_equal(json_string_value(json_object_get(r, "op")), "deny");
	assert_null(json_object_get(r, "kind"));
	json_decref(r);
	static const struct {
		const char *body, *field;
	} bad[] = {
		{"[]", "body"},
		{"{", "body"},
		{"{}", "decision"},
		{"{\"decision\":1}", "decision"},
		{"{\"decision\":\"yes\"}", "decision"},
		{"{\"decision\":\"approve\",\"colour\":\"x\"}", "colour"},
		{"{\"decision\":\"approve\",\"kind\":\"always\"}", "kind"},
		{"{\"decision\":\"approve\",\"kind\":\"for\"}", "for"},
		{"{\"decision\":\"approve\",\"for\":\"1m\"}", "for"},
		{"{\"decision\":\"approve\",\"kind\":\"for\",\"for\":\"0s\"}", "for"},
		{"{\"decision\":\"approve\",\"scope\":\"host\"}", "scope"},
		{"{\"decision\":\"approve\",\"kind\":\"session\",\"scope\":\"all\"}", "scope"},
		{"{\"decision\":\"approve\",\"reason\":\"x\"}", "reason"},
		{"{\"decision\":\"deny\",\"kind\":\"once\"}", "kind"},
		{"{\"decision\":\"deny\",\"reason\":\"a\\u0000b\"}", "body"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		r = NULL;
		if (moatd_decision_decode("a0123abcd", bad[i].body, strlen(bad[i].body), &r, &err) >= 0 ||
		    strncmp(err.msg, bad[i].field, strlen(bad[i].field)) != 0 || r)
			fail_msg("%s: expected an error naming %s, got '%s'", bad[i].body, bad[i].field, err.msg);
	}
}

/* A keeper's refusal of a decision: an approval decided or timed out
 * since moatd listed it is a conflict (409), not moatd's failure (500). */
static void test_decision_status(void **state)
{
	(void)state;
	assert_int_equal(moatd_decision_status(-EALREADY), 409);
	assert_int_equal(moatd_decision_status(-EINVAL), 400);
	assert_int_equal(moatd_decision_status(-E2BIG), 400);
	assert_int_equal(moatd_decision_status(-ENOMEM), 500);
	assert_int_equal(moatd_decision_status(-EIO), 500);
}

static void test_token_limits(void **state)
{
	(void)state;
	moatd_config c;
	moat_error err = {0};
	moatd_config_init(&c);
	const char *y = "quotas:\n  agent: {cpu_seconds: 1h}\n"
			"token_limits:\n  ci: {policy: /etc/moat/ci.yaml, quotas: {cpu_seconds: 90, sandboxes: 2}}\n"
			"  other: {policy: /x.yaml}\n";
	assert_int_equal(moatd_config_parse(y, strlen(y), &c, &err), 0);
	assert_int_equal(c.quota[MOATD_ROLE_AGENT].cpu_seconds, 3600);
	const moatd_token_limit *t = moatd_token_limit_of(&c, "ci");
	assert_non_null(t);
	assert_string_equal(t->policy, "/etc/moat/ci.yaml");
	assert_true(t->has_quota);
	assert_int_equal(t->quota.cpu_seconds, 90);
	assert_int_equal(t->quota.sandboxes, 2);
	assert_false(moatd_token_limit_of(&c, "other")->has_quota);
	assert_null(moatd_token_limit_of(&c, "nobody"));
	assert_null(moatd_token_limit_of(&c, NULL));
	moatd_config_done(&c);
	static const struct {
		const char *text, *field;
	} bad[] = {
		{"token_limits: [1]\n", "token_limits"},
		{"token_limits: {ci: 1}\n", "token_limits.ci"},
		{"token_limits: {ci: {polcy: /x}}\n", "token_limits.ci.polcy"},
		{"token_limits: {ci: {quotas: {cpu: 1}}}\n", "token_limits.ci.quotas.cpu"},
		{"token_limits: {ci: {quotas: {cpu_seconds: lots}}}\n", "token_limits.ci.quotas.cpu_seconds"},
		{"quotas: {agent: {cpu_seconds: -1}}\n", "quotas.agent.cpu_seconds"},
		{"peer_limits:\n  uid:x: {quotas: {sandboxes: 1}}\n", "peer_limits.uid:x"},
		{"peer_limits:\n  uid:4294967295: {}\n", "peer_limits.uid:4294967295"},
		{"peer_limits:\n  uid:-1: {}\n", "peer_limits.uid:-1"},
		{"peer_limits:\n  gid:7: {polcy: /x}\n", "peer_limits.gid:7.polcy"},
		{"peer_limits:\n  gid:7: {quotas: {cpu: 1}}\n", "peer_limits.gid:7.quotas.cpu"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		moatd_config_init(&c);
		memset(&err, 0, sizeof(err));
		if (moatd_config_parse(bad[i].text, strlen(bad[i].text), &c, &err) >= 0 ||
		    strncmp(err.msg, bad[i].field, strlen(bad[i].field)) != 0)
			fail_msg("%s: expected an error naming %s, got '%s'", bad[i].text, bad[i].field, err.msg);
		moatd_config_done(&c);
	}
}

/* peer_limits: the token form's ceiling and quotas, keyed by a unix
 * peer's uid or gid; a uid's entry wins over its gid's, and neither is a
 * token's. */
static void test_peer_limits(void **state)
{
	(void)state;
	moatd_config c;
	moat_error err = {0};
	moatd_config_init(&c);
	const char *y = "token_limits:\n  uid:1001: {quotas: {sandboxes: 9}}\n"
			"peer_limits:\n  uid:1001: {policy: /c.yaml, quotas: {sandboxes: 1, runs_per_minute: 3}}\n"
			"  gid:2000: {quotas: {cpu_seconds: 1m}}\n";
	assert_int_equal(moatd_config_parse(y, strlen(y), &c, &err), 0);
	const moatd_token_limit *t = NULL;
	gid_t g2000[] = {2000}, g2001[] = {2001}, sup2000[] = {2001, 7, 2000};
	assert_int_equal(moatd_peer_limit_of(&c, 1001, g2000, 1, &t, &err), 0);
	assert_non_null(t);
	assert_true(t->peer);
	assert_string_equal(t->section, "peer_limits");
	assert_string_equal(t->policy, "/c.yaml");
	assert_int_equal(t->quota.sandboxes, 1);
	assert_int_equal(t->quota.runs_per_minute, 3);
	assert_int_equal(moatd_peer_limit_of(&c, 1002, g2000, 1, &t, &err), 0);
	assert_non_null(t);
	assert_true(t->by_gid);
	assert_null(t->policy);
	assert_int_equal(t->quota.cpu_seconds, 60);
	assert_int_equal(moatd_peer_limit_of(&c, 1002, g2001, 1, &t, &err), 0);
	assert_null(t);
	/* A supplementary group's entry holds as the primary's does (the
	 * primary is whichever of its groups the peer switched to). */
	assert_int_equal(moatd_peer_limit_of(&c, 1002, sup2000, 3, &t, &err), 0);
	assert_non_null(t);
	assert_int_equal(t->id, 2000);
	/* A token named like a peer is a token: each form keeps to its own. */
	t = moatd_token_limit_of(&c, "uid:1001");
	assert_non_null(t);
	assert_false(t->peer);
	assert_int_equal(t->quota.sandboxes, 9);
	moatd_config_done(&c);
	/* Two groups' entries: no order between them to choose by, refused. */
	moatd_config_init(&c);
	const char *y2 = "peer_limits:\n  gid:2000: {quotas: {sandboxes: 1}}\n  gid:2001: {quotas: {sandboxes: 9}}\n";
	assert_int_equal(moatd_config_parse(y2, strlen(y2), &c, &err), 0);
	assert_true(moatd_peer_limit_of(&c, 1002, sup2000, 3, &t, &err) < 0);
	assert_null(t);
	assert_int_equal(err.code, EACCES);
	assert_non_null(strstr(err.msg, "gid:2000 and gid:2001"));
	moatd_config_done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),     cmocka_unit_test(test_roles),  cmocka_unit_test(test_decode_run),
		cmocka_unit_test(test_decode_other), cmocka_unit_test(test_limits_within), cmocka_unit_test(test_bytes), cmocka_unit_test(test_config),
		cmocka_unit_test(test_tokens), cmocka_unit_test(test_routes_sub), cmocka_unit_test(test_decision), cmocka_unit_test(test_decision_status),
		cmocka_unit_test(test_token_limits),
		cmocka_unit_test(test_peer_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
