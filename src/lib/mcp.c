/* The pure parts of moat mcp serve (mcp.h): versions, tools, schemas. */
#include "mcp.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsonrpc.h"
#include "util.h"

const char *const moat_mcp_versions[] = {
	MOAT_MCP_LATEST_VERSION, "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

const char *moat_mcp_negotiate_version(const char *requested)
{
	for (size_t i = 0; requested && moat_mcp_versions[i]; i++)
		if (strcmp(requested, moat_mcp_versions[i]) == 0)
			return moat_mcp_versions[i];
	return MOAT_MCP_LATEST_VERSION;
}

int moat_mcp_log_level(const char *level)
{
	static const char *const levels[] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
	for (size_t i = 0; level && i < ELEMENTSOF(levels); i++)
		if (strcmp(level, levels[i]) == 0)
			return (int)i;
	return -1;
}

/* The tools, in JSON: the text is what tools/list sends and what calls are
 * checked against, so the two cannot drift apart. */
#define LIMITS_SCHEMA                                                                                          \
	"{\"type\":\"object\",\"additionalProperties\":false,"                                                 \
	"\"description\":\"Limits for this call, at most the server policy's (the same fields as a policy's "  \
	"limits).\","                                                                                          \
	"\"properties\":{"                                                                                     \
	"\"wall\":{\"type\":\"string\",\"maxLength\":32,\"description\":\"wall-clock time, e.g. 5s\"},"        \
	"\"cpu_time\":{\"type\":\"string\",\"maxLength\":32,\"description\":\"CPU time, e.g. 5s\"},"           \
	"\"memory\":{\"type\":\"string\",\"maxLength\":32,\"description\":\"memory, e.g. 128M\"},"             \
	"\"pids\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000000},"                                   \
	"\"output\":{\"type\":\"string\",\"maxLength\":32,\"description\":\"stdout and stderr together, e.g. " \
	"1M\"}}}"

#define SESSION_PROP "\"session\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"description\":\"id or name from session_create\"}"
#define PATH_PROP(d) "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024,\"description\":\"" d "\"}"

#define RUN_OUTPUT_SCHEMA                                                                                      \
	"{\"type\":\"object\",\"properties\":{"                                                                \
	"\"status\":{\"type\":\"string\",\"description\":\"exited, signaled, timeout, oom, pids_limit, "       \
	"cpu_limit, output_limit, setup_error, ...\"},"                                                       \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},"                                                     \
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                                   \
	"\"wall_ms\":{\"type\":\"integer\"},\"limit\":{\"type\":[\"string\",\"null\"]}},"                      \
	"\"required\":[\"status\",\"exit_code\",\"stdout\",\"stderr\"]}"

