/* The pure parts of moat mcp wrap: the tool policy (which tools of a
 * wrapped MCP server an agent may call), the audit summary of a call's
 * arguments, and the filter of a tools/list answer. No I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

typedef enum moat_tool_decision {
	MOAT_TOOL_DENY = 0,
	MOAT_TOOL_ALLOW,
	MOAT_TOOL_APPROVE, /* needs a person's approval */
	_MOAT_TOOL_DECISION_MAX,
	_MOAT_TOOL_DECISION_INVALID = -1,
} moat_tool_decision;

const char *moat_tool_decision_to_string(moat_tool_decision d);

/* Caps on a tool policy. */
#define MOAT_TOOL_POLICY_MAX_BYTES (64u << 10)
#define MOAT_TOOL_POLICY_MAX_NAMES 1024
#define MOAT_TOOL_NAME_MAX 128

typedef struct moat_tool_policy {
	moat_tool_decision fallback; /* tools.default: allow or deny */
	char **deny, **approve, **allow; /* NULL-terminated */
} moat_tool_policy;

/*   tools:
 *     default: allow            # or deny; default: deny
 *     deny: [delete_file]
 *     approve: [write_file]
 *     allow: [read_file]
 * Parsed strictly: an unknown key, a wrong type, a duplicate key, a name in
 * two lists, anchors, aliases, tags or several documents are errors with
 * SOURCE:LINE:COL. */
int moat_tool_policy_parse(const char *buf, size_t len, const char *source, moat_tool_policy **ret, moat_error *err);
/* The policy of no file: every tool allowed. */
moat_tool_policy *moat_tool_policy_allow_all(void);
void moat_tool_policy_free(moat_tool_policy *p);
static inline void moat_tool_policy_freep(moat_tool_policy **p) { moat_tool_policy_free(*p); }

/* deny wins over approve, approve over allow, a listed name over default. */
moat_tool_decision moat_tool_policy_decide(const moat_tool_policy *p, const char *tool);

/* Strings longer than this are hashed in the audit summary of arguments. */
#define MOAT_MCP_AUDIT_VALUE_MAX 256

/* A copy of args for the audit log in which each string longer than
 * MOAT_MCP_AUDIT_VALUE_MAX is replaced by "sha256:HEX (N bytes)" and depth
 * past 8 by "...". A new reference, or NULL on allocation failure. */
json_t *moat_mcp_audit_args(const json_t *args);

/* Removes from a tools/list result the tools p denies; returns how many. */
size_t moat_tool_policy_filter_list(const moat_tool_policy *p, json_t *result);
