/* moat mcp wrap's pure parts (mcpwrap.h). */
#include "mcpwrap.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "audit.h"
#include "util.h"

const char *moat_tool_decision_to_string(moat_tool_decision d)
{
	static const char *const names[_MOAT_TOOL_DECISION_MAX] = {
		[MOAT_TOOL_DENY] = "deny", [MOAT_TOOL_ALLOW] = "allow", [MOAT_TOOL_APPROVE] = "approve"};
	return d >= 0 && d < _MOAT_TOOL_DECISION_MAX ? names[d] : "invalid";
}

void moat_tool_policy_free(moat_tool_policy *p)
{
	if (!p)
		return;
	moat__strv_free(p->deny);
	moat__strv_free(p->approve);
	moat__strv_free(p->allow);
	free(p);
}

moat_tool_policy *moat_tool_policy_allow_all(void)
{
	moat_tool_policy *p = calloc(1, sizeof(*p));
	if (p)
		p->fallback = MOAT_TOOL_ALLOW;
	return p;
}

static bool listed(char *const *v, const char *name)
{
	for (size_t i = 0; v && v[i]; i++)
		if (strcmp(v[i], name) == 0)
			return true;
	return false;
}

moat_tool_decision moat_tool_policy_decide(const moat_tool_policy *p, const char *tool)
{
	if (listed(p->deny, tool))
		return MOAT_TOOL_DENY;
	if (listed(p->approve, tool))
		return MOAT_TOOL_APPROVE;
	if (listed(p->allow, tool))
		return MOAT_TOOL_ALLOW;
	return p->fallback;
}

/* Reads the tool policy with libyaml's events: the shape is small and fixed,
 * so a state machine over the events says exactly where input is wrong. */
typedef struct tp_ctx {
	yaml_parser_t parser;
	const char *source;
	moat_error *err;
} tp_ctx;

_printf_(3, 4) static int tp_fail(tp_ctx *x, const yaml_event_t *e, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return moat_error_set(x->err, EINVAL, "%s:%zu:%zu: %s", x->source, e ? e->start_mark.line + 1 : 0,
			      e ? e->start_mark.column + 1 : 0, msg);
}

/* The next event; fails on a syntax error, an alias, an anchor or a tag. */
static int tp_next(tp_ctx *x, yaml_event_t *e)
{
	if (!yaml_parser_parse(&x->parser, e))
		return moat_error_set(x->err, EINVAL, "%s:%zu:%zu: not valid YAML: %s", x->source,
				      x->parser.problem_mark.line + 1, x->parser.problem_mark.column + 1,
				      x->parser.problem ? x->parser.problem : "syntax error");
	const char *why = NULL;
	if (e->type == YAML_ALIAS_EVENT)
		why = "aliases are not allowed (a value read in two places)";
	else if ((e->type == YAML_SCALAR_EVENT && (e->data.scalar.anchor || (e->data.scalar.tag && !e->data.scalar.plain_implicit && !e->data.scalar.quoted_implicit))) ||
		 (e->type == YAML_SEQUENCE_START_EVENT && (e->data.sequence_start.anchor || e->data.sequence_start.tag)) ||
		 (e->type == YAML_MAPPING_START_EVENT && (e->data.mapping_start.anchor || e->data.mapping_start.tag)))
		why = "anchors and tags are not allowed";
	if (why) {
		int r = tp_fail(x, e, "%s", why);
		yaml_event_delete(e);
		return r;
	}
	return 0;
}

static int tp_expect(tp_ctx *x, yaml_event_type_t t, const char *what)
{
	yaml_event_t e;
	int r = tp_next(x, &e);
	if (r < 0)
		return r;
	if (e.type != t)
		r = tp_fail(x, &e, "expected %s", what);
	yaml_event_delete(&e);
	return r;
}

