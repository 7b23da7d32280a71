#include "record.h"
#include "hostpath.h"
#include "redactstream.h"

#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

/* A stream is redacted first (redactstream.h holds back an undecided
 * secret), then cut at a character boundary: what is held here is at most
 * an incomplete UTF-8 character. */
#define HOLD_MAX 4

typedef struct held {
	moat_redact_stream red;
	char buf[HOLD_MAX];
	size_t len;
} held;

struct moat_record {
	int fd;
	char *path;
	uint64_t start_ns;
	const moat_redactor *red;
	held out, in;
	bool broken;
};

/* Length of the UTF-8 sequence a lead byte starts, 0 for a byte that cannot
 * start one. */
static size_t utf8_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/* Length of a valid sequence at s (at most n bytes), 0 if invalid, or
 * SIZE_MAX when the bytes are a valid but incomplete beginning. */
static size_t utf8_valid(const unsigned char *s, size_t n)
{
	size_t l = utf8_len(s[0]);
	if (l == 0)
		return 0;
	for (size_t i = 1; i < l; i++) {
		if (i >= n)
			return SIZE_MAX;
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		/* Overlongs, surrogates and values past U+10FFFF. */
		if (i == 1 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
			       (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f)))
			return 0;
	}
	return l;
}

size_t moat_record_cut(const moat_redactor *red, const char *buf, size_t len)
{
	size_t cut = len - moat_redact_holdback(red, buf, len);
	/* An incomplete character at the end starts at most 3 bytes back. */
	for (size_t back = 1; back <= 3 && back <= cut; back++) {
		const unsigned char *s = (const unsigned char *)buf + cut - back;
		if ((*s & 0xc0) == 0x80)
			continue; /* continuation byte: look further back */
		if (utf8_valid(s, back) == SIZE_MAX)
			cut -= back;
		break;
	}
	return cut;
}

int moat_utf8_sanitize(const char *buf, size_t len, char **ret, size_t *ret_len)
{
	/* Worst case: every byte becomes the 3-byte U+FFFD. */
	char *o = malloc(len * 3 + 1);
	if (!o)
		return -ENOMEM;
	size_t w = 0;
	const unsigned char *s = (const unsigned char *)buf;
	for (size_t i = 0; i < len;) {
		size_t l = utf8_valid(s + i, len - i);
		if (l == 0 || l == SIZE_MAX) {
			/* An incomplete character at the very end is one
			 * replacement, as Unicode's "maximal subpart" rule says. */
			memcpy(o + w, "\xef\xbf\xbd", 3);
			w += 3;
			i = l == SIZE_MAX ? len : i + 1;
		} else {
			memcpy(o + w, s + i, l);
			w += l;
			i += l;
		}
	}
	o[w] = '\0';
	*ret = o;
	*ret_len = w;
	return 0;
}

char *moat_record_format_event(double t, char stream, const char *utf8, size_t len)
{
	char code[2] = {stream, '\0'};
	/* Microsecond resolution, printed without binary noise: as many
	 * significant digits as the integer part needs, plus six. */
	if (t < 0)
		t = 0;
	t = (double)(uint64_t)(t * 1e6 + 0.5) / 1e6;
	int digits = 6;
	for (double x = t; x >= 1 && digits < 17; x /= 10)
		digits++;
	json_t *a = json_pack("[f s s%]", t, code, utf8, len);
	char *s = a ? json_dumps(a, JSON_COMPACT | JSON_REAL_PRECISION(digits)) : NULL;
	json_decref(a);
	return s;
}

static int write_line(moat_record *r, char *s, moat_error *err)
{
	size_t n = strlen(s);
	s[n] = '\n';
	int rc = moat__write_all(r->fd, s, n + 1);
	s[n] = '\0';
	if (rc < 0) {
		r->broken = true;
		return moat_error_set(err, rc, "recording %s: write", r->path);
	}
	return 0;
}

/* Sanitizes and writes buf, redacted already, as one event. */
static int emit(moat_record *r, char stream, const char *buf, size_t len, moat_error *err)
{
	if (len == 0)
		return 0;
	_cleanup_free_ char *clean = NULL;
	size_t clen;
	if (moat_utf8_sanitize(buf, len, &clean, &clen) < 0)
		return moat_error_set(err, ENOMEM, "recording %s", r->path);
	double t = (double)(moat__now_ns() - r->start_ns) / 1e9;
	_cleanup_free_ char *s = moat_record_format_event(t, stream, clean, clen);
	if (!s)
		return moat_error_set(err, ENOMEM, "recording %s", r->path);
	return write_line(r, s, err);
}