static const char tools_json[] =
	"["
	/* run_code */
	"{\"name\":\"run_code\",\"title\":\"Run code in a fresh sandbox\","
	"\"description\":\"Runs a snippet in a fresh, strict one-shot sandbox (no network, a private /tmp, the "
	"server policy's limits) and returns its output and how it ended.\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"language\",\"code\"],"
	"\"properties\":{"
	"\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\",\"bash\",\"c\"]},"
	"\"code\":{\"type\":\"string\",\"maxLength\":1048576},"
	"\"stdin\":{\"type\":\"string\",\"maxLength\":1048576},"
	"\"files\":{\"type\":\"object\",\"maxProperties\":64,\"description\":\"name -> text content, placed "
	"read-only beside the program in /src\",\"additionalProperties\":{\"type\":\"string\",\"maxLength\":1048576}},"
	"\"limits\":" LIMITS_SCHEMA "}},"
	"\"outputSchema\":" RUN_OUTPUT_SCHEMA "},"
	/* session_create */
	"{\"name\":\"session_create\",\"title\":\"Create a session\","
	"\"description\":\"Starts a long-lived sandbox to run commands in one after another; files in /tmp stay "
	"between commands. Its policy is the server's, or the given profile or policy narrowed by it.\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	"\"profile\":{\"type\":\"string\",\"enum\":[\"code\",\"agent\"]},"
	"\"policy\":{\"type\":\"object\",\"description\":\"a moat policy document (docs/policy.md) as JSON\"},"
	"\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64},"
	"\"limits\":" LIMITS_SCHEMA "}},"
	"\"outputSchema\":{\"type\":\"object\",\"properties\":{\"session\":{\"type\":\"string\"},"
	"\"name\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"session\"]}},"
	/* session_exec */
	"{\"name\":\"session_exec\",\"title\":\"Run a command in a session\","
	"\"description\":\"Runs a shell command (sh -c) in a session's sandbox.\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"command\"],"
	"\"properties\":{" SESSION_PROP ","
	"\"command\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":131072},"
	"\"cwd\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024},"
	"\"stdin\":{\"type\":\"string\",\"maxLength\":1048576},"
	"\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400,\"description\":\"seconds\"}}},"
	"\"outputSchema\":" RUN_OUTPUT_SCHEMA "},"
	/* session_read_file */
	"{\"name\":\"session_read_file\",\"title\":\"Read a file of a session\","
	"\"description\":\"Reads a file inside a session's sandbox (at most 1 MiB).\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\",\"path\"],"
	"\"properties\":{" SESSION_PROP "," PATH_PROP("path inside the sandbox") "}}},"
	/* session_write_file */
	"{\"name\":\"session_write_file\",\"title\":\"Write a file in a session\","
	"\"description\":\"Writes (replaces) a file inside a session's sandbox.\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,"
	"\"required\":[\"session\",\"path\",\"content\"],"
	"\"properties\":{" SESSION_PROP "," PATH_PROP("path inside the sandbox") ","
	"\"content\":{\"type\":\"string\",\"maxLength\":1048576}}}},"
	/* session_list_files */
	"{\"name\":\"session_list_files\",\"title\":\"List a folder of a session\","
	"\"description\":\"Lists a folder inside a session's sandbox: type (f file, d folder, l link, ...), "
	"size and name per line.\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\"],"
	"\"properties\":{" SESSION_PROP "," PATH_PROP("folder inside the sandbox; default /tmp") "}}},"
	/* session_stop */
	"{\"name\":\"session_stop\",\"title\":\"Stop a session\","
	"\"description\":\"Ends every process of a session and removes it.\","
	"\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"session\"],"
	"\"properties\":{" SESSION_PROP "}}}"
	"]";

static json_t *tools_table(void)
{
	/* Parsed once; the process is single-threaded where it serves. */
	static json_t *tools;
	if (!tools)
		tools = json_loads(tools_json, 0, NULL);
	return tools;
}

json_t *moat_mcp_tools(void)
{
	json_t *t = tools_table();
	return t ? json_deep_copy(t) : NULL;
}

const json_t *moat_mcp_tool_schema(const char *name)
{
	json_t *t = tools_table();
	size_t i;
	json_t *tool;
	json_array_foreach(t, i, tool) {
		if (strcmp(json_string_value(json_object_get(tool, "name")), name) == 0)
			return json_object_get(tool, "inputSchema");
	}
	return NULL;
}

