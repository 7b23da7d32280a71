/* Unit tests: moat mcp wrap's tool policy, the audit summary of a call's
 * arguments and the tools/list filter (mcpwrap.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "mcpwrap.h"

static moat_tool_policy *parse_ok(const char *y)
{
	moat_tool_policy *p = NULL;
	moat_error err = {0};
	if (moat_tool_policy_parse(y, strlen(y), "t.yaml", &p, &err) < 0)
		fail_msg("%s: %s", y, err.msg);
	return p;
}

static void test_decide(void **state)
{
	(void)state;
	moat_tool_policy *p = parse_ok("tools:\n  default: allow\n  deny: [delete_file]\n  approve: [write_file, move_file]\n"
				       "  allow:\n    - read_file\n    - list_directory\n");
	assert_int_equal(moat_tool_policy_decide(p, "delete_file"), MOAT_TOOL_DENY);
	assert_int_equal(moat_tool_policy_decide(p, "move_file"), MOAT_TOOL_APPROVE);
	assert_int_equal(moat_tool_policy_decide(p, "read_file"), MOAT_TOOL_ALLOW);
	assert_int_equal(moat_tool_policy_decide(p, "anything_else"), MOAT_TOOL_ALLOW);
	moat_tool_policy_free(p);
	/* The default default is deny. */
	p = parse_ok("tools:\n  allow: [echo]\n");
	assert_int_equal(moat_tool_policy_decide(p, "echo"), MOAT_TOOL_ALLOW);
	assert_int_equal(moat_tool_policy_decide(p, "add"), MOAT_TOOL_DENY);
	moat_tool_policy_free(p);
	p = parse_ok("{\"tools\": {\"default\": \"deny\", \"allow\": [\"a\"]}}");
	assert_int_equal(moat_tool_policy_decide(p, "a"), MOAT_TOOL_ALLOW);
	assert_string_equal(moat_tool_decision_to_string(MOAT_TOOL_APPROVE), "approve");
	moat_tool_policy_free(p);
	p = moat_tool_policy_allow_all();
	assert_int_equal(moat_tool_policy_decide(p, "x"), MOAT_TOOL_ALLOW);
	moat_tool_policy_free(p);
}

static void test_bad(void **state)
{
	(void)state;
	static const struct {
		const char *in, *msg;
	} bad[] = {
		{"tools:\n  default: maybe\n", "t.yaml:2:12: tools.default: expected allow or deny"},
		{"tools:\n  allow: read_file\n", "t.yaml:2:10: tools.allow: expected a list of tool names"},
		{"tools:\n  alow: [x]\n", "t.yaml:2:3: tools: unknown key 'alow' (expected default, deny, approve or allow)"},
		{"tools:\n  allow: [x]\n  deny: [x]\n", "t.yaml: tool 'x' is in two of deny, approve and allow"},
		{"tools:\n  allow: [x, x]\n", "t.yaml:2:14: 'x' is listed twice"},
		{"tools:\n  allow: [x]\n  allow: [y]\n", "t.yaml:3:3: tools.allow: given twice"},
		{"tools:\n  allow: &a [x]\n  deny: *a\n", "t.yaml:2:10: anchors and tags are not allowed"},
		{"tools:\n  allow: [!!str x]\n", "t.yaml:2:11: anchors and tags are not allowed"},
		{"tools: {}\n---\ntools: {}\n", "t.yaml:2:1: a second document (expected one)"},
		{"network: {}\n", "t.yaml:1:1: expected the key tools (the only one)"},
		{"tools:\n  allow: [[x]]\n", "t.yaml:2:11: tools.allow: expected a tool name"},
		{"tools: [", NULL},
		{"", NULL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		moat_tool_policy *p = NULL;
		moat_error err = {0};
		int r = moat_tool_policy_parse(bad[i].in, strlen(bad[i].in), "t.yaml", &p, &err);
		if (r != -EINVAL || p || (bad[i].msg && strcmp(err.msg, bad[i].msg) != 0))
			fail_msg("case %zu: %d '%s'", i, r, err.msg);
	}
}

static void test_audit_args(void **state)
{
	(void)state;
	char big[1000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	json_t *args = json_pack("{s:s,s:s,s:[s],s:i}", "path", "/workspace/a", "content", big, "list", big, "n", 3);
	json_t *s = moat_mcp_audit_args(args);
	assert_string_equal(json_string_value(json_object_get(s, "path")), "/workspace/a");
	const char *c = json_string_value(json_object_get(s, "content"));
	assert_non_null(c);
	assert_int_equal(strncmp(c, "sha256:", 7), 0);
	assert_non_null(strstr(c, "(999 bytes)"));
	assert_string_equal(json_string_value(json_array_get(json_object_get(s, "list"), 0)), c);
	assert_int_equal(json_integer_value(json_object_get(s, "n")), 3);
	json_decref(s);
	json_decref(args);
}

static void test_filter(void **state)
{
	(void)state;
	moat_tool_policy *p = parse_ok("tools:\n  default: allow\n  deny: [b, d]\n  approve: [c]\n");
	json_t *r = json_loads("{\"tools\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"},{\"name\":\"d\"},{\"x\":1}]}", 0, NULL);
	assert_int_equal(moat_tool_policy_filter_list(p, r), 3);
	assert_int_equal(json_array_size(json_object_get(r, "tools")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r, "tools"), 1), "name")), "c");
	json_decref(r);
	moat_tool_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_audit_args),
		cmocka_unit_test(test_filter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