/* Takes what the redactor let through (redacted) and writes it up to the
 * last whole character; at the end (final) everything. */
static int put_redacted(moat_record *r, char stream, held *h, const char *red, size_t rlen, bool final,
			moat_error *err)
{
	_cleanup_free_ char *buf = malloc(h->len + rlen + 1);
	if (!buf)
		return moat_error_set(err, ENOMEM, "recording %s", r->path);
	memcpy(buf, h->buf, h->len);
	memcpy(buf + h->len, red, rlen);
	size_t total = h->len + rlen;
	size_t cut = final ? total : moat_record_cut(NULL, buf, total);
	h->len = total - cut;
	memcpy(h->buf, buf + cut, h->len);
	return emit(r, stream, buf, cut, err);
}

int moat_record_write(moat_record *r, char stream, const void *data, size_t len, moat_error *err)
{
	if (stream != 'o' && stream != 'i')
		return moat_error_set(err, EINVAL, "recording: stream '%c'", stream);
	if (r->broken)
		return moat_error_set(err, EIO, "recording %s: an earlier write failed", r->path);
	held *h = stream == 'o' ? &r->out : &r->in;
	/* Redact first, across chunks, then keep back a cut character. */
	_cleanup_free_ char *red = NULL;
	size_t rlen = 0;
	if (moat_redact_stream_feed(&h->red, data, len, &red, &rlen) < 0)
		return moat_error_set(err, ENOMEM, "recording %s", r->path);
	return put_redacted(r, stream, h, red, rlen, false, err);
}

static int flush_held(moat_record *r, char stream, held *h, moat_error *err)
{
	_cleanup_free_ char *red = NULL;
	size_t rlen = 0;
	if (moat_redact_stream_flush(&h->red, &red, &rlen) < 0)
		return moat_error_set(err, ENOMEM, "recording %s", r->path);
	return put_redacted(r, stream, h, red, rlen, true, err);
}

int moat_record_open(const char *path, const moat_record_header *hd, const moat_redactor *red, moat_record **ret,
		     moat_error *err)
{
	moat_record *r = calloc(1, sizeof(*r));
	if (!r)
		return moat_error_set(err, ENOMEM, "recording %s", path);
	_cleanup_record_ moat_record *guard = r;
	r->fd = moat__hostpath_open("recording", path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600, err);
	r->path = strdup(path);
	r->red = red;
	r->out.red = MOAT_REDACT_STREAM_INIT(red);
	r->in.red = MOAT_REDACT_STREAM_INIT(red);
	r->start_ns = moat__now_ns();
	if (r->fd < 0)
		return r->fd;
	if (!r->path)
		return moat_error_set(err, ENOMEM, "recording %s", path);
	json_t *env = json_object();
	if (hd && hd->term)
		json_object_set_new(env, "TERM", json_string(hd->term));
	if (hd && hd->shell)
		json_object_set_new(env, "SHELL", json_string(hd->shell));
	json_t *o = json_pack("{si si si sI so}", "version", 2, "width", hd && hd->width ? (int)hd->width : 80,
			      "height", hd && hd->height ? (int)hd->height : 24, "timestamp", (json_int_t)time(NULL),
			      "env", env);
	if (o && hd && hd->command)
		json_object_set_new(o, "command", json_string(hd->command));
	if (o && hd && hd->title)
		json_object_set_new(o, "title", json_string(hd->title));
	if (o)
		moat_redact_json(red, o);
	_cleanup_free_ char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!s)
		return moat_error_set(err, ENOMEM, "recording %s: header", path);
	int rc = write_line(r, s, err);
	if (rc < 0)
		return rc;
	*ret = TAKE_PTR(guard);
	return 0;
}

int moat_record_close(moat_record *r, moat_error *err)
{
	if (!r)
		return 0;
	int rc = 0;
	if (!r->broken && r->fd >= 0) {
		/* Nothing more will come: what was held back is written as it
		 * is (an incomplete character becomes U+FFFD). */
		rc = flush_held(r, 'o', &r->out, err);
		if (rc == 0)
			rc = flush_held(r, 'i', &r->in, err);
		if (rc == 0 && fsync(r->fd) < 0)
			rc = moat_error_set(err, errno, "recording %s: fsync", r->path);
	}
	if (r->fd >= 0)
		close(r->fd);
	moat_redact_stream_done(&r->out.red);
	moat_redact_stream_done(&r->in.red);
	free(r->path);
	free(r);
	return rc;
}
