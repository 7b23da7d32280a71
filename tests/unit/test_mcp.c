/* Unit tests: MCP version negotiation, the tool table and the check of a
 * call's arguments against its input schema (mcp.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "mcp.h"

static void test_versions(void **state)
{
	(void)state;
	assert_string_equal(moat_mcp_negotiate_version("2025-06-18"), "2025-06-18");
	assert_string_equal(moat_mcp_negotiate_version("2024-11-05"), "2024-11-05");
	assert_string_equal(moat_mcp_negotiate_version("2099-01-01"), MOAT_MCP_LATEST_VERSION);
	assert_string_equal(moat_mcp_negotiate_version(NULL), MOAT_MCP_LATEST_VERSION);
}

static void test_log_levels(void **state)
{
	(void)state;
	assert_int_equal(moat_mcp_log_level("debug"), 0);
	assert_int_equal(moat_mcp_log_level("warning"), 3);
	assert_int_equal(moat_mcp_log_level("emergency"), 7);
	assert_int_equal(moat_mcp_log_level("Warning"), -1);
	assert_int_equal(moat_mcp_log_level("warn"), -1);
	assert_int_equal(moat_mcp_log_level(""), -1);
	assert_int_equal(moat_mcp_log_level(NULL), -1);
}

static void test_tools_table(void **state)
{
	(void)state;
	json_t *tools = moat_mcp_tools();
	assert_non_null(tools);
	assert_int_equal(json_array_size(tools), 7);
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		assert_non_null(name);
		assert_true(json_is_object(json_object_get(t, "inputSchema")));
		assert_non_null(moat_mcp_tool_schema(name));
	}
	json_decref(tools);
	assert_null(moat_mcp_tool_schema("rm_rf"));
}

static int check(const char *tool, const char *args, char *msg, size_t n)
{
	json_t *v = json_loads(args, 0, NULL);
	assert_non_null(v);
	int r = moat_mcp_schema_check(moat_mcp_tool_schema(tool), v, "arguments", msg, n);
	json_decref(v);
	return r;
}

static void test_schema(void **state)
{
	(void)state;
	char msg[256];
	assert_int_equal(check("run_code", "{\"language\":\"python\",\"code\":\"print(1)\"}", msg, sizeof(msg)), 0);
	assert_int_equal(check("run_code", "{\"language\":\"c\",\"code\":\"\",\"files\":{\"a.txt\":\"x\"},"
					   "\"limits\":{\"memory\":\"64M\",\"pids\":8}}", msg, sizeof(msg)), 0);
	static const struct {
		const char *tool, *args, *msg;
	} bad[] = {
		{"run_code", "{\"code\":\"x\"}", "arguments: misses the required field 'language'"},
		{"run_code", "{\"language\":\"cobol\",\"code\":\"x\"}", "arguments.language: must be one of [\"python\",\"javascript\",\"bash\",\"c\"]"},
		{"run_code", "{\"language\":\"python\",\"code\":5}", "arguments.code: must be a string"},
		{"run_code", "{\"language\":\"python\",\"code\":\"\",\"net\":true}", "arguments: has no field 'net'"},
		{"run_code", "{\"language\":\"python\",\"code\":\"\",\"limits\":{\"pids\":0}}", "arguments.limits.pids: must be at least 1"},
		{"run_code", "{\"language\":\"python\",\"code\":\"\",\"limits\":{\"pids\":2.5}}", "arguments.limits.pids: must be an integer"},
		{"run_code", "{\"language\":\"python\",\"code\":\"\",\"limits\":{\"network\":\"all\"}}", "arguments.limits: has no field 'network'"},
		{"run_code", "{\"language\":\"python\",\"code\":\"\",\"files\":{\"a\":1}}", "arguments.files.a: must be a string"},
		{"session_exec", "{\"session\":\"\",\"command\":\"ls\"}", "arguments.session: is shorter than 1 characters"},
		{"session_exec", "{\"session\":\"s\",\"command\":\"ls\",\"timeout\":0}", "arguments.timeout: must be at least 1"},
		{"session_write_file", "{\"session\":\"s\",\"path\":\"/tmp/a\"}", "arguments: misses the required field 'content'"},
		{"session_create", "{\"profile\":\"root\"}", "arguments.profile: must be one of [\"code\",\"agent\"]"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = 0;
		if (check(bad[i].tool, bad[i].args, msg, sizeof(msg)) != -EINVAL || strcmp(msg, bad[i].msg) != 0)
			fail_msg("case %zu: '%s'", i, msg);
	}
	/* maxLength counts characters, not bytes. */
	json_t *schema = json_pack("{s:s,s:i}", "type", "string", "maxLength", 2);
	json_t *v = json_string("\xc3\xa9\xc3\xa9");
	assert_int_equal(moat_mcp_schema_check(schema, v, "s", msg, sizeof(msg)), 0);
	json_decref(v);
	v = json_string("abc");
	assert_int_equal(moat_mcp_schema_check(schema, v, "s", msg, sizeof(msg)), -EINVAL);
	json_decref(v);
	json_decref(schema);
}

static void test_languages(void **state)
{
	(void)state;
	const char *file;
	const char *const *argv = moat_mcp_language_argv("python", &file);
	assert_non_null(argv);
	assert_string_equal(argv[0], "python3");
	assert_string_equal(file, "main.py");
	assert_non_null(moat_mcp_language_argv("c", &file));
	assert_string_equal(file, "main.c");
	assert_null(moat_mcp_language_argv("ruby", &file));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_log_levels),
		cmocka_unit_test(test_tools_table),
		cmocka_unit_test(test_schema),
		cmocka_unit_test(test_languages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