static int tp_list(tp_ctx *x, const char *key, char ***ret)
{
	yaml_event_t e;
	int r;
	char path[64];
	snprintf(path, sizeof(path), "tools.%s", key);
	if ((r = tp_next(x, &e)) < 0)
		return r;
	bool seq = e.type == YAML_SEQUENCE_START_EVENT;
	if (!seq)
		r = tp_fail(x, &e, "%s: expected a list of tool names", path);
	yaml_event_delete(&e);
	if (r < 0)
		return r;
	size_t n = 0;
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
	if (!v)
		return moat_error_set(x->err, ENOMEM, "%s", path);
	for (;;) {
		if ((r = tp_next(x, &e)) < 0)
			return r;
		if (e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			break;
		}
		const char *s = (const char *)e.data.scalar.value;
		if (e.type != YAML_SCALAR_EVENT)
			r = tp_fail(x, &e, "%s: expected a tool name", path);
		else if (e.data.scalar.length == 0 || e.data.scalar.length > MOAT_TOOL_NAME_MAX ||
			 strlen(s) != e.data.scalar.length)
			r = tp_fail(x, &e, "%s: a tool name is 1 to 128 characters", path);
		else if (n >= MOAT_TOOL_POLICY_MAX_NAMES)
			r = tp_fail(x, &e, "%s: too many names (at most 1024)", path);
		else if (listed(v, s))
			r = tp_fail(x, &e, "'%s' is listed twice", s);
		if (r < 0) {
			yaml_event_delete(&e);
			return r;
		}
		char **nv = realloc(v, (n + 2) * sizeof(char *));
		if (!nv || !(nv[n] = strdup(s))) {
			if (nv)
				v = nv;
			yaml_event_delete(&e);
			return moat_error_set(x->err, ENOMEM, "%s", path);
		}
		v = nv;
		v[++n] = NULL;
		yaml_event_delete(&e);
	}
	*ret = TAKE_PTR(v);
	return 0;
}

