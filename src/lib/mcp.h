/* The Model Context Protocol's pure parts for moat mcp serve: protocol
 * version negotiation, the tools moat offers with their input and output
 * schemas, and the check of a call's arguments against the schema, which
 * runs before anything else does. No I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The revisions moat speaks, newest first. */
#define MOAT_MCP_LATEST_VERSION "2025-11-25"
extern const char *const moat_mcp_versions[];

/* The version to answer an initialize with: the client's when moat speaks
 * it, else the latest (the client then decides whether to go on). */
const char *moat_mcp_negotiate_version(const char *requested);

/* The syslog severities of logging/setLevel, least severe first: the
 * index of level among them, or -1 when it is not one. */
int moat_mcp_log_level(const char *level);

/* The tools of moat mcp serve, as tools/list lists them (a new reference). */
json_t *moat_mcp_tools(void);
/* The input schema of tool name (a borrowed reference into a table that
 * lives as long as the process), or NULL for an unknown tool. */
const json_t *moat_mcp_tool_schema(const char *name);

/* The largest code, stdin, file and command a call may pass, and the most
 * files. */
#define MOAT_MCP_MAX_CODE (1u << 20)
#define MOAT_MCP_MAX_FILES 64
#define MOAT_MCP_MAX_PATH 1024

/* Checks value against schema, a subset of JSON Schema: type (object,
 * string, integer, number, boolean, array), properties, required,
 * additionalProperties (false or a schema), enum, minLength, maxLength,
 * minimum, maximum, maxItems, items, maxProperties and pattern-free
 * strings. Returns 0, or -EINVAL with msg filled naming the field
 * ("arguments.limits.memory: must be a string"). */
int moat_mcp_schema_check(const json_t *schema, const json_t *value, const char *where, char *msg, size_t msg_size);

/* The command a run_code call runs for language, the program being at
 * path inside the sandbox: NULL for an unknown language. The strings are
 * static. c is compiled into /tmp first. */
const char *const *moat_mcp_language_argv(const char *language, const char **ret_file_name);
