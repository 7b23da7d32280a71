/* JSON-RPC 2.0 framing, decoding and ids (jsonrpc.h). Pure. */
#include "jsonrpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void moat_jsonrpc_msg_clear(moat_jsonrpc_msg *m)
{
	if (!m)
		return;
	json_decref(m->msg);
	*m = (moat_jsonrpc_msg){0};
}

static bool id_valid(const json_t *id)
{
	if (json_is_integer(id))
		return true;
	if (json_is_string(id))
		return json_string_length(id) <= MOAT_JSONRPC_MAX_ID;
	return false;
}

int moat_jsonrpc_decode(const char *buf, size_t len, moat_jsonrpc_msg *ret, json_t **ret_id, const char **ret_error)
{
	*ret_id = NULL;
	*ret_error = NULL;
	if (len > MOAT_JSONRPC_MAX_MESSAGE) {
		*ret_error = "message too large";
		return MOAT_JSONRPC_INVALID_REQUEST;
	}
	/* jansson refuses invalid UTF-8 and, without JSON_ALLOW_NUL, a NUL in
	 * a string; a duplicate key is refused because "id" or "method" twice
	 * can be read two ways. */
	json_error_t jerr;
	json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!doc) {
		*ret_error = json_error_code(&jerr) == json_error_invalid_utf8 ? "invalid UTF-8" : "parse error";
		return MOAT_JSONRPC_PARSE_ERROR;
	}
	if (json_is_array(doc)) {
		json_decref(doc);
		*ret_error = "batches are not supported (removed in MCP 2025-06-18)";
		return MOAT_JSONRPC_INVALID_REQUEST;
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		*ret_error = "a message must be a JSON object";
		return MOAT_JSONRPC_INVALID_REQUEST;
	}
	json_t *id = json_object_get(doc, "id");
	if (id && id_valid(id))
		*ret_id = json_incref(id);
	const char *error = NULL;
	json_t *v = json_object_get(doc, "jsonrpc");
	json_t *method = json_object_get(doc, "method");
	json_t *params = json_object_get(doc, "params");
	json_t *result = json_object_get(doc, "result");
	json_t *errobj = json_object_get(doc, "error");
	moat_jsonrpc_kind kind = _MOAT_JSONRPC_KIND_INVALID;
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		error = "\"jsonrpc\" must be \"2.0\"";
	else if (id && !id_valid(id))
		error = "\"id\" must be a string (at most 256 bytes) or an integer";
	else if (method) {
		if (!json_is_string(method) || json_string_length(method) == 0)
			error = "\"method\" must be a non-empty string";
		else if (params && !json_is_object(params))
			error = "\"params\" must be an object";
		else if (result || errobj)
			error = "a request has no \"result\" or \"error\"";
		else
			kind = id ? MOAT_JSONRPC_REQUEST : MOAT_JSONRPC_NOTIFICATION;
	} else if (result || errobj) {
		if (!id)
			error = "a response needs an \"id\"";
		else if (result && errobj)
			error = "a response has \"result\" or \"error\", not both";
		else if (errobj && (!json_is_object(errobj) || !json_is_integer(json_object_get(errobj, "code"))))
			error = "\"error\" must be an object with an integer \"code\"";
		else
			kind = MOAT_JSONRPC_RESPONSE;
	} else
		error = "neither a request, a notification nor a response";
	if (error) {
		json_decref(doc);
		*ret_error = error;
		return MOAT_JSONRPC_INVALID_REQUEST;
	}
	*ret = (moat_jsonrpc_msg){
		.kind = kind,
		.msg = doc,
		.id = id,
		.method = method ? json_string_value(method) : NULL,
		.params = params,
	};
	return 0;
}

json_t *moat_jsonrpc_salvage_id(const char *buf, size_t len)
{
	const char *end = buf + len;
	for (const char *p = buf; p && p + 4 <= end; p++) {
		p = memmem(p, (size_t)(end - p), "\"id\"", 4);
		if (!p)
			return NULL;
		const char *q = p + 4;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q >= end || *q++ != ':')
			continue;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q < end && *q == '"') {
			const char *s = ++q;
			while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80 &&
			       q - s <= MOAT_JSONRPC_MAX_ID)
				q++;
			if (q < end && *q == '"' && q - s <= MOAT_JSONRPC_MAX_ID)
				return json_stringn(s, (size_t)(q - s));
			continue;
		}
		/* By hand, not strtoll: buf is not NUL-terminated (a line of
		 * the framer), and strtoll would read past its end. */
		bool neg = q < end && *q == '-';
		if (neg)
			q++;
		const char *digits = q;
		json_int_t v = 0;
		while (q < end && *q >= '0' && *q <= '9' && q - digits < 18)
			v = v * 10 + (*q++ - '0');
		if (q > digits && (q >= end || *q == ',' || *q == '}' || *q == ' '))
			return json_integer(neg ? -v : v);
	}
	return NULL;
}

json_t *moat_jsonrpc_error(json_t *id, int code, const char *message, json_t *data)
{
	json_t *e = json_pack("{s:i,s:s}", "code", code, "message", message ? message : "error");
	if (!e) {
		json_decref(data);
		return NULL;
	}
	if (data)
		json_object_set_new(e, "data", data);
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", e);
}

