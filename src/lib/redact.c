#include "redact.h"

#include <string.h>

typedef struct secret {
	char *name;
	char *value;
	size_t len;
} secret;

struct moat_redactor {
	secret *v; /* longest value first, so that overlaps pick the longer */
	size_t n;
};

moat_redactor *moat_redactor_new(void)
{
	return calloc(1, sizeof(moat_redactor));
}

void moat_redactor_free(moat_redactor *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].name);
		free(r->v[i].value);
	}
	free(r->v);
	free(r);
}

size_t moat_redactor_count(const moat_redactor *r)
{
	return r ? r->n : 0;
}

static bool name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > MOAT_REDACT_MAX_NAME)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '.' || *p == '-'))
			return false;
	return true;
}

int moat_redactor_add(moat_redactor *r, const char *name, const char *value, moat_error *err)
{
	if (!name_ok(name))
		return moat_error_set(err, MOAT_EINPUT, "secret name '%s': use letters, digits, '_', '.' or '-'", name);
	size_t len = strlen(value);
	if (len == 0)
		return moat_error_set(err, MOAT_EINPUT, "secret %s: empty value cannot be redacted", name);
	if (len > MOAT_REDACT_MAX_VALUE)
		return moat_error_set(err, MOAT_EINPUT, "secret %s: value longer than %d bytes", name,
				      MOAT_REDACT_MAX_VALUE);
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].len == len && memcmp(r->v[i].value, value, len) == 0)
			return 0;
	if (r->n >= MOAT_REDACT_MAX_SECRETS)
		return moat_error_set(err, MOAT_EINPUT, "more than %d secrets", MOAT_REDACT_MAX_SECRETS);
	secret *nv = realloc(r->v, (r->n + 1) * sizeof(secret));
	if (!nv)
		return moat_error_set(err, ENOMEM, "secret %s", name);
	r->v = nv;
	secret s = {.name = strdup(name), .value = strdup(value), .len = len};
	if (!s.name || !s.value) {
		free(s.name);
		free(s.value);
		return moat_error_set(err, ENOMEM, "secret %s", name);
	}
	/* Keep the list sorted by length, longest first. */
	size_t at = 0;
	while (at < r->n && r->v[at].len >= len)
		at++;
	memmove(r->v + at + 1, r->v + at, (r->n - at) * sizeof(secret));
	r->v[at] = s;
	r->n++;
	return 0;
}

/* The secret starting at buf[i], or NULL. */
static const secret *match_at(const moat_redactor *r, const char *buf, size_t len, size_t i)
{
	for (size_t k = 0; k < r->n; k++) {
		const secret *s = &r->v[k];
		if (s->len <= len - i && buf[i] == s->value[0] && memcmp(buf + i, s->value, s->len) == 0)
			return s;
	}
	return NULL;
}

moat_redact_verdict moat_redact_decide(const moat_redactor *r, const char *buf, size_t len, size_t i, bool final,
				       size_t *ret_len, const char **ret_name)
{
	size_t left = len - i;
	/* Longest first: the first full match is the one moat_redact takes,
	 * unless a longer value is still possible. */
	for (size_t k = 0; r && k < r->n; k++) {
		const secret *s = &r->v[k];
		if (buf[i] != s->value[0])
			continue;
		if (s->len <= left) {
			if (memcmp(buf + i, s->value, s->len) == 0) {
				*ret_len = s->len;
				*ret_name = s->name;
				return MOAT_REDACT_MATCH;
			}
		} else if (!final && memcmp(buf + i, s->value, left) == 0) {
			return MOAT_REDACT_MORE;
		}
	}
	return MOAT_REDACT_NONE;
}

int moat_redact(const moat_redactor *r, const char *buf, size_t len, char **ret, size_t *ret_len)
{
	/* Two passes: count the output size, then fill it. */
	size_t out = 0;
	int hits = 0;
	for (size_t i = 0; i < len;) {
		const secret *s = r ? match_at(r, buf, len, i) : NULL;
		if (s) {
			out += strlen("[REDACTED:]") + strlen(s->name);
			i += s->len;
			hits++;
		} else {
			out++;
			i++;
		}
	}
	char *o = malloc(out + 1);
	if (!o)
		return -ENOMEM;
	size_t w = 0;
	for (size_t i = 0; i < len;) {
		const secret *s = hits ? match_at(r, buf, len, i) : NULL;
		if (s) {
			w += (size_t)sprintf(o + w, "[REDACTED:%s]", s->name);
			i += s->len;
		} else {
			o[w++] = buf[i++];
		}
	}
	o[w] = '\0';
	*ret = o;
	if (ret_len)
		*ret_len = w;
	return hits;
}

size_t moat_redact_holdback(const moat_redactor *r, const char *buf, size_t len)
{
	size_t best = 0;
	if (!r)
		return 0;
	for (size_t k = 0; k < r->n; k++) {
		const secret *s = &r->v[k];
		size_t max = s->len - 1 < len ? s->len - 1 : len;
		for (size_t l = max; l > best; l--)
			if (memcmp(buf + len - l, s->value, l) == 0) {
				best = l;
				break;
			}
	}
	return best;
}

/* Redacts one string value in place; returns hits or -ENOMEM. */
static int redact_string(const moat_redactor *r, json_t *str)
{
	_cleanup_free_ char *o = NULL;
	size_t olen = 0;
	int hits = moat_redact(r, json_string_value(str), json_string_length(str), &o, &olen);
	if (hits > 0 && json_string_setn_nocheck(str, o, olen) < 0)
		return -ENOMEM;
	return hits;
}

int moat_redact_json(const moat_redactor *r, json_t *j)
{
	int total = 0, rc;
	if (!r || r->n == 0 || !j)
		return 0;
	switch (json_typeof(j)) {
	case JSON_STRING:
		return redact_string(r, j);
	case JSON_ARRAY: {
		size_t i;
		json_t *v;
		json_array_foreach(j, i, v)
		{
			if ((rc = moat_redact_json(r, v)) < 0)
				return rc;
			total += rc;
		}
		return total;
	}
	case JSON_OBJECT: {
		/* Keys are redacted too (a header map could be keyed by a token).
		 * Renames are applied after the walk so that a renamed key is not
		 * visited again. */
		const char *key;
		json_t *v;
		_cleanup_strv_free_ char **renames = NULL;
		json_object_foreach(j, key, v)
		{
			if ((rc = moat_redact_json(r, v)) < 0)
				return rc;
			total += rc;
			_cleanup_free_ char *nk = NULL;
			rc = moat_redact(r, key, strlen(key), &nk, NULL);
			if (rc < 0)
				return rc;
			if (rc > 0 && moat__strv_push(&renames, key) < 0)
				return -ENOMEM;
		}
		for (char **k = renames; k && *k; k++) {
			_cleanup_free_ char *nk = NULL;
			rc = moat_redact(r, *k, strlen(*k), &nk, NULL);
			if (rc < 0)
				return rc;
			v = json_incref(json_object_get(j, *k));
			json_object_del(j, *k);
			if (json_object_set_new(j, nk, v) < 0)
				return -ENOMEM;
			total += rc;
		}
		return total;
	}
	default:
		return 0;
	}
}