int moat_tool_policy_parse(const char *buf, size_t len, const char *source, moat_tool_policy **ret, moat_error *err)
{
	if (len > MOAT_TOOL_POLICY_MAX_BYTES)
		return moat_error_set(err, EFBIG, "%s: larger than %u bytes", source, MOAT_TOOL_POLICY_MAX_BYTES);
	tp_ctx x = {.source = source, .err = err};
	if (!yaml_parser_initialize(&x.parser))
		return moat_error_set(err, ENOMEM, "yaml parser");
	yaml_parser_set_input_string(&x.parser, (const unsigned char *)buf, len);
	_cleanup_(moat_tool_policy_freep) moat_tool_policy *p = calloc(1, sizeof(*p));
	int r = p ? 0 : moat_error_set(err, ENOMEM, "%s", source);
	bool seen_tools = false, seen_default = false;
	yaml_event_t e;
	if (r == 0)
		r = tp_expect(&x, YAML_STREAM_START_EVENT, "a YAML stream");
	if (r == 0)
		r = tp_expect(&x, YAML_DOCUMENT_START_EVENT, "a document");
	if (r == 0)
		r = tp_expect(&x, YAML_MAPPING_START_EVENT, "a mapping with the key tools");
	while (r == 0) {
		if ((r = tp_next(&x, &e)) < 0)
			break;
		if (e.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&e);
			break;
		}
		if (e.type != YAML_SCALAR_EVENT || strcmp((const char *)e.data.scalar.value, "tools") != 0 || seen_tools) {
			r = tp_fail(&x, &e, "%s", seen_tools ? "tools: given twice" : "expected the key tools (the only one)");
			yaml_event_delete(&e);
			break;
		}
		yaml_event_delete(&e);
		seen_tools = true;
		if ((r = tp_expect(&x, YAML_MAPPING_START_EVENT, "tools: a mapping (default, deny, approve, allow)")) < 0)
			break;
		while (r == 0) {
			if ((r = tp_next(&x, &e)) < 0)
				break;
			if (e.type == YAML_MAPPING_END_EVENT) {
				yaml_event_delete(&e);
				break;
			}
			char key[32] = "";
			if (e.type == YAML_SCALAR_EVENT)
				snprintf(key, sizeof(key), "%s", (const char *)e.data.scalar.value);
			char ***list = strcmp(key, "deny") == 0      ? &p->deny
				       : strcmp(key, "approve") == 0 ? &p->approve
				       : strcmp(key, "allow") == 0   ? &p->allow
								     : NULL;
			if (list && *list)
				r = tp_fail(&x, &e, "tools.%s: given twice", key);
			else if (!list && strcmp(key, "default") != 0)
				r = tp_fail(&x, &e, "tools: unknown key '%s' (expected default, deny, approve or allow)", key);
			else if (!list && seen_default)
				r = tp_fail(&x, &e, "tools.default: given twice");
			yaml_event_delete(&e);
			if (r < 0)
				break;
			if (list) {
				r = tp_list(&x, key, list);
				continue;
			}
			seen_default = true;
			if ((r = tp_next(&x, &e)) < 0)
				break;
			const char *v = e.type == YAML_SCALAR_EVENT ? (const char *)e.data.scalar.value : "";
			if (strcmp(v, "allow") == 0)
				p->fallback = MOAT_TOOL_ALLOW;
			else if (strcmp(v, "deny") == 0)
				p->fallback = MOAT_TOOL_DENY;
			else
				r = tp_fail(&x, &e, "tools.default: expected allow or deny");
			yaml_event_delete(&e);
		}
	}
	if (r == 0)
		r = tp_expect(&x, YAML_DOCUMENT_END_EVENT, "the end of the document");
	if (r == 0) {
		if ((r = tp_next(&x, &e)) == 0) {
			if (e.type != YAML_STREAM_END_EVENT)
				r = tp_fail(&x, &e, "a second document (expected one)");
			yaml_event_delete(&e);
		}
	}
	yaml_parser_delete(&x.parser);
	if (r < 0)
		return r;
	if (!seen_tools)
		return moat_error_set(err, EINVAL, "%s: no tools key", source);
	/* A name in two lists could be read two ways. */
	char **lists[] = {p->deny, p->approve, p->allow};
	for (int i = 0; i < 3; i++)
		for (size_t k = 0; lists[i] && lists[i][k]; k++)
			for (int j = i + 1; j < 3; j++)
				if (listed(lists[j], lists[i][k]))
					return moat_error_set(err, EINVAL, "%s: tool '%s' is in two of deny, approve and allow",
							      source, lists[i][k]);
	*ret = TAKE_PTR(p);
	return 0;
}

static json_t *summarize(const json_t *v, int depth)
{
	if (depth > 8)
		return json_string("...");
	if (json_is_string(v) && json_string_length(v) > MOAT_MCP_AUDIT_VALUE_MAX) {
		char hex[MOAT_AUDIT_HASH_HEX];
		moat_audit_hash(json_string_value(v), json_string_length(v), hex);
		char s[MOAT_AUDIT_HASH_HEX + 64];
		snprintf(s, sizeof(s), "sha256:%s (%zu bytes)", hex, json_string_length(v));
		return json_string(s);
	}
	if (json_is_object(v)) {
		json_t *o = json_object();
		const char *k;
		json_t *x;
		json_object_foreach((json_t *)v, k, x) json_object_set_new(o, k, summarize(x, depth + 1));
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_array();
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) json_array_append_new(a, summarize(x, depth + 1));
		return a;
	}
	return json_deep_copy(v);
}

json_t *moat_mcp_audit_args(const json_t *args)
{
	return args ? summarize(args, 0) : json_object();
}

size_t moat_tool_policy_filter_list(const moat_tool_policy *p, json_t *result)
{
	json_t *tools = json_object_get(result, "tools");
	size_t removed = 0;
	for (size_t i = json_array_size(tools); i-- > 0;) {
		const char *name = json_string_value(json_object_get(json_array_get(tools, i), "name"));
		if (!name || moat_tool_policy_decide(p, name) == MOAT_TOOL_DENY) {
			json_array_remove(tools, i);
			removed++;
		}
	}
	return removed;
}