_printf_(4, 5) static int fail(char *msg, size_t size, const char *where, const char *fmt, ...)
{
	int n = snprintf(msg, size, "%s: ", where);
	if (n < 0 || (size_t)n >= size)
		return -EINVAL;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + n, size - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool type_is(const char *type, const json_t *v)
{
	if (strcmp(type, "object") == 0)
		return json_is_object(v);
	if (strcmp(type, "array") == 0)
		return json_is_array(v);
	if (strcmp(type, "string") == 0)
		return json_is_string(v);
	if (strcmp(type, "integer") == 0)
		return json_is_integer(v) || (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
	if (strcmp(type, "number") == 0)
		return json_is_number(v);
	if (strcmp(type, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(type, "null") == 0)
		return json_is_null(v);
	return false;
}

/* The number of characters (code points) of a valid UTF-8 string. */
static size_t utf8_chars(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

int moat_mcp_schema_check(const json_t *schema, const json_t *value, const char *where, char *msg, size_t msg_size)
{
	const json_t *type = json_object_get(schema, "type");
	if (json_is_string(type)) {
		if (!type_is(json_string_value(type), value))
			return fail(msg, msg_size, where, "must be %s %s",
				    strchr("aeiou", json_string_value(type)[0]) ? "an" : "a", json_string_value(type));
	} else if (json_is_array(type)) {
		bool ok = false;
		size_t i;
		json_t *t;
		json_array_foreach(type, i, t) ok = ok || type_is(json_string_value(t), value);
		if (!ok)
			return fail(msg, msg_size, where, "has the wrong type");
	}
	const json_t *en = json_object_get(schema, "enum");
	if (en) {
		bool ok = false;
		size_t i;
		json_t *e;
		json_array_foreach(en, i, e) ok = ok || json_equal(e, (json_t *)value);
		if (!ok) {
			_cleanup_free_ char *list = json_dumps(en, JSON_COMPACT);
			return fail(msg, msg_size, where, "must be one of %s", list ? list : "the listed values");
		}
	}
	if (json_is_string(value)) {
		size_t chars = utf8_chars(json_string_value(value), json_string_length(value));
		json_int_t lim;
		if ((lim = json_integer_value(json_object_get(schema, "maxLength"))) > 0 && chars > (size_t)lim)
			return fail(msg, msg_size, where, "is longer than %lld characters", (long long)lim);
		if ((lim = json_integer_value(json_object_get(schema, "minLength"))) > 0 && chars < (size_t)lim)
			return fail(msg, msg_size, where, "is shorter than %lld characters", (long long)lim);
		/* A NUL would end the string where the sandbox reads it. */
		if (strlen(json_string_value(value)) != json_string_length(value))
			return fail(msg, msg_size, where, "holds a NUL character");
	}
	if (json_is_number(value)) {
		const json_t *mn = json_object_get(schema, "minimum"), *mx = json_object_get(schema, "maximum");
		double v = json_number_value(value);
		if (mn && v < json_number_value(mn))
			return fail(msg, msg_size, where, "must be at least %g", json_number_value(mn));
		if (mx && v > json_number_value(mx))
			return fail(msg, msg_size, where, "must be at most %g", json_number_value(mx));
	}
	if (json_is_array(value)) {
		const json_t *mx = json_object_get(schema, "maxItems"), *items = json_object_get(schema, "items");
		if (mx && json_array_size(value) > (size_t)json_integer_value(mx))
			return fail(msg, msg_size, where, "has more than %lld items", (long long)json_integer_value(mx));
		size_t i;
		json_t *e;
		json_array_foreach(value, i, e) {
			char sub[256];
			snprintf(sub, sizeof(sub), "%s[%zu]", where, i);
			if (items && moat_mcp_schema_check(items, e, sub, msg, msg_size) < 0)
				return -EINVAL;
		}
	}
	if (json_is_object(value)) {
		const json_t *props = json_object_get(schema, "properties");
		const json_t *req = json_object_get(schema, "required");
		const json_t *addl = json_object_get(schema, "additionalProperties");
		const json_t *mx = json_object_get(schema, "maxProperties");
		if (mx && json_object_size(value) > (size_t)json_integer_value(mx))
			return fail(msg, msg_size, where, "has more than %lld entries", (long long)json_integer_value(mx));
		size_t i;
		json_t *r;
		json_array_foreach(req, i, r) {
			if (!json_object_get(value, json_string_value(r)))
				return fail(msg, msg_size, where, "misses the required field '%s'", json_string_value(r));
		}
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)value, key, v) {
			char sub[256];
			snprintf(sub, sizeof(sub), "%s.%.128s", where, key);
			const json_t *ps = json_object_get(props, key);
			if (!ps) {
				if (json_is_false(addl))
					return fail(msg, msg_size, where, "has no field '%.128s'", key);
				if (json_is_object(addl))
					ps = addl;
			}
			if (ps && moat_mcp_schema_check(ps, v, sub, msg, msg_size) < 0)
				return -EINVAL;
		}
	}
	return 0;
}

const char *const *moat_mcp_language_argv(const char *language, const char **ret_file_name)
{
	static const char *const python[] = {"python3", "-I", "/src/main.py", NULL};
	static const char *const javascript[] = {"node", "/src/main.js", NULL};
	static const char *const bash[] = {"bash", "/src/main.sh", NULL};
	/* The code profile lets programs in /tmp run, not in /src. */
	static const char *const c[] = {"sh", "-c", "cc -O2 -o /tmp/a.out /src/main.c -lm && exec /tmp/a.out", NULL};
	static const struct {
		const char *name, *file;
		const char *const *argv;
	} langs[] = {
		{"python", "main.py", python},
		{"javascript", "main.js", javascript},
		{"bash", "main.sh", bash},
		{"c", "main.c", c},
	};
	for (size_t i = 0; i < ELEMENTSOF(langs); i++)
		if (strcmp(language, langs[i].name) == 0) {
			*ret_file_name = langs[i].file;
			return langs[i].argv;
		}
	return NULL;
}
