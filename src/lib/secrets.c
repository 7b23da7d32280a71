/* Placeholders: formatting and recognising them (secrets.h). */
#include "secrets.h"

#include "hostglob.h"
#include "netrules.h"
#include "policy.h"
#include "units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

size_t moat_placeholder_len(const char *name, size_t value_len)
{
	size_t min = strlen(MOAT_PLACEHOLDER_PREFIX) + strlen(name) + 1 + MOAT_PLACEHOLDER_MIN_RANDOM;
	size_t len = value_len > min ? value_len : min;
	return len > MOAT_PLACEHOLDER_MAX ? MOAT_PLACEHOLDER_MAX : len;
}

int moat_placeholder_format(const char *name, const uint8_t *rnd, size_t len, char *out, size_t out_size)
{
	static const char hex[] = "0123456789abcdef";
	size_t head = strlen(MOAT_PLACEHOLDER_PREFIX) + strlen(name) + 1;
	if (len < head + MOAT_PLACEHOLDER_MIN_RANDOM || len > MOAT_PLACEHOLDER_MAX || out_size < len + 1)
		return -EINVAL;
	size_t o = 0;
	memcpy(out, MOAT_PLACEHOLDER_PREFIX, strlen(MOAT_PLACEHOLDER_PREFIX));
	o += strlen(MOAT_PLACEHOLDER_PREFIX);
	/* Lower case and '_' only: some clients check a token's alphabet, and
	 * '-' would let a shell word or a URL split it. */
	for (const char *c = name; *c; c++)
		out[o++] = *c >= 'A' && *c <= 'Z' ? (char)(*c - 'A' + 'a') : *c == '-' ? '_' : *c;
	out[o++] = '_';
	for (size_t i = 0; o < len; i++)
		out[o++] = hex[rnd[i] & 0xf];
	out[o] = '\0';
	return 0;
}

bool moat_placeholder_seen(const char *buf, size_t len, size_t *ret_off)
{
	static const char *const forms[] = {MOAT_PLACEHOLDER_PREFIX, "moat%5fph%5f"};
	for (size_t i = 0; i < len; i++)
		for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
			size_t fl = strlen(forms[f]);
			if (len - i >= fl && strncasecmp(buf + i, forms[f], fl) == 0) {
				if (ret_off)
					*ret_off = i;
				return true;
			}
		}
	return false;
}

static bool strv_has_case(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (strcasecmp(*v, s) == 0)
			return true;
	return false;
}

/* The binding's paths: "/exact", or "/prefix/" and a star; matched against
 * the path normalised as the network rules do it (netrules.h), so that
 * "/repos/x/../../admin" is not under "/repos/". */
static bool path_bound(char *const *paths, const char *path)
{
	if (!paths)
		return true;
	if (!path)
		return false;
	char norm[4096];
	moat_error err = {0};
	if (moat_net_path_normalize(path, norm, sizeof(norm), &err) < 0)
		return false;
	for (char *const *p = paths; *p; p++) {
		size_t l = strlen(*p);
		if (l >= 2 && (*p)[l - 1] == '*' ? strncmp(norm, *p, l - 1) == 0 : strcmp(norm, *p) == 0)
			return true;
	}
	return false;
}

moat_secret_action moat_secret_decide(const moat_secret *s, const moat_secret_request *q, char *reason,
				      size_t reason_len)
{
	bool present = q->ph_in_headers || q->ph_elsewhere;
	reason[0] = '\0';
	if (s->honeytoken) {
		if (!present)
			return MOAT_SECRET_SKIP;
		snprintf(reason, reason_len, "the honeytoken %s was used in a request to %s", s->name, q->host);
		return MOAT_SECRET_MISUSE;
	}
	bool bound = false;
	for (char *const *h = s->hosts; h && *h && !bound; h++)
		bound = moat_host_glob_match(*h, q->host);
	if (q->ph_elsewhere) {
		snprintf(reason, reason_len,
			 "the placeholder of the secret %s is in the request's URL, host name or body to %s; it is only "
			 "replaced in headers to the hosts it is bound to",
			 s->name, q->host);
		return MOAT_SECRET_MISUSE;
	}
	if (!bound) {
		if (!q->ph_in_headers)
			return MOAT_SECRET_SKIP;
		snprintf(reason, reason_len, "the placeholder of the secret %s was sent to %s, which it is not bound to",
			 s->name, q->host);
		return MOAT_SECRET_MISUSE;
	}
	if (!q->tls) {
		if (!q->ph_in_headers)
			return MOAT_SECRET_SKIP;
		snprintf(reason, reason_len,
			 "the placeholder of the secret %s was sent to %s in plain HTTP; the value only goes over TLS",
			 s->name, q->host);
		return MOAT_SECRET_MISUSE;
	}
	if (!q->ph_in_headers && !s->header)
		return MOAT_SECRET_SKIP;
	bool method_ok = !s->methods || (q->method && strv_has_case(s->methods, q->method));
	bool path_ok = path_bound(s->paths, q->path);
	if (!method_ok || !path_ok) {
		/* A secret the gateway adds by itself is simply not added;
		 * a placeholder the client put in must not leave. */
		if (!q->ph_in_headers)
			return MOAT_SECRET_SKIP;
		snprintf(reason, reason_len, "the secret %s is not sent with %s %s on %s (its inject.%s)", s->name,
			 q->method ? q->method : "?", q->path ? q->path : "?", q->host, method_ok ? "paths" : "methods");
		return MOAT_SECRET_REFUSE;
	}
	if (s->expires_ms && q->age_ms >= s->expires_ms) {
		char d[32];
		moat_format_duration_ms(s->expires_ms, d, sizeof(d));
		snprintf(reason, reason_len, "the secret %s expired %s after the run started", s->name, d);
		return MOAT_SECRET_REFUSE;
	}
	if (s->max_uses && q->uses >= s->max_uses) {
		snprintf(reason, reason_len, "the secret %s was used its %llu times (max_uses)", s->name,
			 (unsigned long long)s->max_uses);
		return MOAT_SECRET_REFUSE;
	}
	snprintf(reason, reason_len, "the secret %s was added for %s", s->name, q->host);
	return MOAT_SECRET_INJECT;
}