json_t *moat_jsonrpc_result(json_t *id, json_t *result)
{
	if (!result)
		return NULL;
	return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result", result);
}

json_t *moat_jsonrpc_notification(const char *method, json_t *params)
{
	if (params)
		return json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", method, "params", params);
	return json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
}

char *moat_jsonrpc_encode_line(const json_t *msg, size_t *ret_len)
{
	/* Compact, and with every character outside ASCII escaped so that
	 * the line holds no byte a peer's line splitting could misread. */
	char *s = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *line = realloc(s, n + 2);
	if (!line) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	*ret_len = n + 1;
	return line;
}

void moat_jsonrpc_framer_init(moat_jsonrpc_framer *f, size_t max)
{
	*f = (moat_jsonrpc_framer){.max = max ? max : MOAT_JSONRPC_MAX_MESSAGE};
}

void moat_jsonrpc_framer_free(moat_jsonrpc_framer *f)
{
	free(f->buf);
	*f = (moat_jsonrpc_framer){0};
}

static int emit(const char *line, size_t len, moat_jsonrpc_line_fn fn, void *userdata)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	return fn(userdata, line, len);
}

int moat_jsonrpc_framer_feed(moat_jsonrpc_framer *f, const char *data, size_t n, moat_jsonrpc_line_fn fn,
			     void *userdata)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		int r;
		if (f->discarding) {
			f->discarded += take;
			if (nl) {
				/* The end of an oversized line: reported when it
				 * passed max already; forget it. */
				f->discarding = false;
				f->discarded = 0;
			}
		} else if (f->len + take > f->max) {
			/* Over the cap: drop what is held and the rest of the
			 * line, and say so once. */
			uint64_t total = f->len + take;
			f->len = 0;
			if (!nl) {
				f->discarding = true;
				f->discarded = total;
			}
			if ((r = fn(userdata, NULL, (size_t)total)) < 0)
				return r;
		} else if (nl && f->len == 0) {
			/* A whole line in data: no copy. */
			if ((r = emit(data, take, fn, userdata)) < 0)
				return r;
		} else {
			if (f->len + take > f->cap) {
				size_t cap = f->cap ? f->cap : 4096;
				while (cap < f->len + take)
					cap *= 2;
				if (cap > f->max)
					cap = f->max;
				char *b = realloc(f->buf, cap);
				if (!b)
					return -ENOMEM;
				f->buf = b;
				f->cap = cap;
			}
			memcpy(f->buf + f->len, data, take);
			f->len += take;
			if (nl) {
				size_t len = f->len;
				f->len = 0;
				if ((r = emit(f->buf, len, fn, userdata)) < 0)
					return r;
			}
		}
		if (!nl)
			break;
		data = nl + 1;
		n -= take + 1;
	}
	return 0;
}

bool moat_jsonrpc_id_equal(const json_t *a, const json_t *b)
{
	if (!a || !b)
		return false;
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_string(a) && json_is_string(b))
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
	return false;
}

void moat_jsonrpc_ids_init(moat_jsonrpc_ids *t)
{
	memset(t, 0, sizeof(*t));
}

void moat_jsonrpc_ids_free(moat_jsonrpc_ids *t)
{
	for (size_t i = 0; i < t->n_inflight; i++)
		json_decref(t->inflight[i]);
	for (size_t i = 0; i < MOAT_JSONRPC_RECENT_IDS; i++)
		json_decref(t->recent[i]);
	memset(t, 0, sizeof(*t));
}

bool moat_jsonrpc_ids_inflight(const moat_jsonrpc_ids *t, const json_t *id)
{
	for (size_t i = 0; i < t->n_inflight; i++)
		if (moat_jsonrpc_id_equal(t->inflight[i], id))
			return true;
	return false;
}

int moat_jsonrpc_ids_begin(moat_jsonrpc_ids *t, json_t *id)
{
	if (moat_jsonrpc_ids_inflight(t, id))
		return -EEXIST;
	for (size_t i = 0; i < MOAT_JSONRPC_RECENT_IDS; i++)
		if (moat_jsonrpc_id_equal(t->recent[i], id))
			return -EEXIST;
	if (t->n_inflight >= MOAT_JSONRPC_MAX_INFLIGHT)
		return -EAGAIN;
	t->inflight[t->n_inflight++] = json_incref(id);
	return 0;
}

int moat_jsonrpc_ids_end(moat_jsonrpc_ids *t, const json_t *id)
{
	for (size_t i = 0; i < t->n_inflight; i++) {
		if (!moat_jsonrpc_id_equal(t->inflight[i], id))
			continue;
		json_t *done = t->inflight[i];
		t->inflight[i] = t->inflight[--t->n_inflight];
		t->inflight[t->n_inflight] = NULL;
		json_decref(t->recent[t->recent_next]);
		t->recent[t->recent_next] = done;
		t->recent_next = (t->recent_next + 1) % MOAT_JSONRPC_RECENT_IDS;
		return 0;
	}
	return -ENOENT;
}
