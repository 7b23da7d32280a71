/* A streaming redactor (redactstream.h). */
#include "redactstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct outbuf {
	char *p;
	size_t len, cap;
} outbuf;

static int put(outbuf *o, const char *b, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		while (cap < o->len + n + 1)
			cap *= 2;
		char *np = realloc(o->p, cap);
		if (!np)
			return -ENOMEM;
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->len, b, n);
	o->len += n;
	o->p[o->len] = '\0';
	return 0;
}

/* Redacts buf[0..len); the undecided tail (from the first MORE) is left in
 * *ret_keep as an offset. */
static int scan(const moat_redactor *red, const char *buf, size_t len, bool final, outbuf *o, size_t *ret_keep)
{
	int hits = 0;
	size_t i = 0, plain = 0; /* buf[plain..i) is waiting to be copied */
	while (i < len) {
		size_t vlen = 0;
		const char *name = NULL;
		moat_redact_verdict v = moat_redact_decide(red, buf, len, i, final, &vlen, &name);
		if (v == MOAT_REDACT_MORE)
			break;
		if (v == MOAT_REDACT_NONE) {
			i++;
			continue;
		}
		char marker[MOAT_REDACT_MAX_NAME + 16];
		int m = snprintf(marker, sizeof(marker), "[REDACTED:%s]", name);
		if (put(o, buf + plain, i - plain) < 0 || put(o, marker, (size_t)m) < 0)
			return -ENOMEM;
		hits++;
		i += vlen;
		plain = i;
	}
	if (put(o, buf + plain, i - plain) < 0)
		return -ENOMEM;
	*ret_keep = i;
	return hits;
}

static int run(moat_redact_stream *st, const char *buf, size_t len, bool final, char **ret, size_t *ret_len)
{
	/* The held tail and the new chunk, joined. */
	size_t total = st->held_len + len;
	char *all = malloc(total + 1);
	if (!all)
		return -ENOMEM;
	if (st->held_len)
		memcpy(all, st->held, st->held_len);
	if (len)
		memcpy(all + st->held_len, buf, len);
	outbuf o = {0};
	size_t keep = 0;
	int hits = put(&o, "", 0) < 0 ? -ENOMEM : scan(st->red, all, total, final, &o, &keep);
	if (hits < 0) {
		free(all);
		free(o.p);
		return -ENOMEM;
	}
	/* Hold what is undecided: a proper prefix of a value, so shorter than
	 * the longest one. */
	char *held = NULL;
	if (keep < total) {
		held = malloc(total - keep);
		if (!held) {
			free(all);
			free(o.p);
			return -ENOMEM;
		}
		memcpy(held, all + keep, total - keep);
	}
	free(all);
	free(st->held);
	st->held = held;
	st->held_len = total - keep;
	*ret = o.p;
	*ret_len = o.len;
	return hits;
}

int moat_redact_stream_feed(moat_redact_stream *st, const char *buf, size_t len, char **ret, size_t *ret_len)
{
	return run(st, buf, len, false, ret, ret_len);
}

int moat_redact_stream_flush(moat_redact_stream *st, char **ret, size_t *ret_len)
{
	return run(st, NULL, 0, true, ret, ret_len);
}

void moat_redact_stream_done(moat_redact_stream *st)
{
	free(st->held);
	st->held = NULL;
	st->held_len = 0;
}