int moat_secret_replace(const char *value, const char *from, const char *to, char **ret)
{
	*ret = NULL;
	size_t fl = strlen(from), tl = strlen(to);
	int n = 0;
	if (fl == 0)
		return 0;
	for (const char *p = strstr(value, from); p; p = strstr(p + fl, from))
		n++;
	if (n == 0)
		return 0;
	size_t len = strlen(value) - (size_t)n * fl + (size_t)n * tl;
	char *out = malloc(len + 1), *o = out;
	if (!out)
		return -ENOMEM;
	const char *p = value;
	for (const char *q = strstr(p, from); q; q = strstr(p, from)) {
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, to, tl);
		o += tl;
		p = q + fl;
	}
	strcpy(o, p);
	*ret = out;
	return n;
}

char *moat_secret_format(const char *format, const char *value)
{
	char *out = NULL;
	int r = moat_secret_replace(format ? format : "{value}", "{value}", value, &out);
	return r > 0 ? out : NULL;
}

long moat_secret_unecho(char *const *values, char *const *masks, size_t n, const char *buf, size_t len, bool final,
			char **ret, size_t *ret_len)
{
	size_t hold = 0;
	if (!final)
		for (size_t k = 0; k < n; k++) {
			size_t vl = strlen(values[k]);
			size_t max = vl - 1 < len ? vl - 1 : len;
			for (size_t l = max; l > hold; l--)
				if (memcmp(buf + len - l, values[k], l) == 0) {
					hold = l;
					break;
				}
		}
	size_t use = len - hold;
	char *out = malloc(use ? use : 1);
	if (!out)
		return -ENOMEM;
	memcpy(out, buf, use);
	for (size_t k = 0; k < n; k++) {
		size_t vl = strlen(values[k]);
		for (size_t i = 0; vl && i + vl <= use;) {
			if (memcmp(out + i, values[k], vl) == 0) {
				memcpy(out + i, masks[k], vl);
				i += vl;
			} else {
				i++;
			}
		}
	}
	*ret = out;
	*ret_len = use;
	return (long)use;
}

static char *b64(const unsigned char *in, size_t n, bool url)
{
	static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *t = url ? safe : std;
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
		*o++ = t[v >> 18 & 63];
		*o++ = t[v >> 12 & 63];
		if (i + 1 < n)
			*o++ = t[v >> 6 & 63];
		else if (!url)
			*o++ = '=';
		if (i + 2 < n)
			*o++ = t[v & 63];
		else if (!url)
			*o++ = '=';
	}
	*o = '\0';
	return out;
}

static char *pct(const char *in)
{
	char *out = malloc(strlen(in) * 3 + 1), *o = out;
	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-._~", *p))
			*o++ = (char)*p;
		else
			o += sprintf(o, "%%%02X", *p);
	}
	*o = '\0';
	return out;
}

int moat_secret_forms(const char *value, char *ret[MOAT_SECRET_FORMS])
{
	char *f[MOAT_SECRET_FORMS] = {b64((const unsigned char *)value, strlen(value), false),
				      b64((const unsigned char *)value, strlen(value), true), pct(value)};
	int n = 0;
	for (int i = 0; i < MOAT_SECRET_FORMS; i++) {
		if (!f[i]) {
			for (int j = 0; j < MOAT_SECRET_FORMS; j++)
				free(f[j]);
			for (int j = 0; j < n; j++)
				free(ret[j]);
			return -ENOMEM;
		}
	}
	for (int i = 0; i < MOAT_SECRET_FORMS; i++) {
		bool dup = strcmp(f[i], value) == 0;
		for (int j = 0; j < n && !dup; j++)
			dup = strcmp(ret[j], f[i]) == 0;
		if (dup)
			free(f[i]);
		else
			ret[n++] = f[i];
	}
	return n;
}
