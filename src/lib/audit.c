#include "audit.h"

#include <fcntl.h>
#include <inttypes.h>
#include <linux/limits.h>
#include <stdarg.h>
/* SHA256_Init and friends are deprecated in OpenSSL 3 in favour of EVP;
 * see moat_audit_hash for why moat uses them. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <pthread.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "moat-config.h"
#include "hostpath.h"

struct moat_audit {
	pthread_mutex_t lock;
	int fd;
	char *path;
	char session[128];
	uint64_t seq;               /* seq of the next event */
	char prev[MOAT_AUDIT_HASH_HEX]; /* hash of the last line */
	moat_redactor *red;
	bool broken;                /* a write failed: the file may end mid-line */
	bool failed;                /* some event was not written */
	bool dirty;                 /* written since the last fsync */
	uint64_t max_size;          /* cap on bytes this writer appends */
	uint64_t written;           /* bytes this writer appended */
	uint64_t dropped;           /* events dropped at the cap */
	bool overflowed;            /* audit.overflow is written */
};

static const char *const problem_names[_MOAT_AUDIT_PROBLEM_MAX] = {
	[MOAT_AUDIT_INTACT] = "ok",
	[MOAT_AUDIT_EDITED] = "edited",
	[MOAT_AUDIT_REORDERED] = "reordered",
	[MOAT_AUDIT_REMOVED] = "removed",
	[MOAT_AUDIT_TRUNCATED] = "truncated",
	[MOAT_AUDIT_FORGED] = "forged",
	[MOAT_AUDIT_MALFORMED] = "malformed",
};

const char *moat_audit_problem_to_string(moat_audit_problem p)
{
	if (p < 0 || p >= _MOAT_AUDIT_PROBLEM_MAX)
		return "invalid";
	return problem_names[p];
}

int moat_audit_new_id(char ret[MOAT_AUDIT_ID_LEN])
{
	return moat__random_hex(16, ret);
}

void moat_audit_hash(const void *buf, size_t len, char ret[MOAT_AUDIT_HASH_HEX])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256_CTX ctx;
	/* OpenSSL's SHA-256 itself, not EVP: EVP_Digest pulls the provider
	 * machinery and its error tables into a static moat, 340 KB of
	 * pointers the loader relocates at every start of every run, with or
	 * without an audit log (docs/performance.md). These calls cannot fail
	 * with a valid context; should one ever, an all-zero hash makes
	 * verify fail loudly rather than pass. */
	if (SHA256_Init(&ctx) != 1 || SHA256_Update(&ctx, buf, len) != 1 || SHA256_Final(md, &ctx) != 1) {
		memset(ret, '0', 64);
		ret[64] = '\0';
		return;
	}
	moat__hex_encode(md, sizeof(md), ret);
}

void moat_audit_format_time(uint64_t unix_us, char *buf, size_t len)
{
	time_t t = (time_t)(unix_us / 1000000u);
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(unix_us % 1000000u));
}

static int digits(const char **p, int n, int *ret)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -EINVAL;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*ret = v;
	return 0;
}

static int expect(const char **p, const char *set)
{
	if (!**p || !strchr(set, **p))
		return -EINVAL;
	(*p)++;
	return 0;
}

int moat_audit_parse_time(const char *s, uint64_t *ret)
{
	struct tm tm = {0};
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	const char *p = s;
	if (digits(&p, 4, &y) < 0 || expect(&p, "-") < 0 || digits(&p, 2, &mo) < 0 || expect(&p, "-") < 0 ||
	    digits(&p, 2, &d) < 0 || expect(&p, "Tt ") < 0 || digits(&p, 2, &h) < 0 || expect(&p, ":") < 0 ||
	    digits(&p, 2, &mi) < 0 || expect(&p, ":") < 0 || digits(&p, 2, &sec) < 0)
		return -EINVAL;
	uint64_t us = 0;
	if (*p == '.') {
		p++;
		int n = 0;
		uint64_t scale = 100000;
		while (*p >= '0' && *p <= '9') {
			us += (uint64_t)(*p - '0') * scale;
			scale /= 10;
			p++;
			n++;
		}
		if (n == 0)
			return -EINVAL;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		p++;
		if (digits(&p, 2, &oh) < 0 || expect(&p, ":") < 0 || digits(&p, 2, &om) < 0)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || oh > 23 || om > 59)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	int64_t t = (int64_t)timegm(&tm) - (int64_t)sign * (oh * 3600 + om * 60);
	if (t < 0)
		return -ERANGE;
	*ret = (uint64_t)t * 1000000u + us;
	return 0;
}

static bool reserved_key(const char *k)
{
	return strcmp(k, "seq") == 0 || strcmp(k, "time") == 0 || strcmp(k, "session") == 0 ||
	       strcmp(k, "type") == 0 || strcmp(k, "prev") == 0;
}

int moat_audit_format_line(uint64_t seq, const char *time, const char *session, const char *type,
			   json_t *fields, const char *prev, const moat_redactor *red, char **ret,
			   moat_error *err)
{
	if (fields && !json_is_object(fields))
		return moat_error_set(err, EINVAL, "audit event %s: fields are not an object", type);
	if (fields && moat_redact_json(red, fields) < 0)
		return moat_error_set(err, ENOMEM, "audit event %s: redact", type);
	json_t *o = json_object();
	if (!o)
		return moat_error_set(err, ENOMEM, "audit event %s", type);
	int rc = 0;
	rc |= json_object_set_new(o, "seq", json_integer((json_int_t)seq));
	rc |= json_object_set_new(o, "time", json_string(time));
	rc |= json_object_set_new(o, "session", json_string(session));
	rc |= json_object_set_new(o, "type", json_string(type));
	const char *k;
	json_t *v;
	if (fields)
		json_object_foreach(fields, k, v)
		{
			if (reserved_key(k)) {
				json_decref(o);
				return moat_error_set(err, EINVAL, "audit event %s: field name '%s' is reserved",
						      type, k);
			}
			rc |= json_object_set(o, k, v);
		}
	rc |= json_object_set_new(o, "prev", json_string(prev));
	char *s = rc == 0 ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!s)
		return moat_error_set(err, ENOMEM, "audit event %s: format", type);
	*ret = s;
	return 0;
}

/* ---- verify ---- */

typedef struct line {
	const char *p;
	size_t len;
} line;

static bool is_hex64(const char *s)
{
	if (!s || strlen(s) != 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static int verdict(moat_audit_verdict *v, moat_audit_problem p, size_t lineno, const char *fmt, ...)
	_printf_(4, 5);
static int verdict(moat_audit_verdict *v, moat_audit_problem p, size_t lineno, const char *fmt, ...)
{
	va_list ap;
	v->problem = p;
	v->line = lineno;
	va_start(ap, fmt);
	vsnprintf(v->reason, sizeof(v->reason), fmt, ap);
	va_end(ap);
	return 1;
}

/* Tracks session.start/session.stop pairs to report unclosed sessions. */
static int track_session(json_t *open, const char *type, const char *session)
{
	if (strcmp(type, "session.start") == 0)
		return json_object_set_new(open, session, json_true());
	if (strcmp(type, "session.stop") == 0)
		json_object_del(open, session);
	return 0;
}

/* What verify knows of each line before judging any: its seq, its prev and
 * its own hash, so that a break in the chain can be blamed on the line that
 * explains it, which needs the next line too. */
typedef struct link_info {
	int64_t seq;                    /* -1 when unreadable */
	bool has_prev;
	char prev[MOAT_AUDIT_HASH_HEX];
	char hash[MOAT_AUDIT_HASH_HEX];
} link_info;

static void read_link_info(const line *l, link_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->seq = -1;
	moat_audit_hash(l->p, l->len, ret->hash);
	json_t *j = json_loadb(l->p, l->len, JSON_REJECT_DUPLICATES, NULL);
	json_t *s = json_object_get(j, "seq");
	const char *prev = json_string_value(json_object_get(j, "prev"));
	if (json_is_integer(s) && json_integer_value(s) >= 0)
		ret->seq = (int64_t)json_integer_value(s);
	if (is_hex64(prev)) {
		memcpy(ret->prev, prev, sizeof(ret->prev));
		ret->has_prev = true;
	}
	json_decref(j);
}

/* 1 when line i's prev is the hash of line i-1, 0 when it is not, -1 when
 * line i cannot tell (unreadable, or past the end). */
static int linked(const link_info *info, size_t n, size_t i)
{
	if (i == 0 || i >= n || !info[i].has_prev)
		return -1;
	return strcmp(info[i].prev, info[i - 1].hash) == 0;
}

/* Hex characters in which two hashes differ: an edited prev differs from
 * the hash it was in a few, an unrelated hash in about 60 of 64. */
static int hex_distance(const char *a, const char *b)
{
	int d = 0;
	for (int k = 0; k < 64; k++)
		d += a[k] != b[k];
	return d;
}

int moat_audit_verify_buffer(const char *buf, size_t len, unsigned flags, moat_audit_verdict *ret)
{
	moat_audit_verdict *v = ret;
	memset(v, 0, sizeof(*v));
	/* Split into complete lines; a last segment without '\n' is partial. */
	size_t n = 0, cap = 0;
	_cleanup_free_ line *lines = NULL;
	size_t partial_len = 0;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		if (!nl) {
			partial_len = len - i;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			line *nv = realloc(lines, cap * sizeof(line));
			if (!nv)
				return -ENOMEM;
			lines = nv;
		}
		lines[n++] = (line){buf + i, (size_t)(nl - (buf + i))};
		i = (size_t)(nl - buf) + 1;
	}
	if (n == 0 && partial_len == 0)
		return verdict(v, MOAT_AUDIT_MALFORMED, 1, "empty log: no log.start header");

	_cleanup_free_ link_info *info = n ? calloc(n, sizeof(*info)) : NULL;
	if (n && !info)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		read_link_info(&lines[i], &info[i]);

	json_t *open = json_object();
	if (!open)
		return -ENOMEM;
	int64_t prev_seq = -1;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		size_t lineno = i + 1;
		json_error_t jerr;
		json_t *j = json_loadb(lines[i].p, lines[i].len, JSON_REJECT_DUPLICATES, &jerr);
		if (!json_is_object(j)) {
			r = verdict(v, MOAT_AUDIT_MALFORMED, lineno, "not a JSON object (%s)", j ? "wrong type" : jerr.text);
			json_decref(j);
			break;
		}
		json_t *js = json_object_get(j, "seq");
		const char *type = json_string_value(json_object_get(j, "type"));
		const char *prev = json_string_value(json_object_get(j, "prev"));
		const char *session = json_string_value(json_object_get(j, "session"));
		const char *time = json_string_value(json_object_get(j, "time"));
		uint64_t us;
		if (!json_is_integer(js) || json_integer_value(js) < 0 || !type || !session || !time ||
		    !is_hex64(prev) || moat_audit_parse_time(time, &us) < 0) {
			r = verdict(v, MOAT_AUDIT_MALFORMED, lineno,
				    "not an audit event (seq, time, session, type or prev missing or invalid)");
			json_decref(j);
			break;
		}
		int64_t seq = (int64_t)json_integer_value(js);
		bool header = i == 0 && !(flags & MOAT_AUDIT_VERIFY_TAIL);
		int self = header ? -1 : linked(info, n, i); /* this line to the one before */
		int next = linked(info, n, i + 1);            /* the next line to this one */
		int64_t next_seq = i + 1 < n ? info[i + 1].seq : -1;
		int64_t want_next = i == 0 ? seq + 1 : prev_seq + 2;
		/* This line's bytes changed after the next line was chained to
		 * them: it is linked to its predecessor (or starts the buffer),
		 * the next line is not linked to it, and the next line's seq is
		 * the one that follows this line's place (so nothing was removed
		 * in between; this line's own seq may be the edited field). When
		 * the next line is the last, a line appended by something else
		 * reads the same: the last line's check below names both. And
		 * when the line after the next does not link to the next either,
		 * it is the next line that was changed (its prev, or all of it). */
		bool self_ok = i == 0 || self == 1;
		if (self_ok && next == 0 && linked(info, n, i + 2) == 1 && next_seq == want_next) {
			bool seq_edited = seq != prev_seq + 1;
			r = verdict(v, MOAT_AUDIT_EDITED, lineno,
				    "line %zu does not link to this line (its prev is not this line's hash), while "
				    "this line links to %s: this line was changed after it was written%s",
				    lineno + 1, header ? "its nonce" : "the line before it",
				    seq_edited ? " (its seq among others)" : "");
			json_decref(j);
			break;
		}
		if (header) {
			const char *nonce = json_string_value(json_object_get(j, "nonce"));
			char want[MOAT_AUDIT_HASH_HEX];
			if (strcmp(type, "log.start") != 0 || !is_hex64(nonce))
				r = verdict(v, MOAT_AUDIT_MALFORMED, lineno, "first line is not a log.start header");
			else if (seq != 0)
				r = verdict(v, MOAT_AUDIT_REMOVED, lineno, "header has seq %" PRId64 ", not 0", seq);
			else if (moat_audit_hash(nonce, 64, want), strcmp(want, prev) != 0)
				r = verdict(v, MOAT_AUDIT_FORGED, lineno, "header is not chained to its nonce");
		} else if (i > 0) {
			if (self == 1 && seq != prev_seq + 1) {
				/* Chained by the writer, yet out of place: its seq
				 * was changed (and, being last, nothing after it
				 * shows the change in the chain). */
				r = verdict(v, MOAT_AUDIT_EDITED, lineno,
					    "seq %" PRId64 " where %" PRId64 " was due, on a line that links to line %zu: "
					    "its seq was changed after it was written",
					    seq, prev_seq + 1, lineno - 1);
			} else if (seq <= prev_seq) {
				r = verdict(v, MOAT_AUDIT_REORDERED, lineno, "seq %" PRId64 " comes after seq %" PRId64,
					    seq, prev_seq);
			} else if (seq != prev_seq + 1) {
				size_t found = 0;
				for (size_t k = i + 1; k < n && !found; k++)
					if (info[k].seq == prev_seq + 1)
						found = k + 1;
				if (found)
					r = verdict(v, MOAT_AUDIT_REORDERED, lineno,
						    "seq %" PRId64 " where %" PRId64 " was due; seq %" PRId64
						    " is on line %zu",
						    seq, prev_seq + 1, prev_seq + 1, found);
				else
					r = verdict(v, MOAT_AUDIT_REMOVED, lineno,
						    "seq jumps from %" PRId64 " to %" PRId64 ": %" PRId64
						    " event(s) removed before this line",
						    prev_seq, seq, seq - prev_seq - 1);
			} else if (self == 0) {
				/* This line does not link to the one before, whose
				 * own link to it was fine (else the check above
				 * would have named it). When the next line does not
				 * link to this one either, this line itself was
				 * changed (its prev, or all of it). As the last
				 * line nothing follows to tell: a prev a few
				 * characters from the right hash was edited, an
				 * unrelated one was written by something else. */
				if (next == 0)
					r = verdict(v, MOAT_AUDIT_EDITED, lineno,
						    "this line does not link to line %zu (its prev is not that line's "
						    "hash), and line %zu does not link to it: this line was changed",
						    lineno - 1, lineno + 1);
				else if (i + 1 == n && hex_distance(prev, info[i - 1].hash) <= 8)
					r = verdict(v, MOAT_AUDIT_EDITED, lineno,
						    "this line does not link to line %zu: its prev differs from that "
						    "line's hash in %d hex digit(s), so its prev was changed",
						    lineno - 1, hex_distance(prev, info[i - 1].hash));
				else if (i + 1 == n)
					r = verdict(v, MOAT_AUDIT_FORGED, lineno,
						    "this line does not link to line %zu (its prev is not that line's "
						    "hash): appended by something other than the writer, or line %zu "
						    "was changed after it was written",
						    lineno - 1, lineno - 1);
				else
					r = verdict(v, MOAT_AUDIT_EDITED, lineno - 1,
						    "line %zu does not link to this line (its prev is not this line's "
						    "hash): this line was changed after it was written",
						    lineno);
			} else if (strcmp(type, "log.start") == 0) {
				r = verdict(v, MOAT_AUDIT_FORGED, lineno, "a second log.start header");
			}
		}
		if (r == 0) {
			if (track_session(open, type, session) < 0) {
				json_decref(j);
				json_decref(open);
				return -ENOMEM;
			}
			prev_seq = seq;
			v->events++;
			v->last_seq = (uint64_t)seq;
			memcpy(v->head, info[i].hash, sizeof(v->head));
		}
		json_decref(j);
	}
	v->unclosed = json_object_size(open);
	json_decref(open);
	if (r == 0 && partial_len > 0)
		r = verdict(v, MOAT_AUDIT_TRUNCATED, n + 1,
			    "partial last line without newline (%zu bytes): the writer stopped mid-line or "
			    "the file was cut",
			    partial_len);
	return r;
}

/* ---- readable form ---- */

char *moat_audit_format_readable(const json_t *ev)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	const char *time = json_string_value(json_object_get(ev, "time"));
	const char *type = json_string_value(json_object_get(ev, "type"));
	fprintf(f, "%s %-13s", time ? time : "?", type ? type : "?");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)ev, k, v)
	{
		if (reserved_key(k))
			continue;
		if (json_is_string(v)) {
			const char *s = json_string_value(v);
			if (*s && !strpbrk(s, " \t\n\"="))
				fprintf(f, " %s=%s", k, s);
			else {
				char *q = json_dumps(v, JSON_ENCODE_ANY);
				fprintf(f, " %s=%s", k, q ? q : "?");
				free(q);
			}
		} else {
			char *q = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_PRESERVE_ORDER);
			fprintf(f, " %s=%s", k, q ? q : "?");
			free(q);
		}
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	/* Values come from the sandbox (file names, argv): an escape sequence
	 * in one must reach the reader's terminal as text, not as a command
	 * that rewrites the screen. */
	char *shown = moat__escape_controls_dup(buf);
	free(buf);
	return shown;
}

char *moat_audit_format_json_line(const char *text, size_t len)
{
	if (!moat__has_controls(text, len))
		return strndup(text, len);
	json_t *j = json_loadb(text, len, 0, NULL);
	if (!j)
		return NULL;
	/* ASCII only: \u escapes for every control, C1 ones included. */
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	json_decref(j);
	if (!s || !strchr(s, 0x7f))
		return s;
	/* DEL is ASCII, so jansson leaves it; it can only be inside a string. */
	size_t n = strlen(s), k = 0;
	char *out = malloc(6 * n + 1);
	if (out)
		for (size_t i = 0; i <= n; i++) {
			if (s[i] == 0x7f) {
				memcpy(out + k, "\\u007f", 6);
				k += 6;
			} else {
				out[k++] = s[i];
			}
		}
	free(s);
	return out;
}

/* ---- the writer ---- */

static uint64_t realtime_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Writes one line (plus its newline) in a single write(). Called locked. */
static int append_line(moat_audit *a, const char *type, json_t *fields, unsigned flags, moat_error *err)
{
	/* Past the cap, an event is only counted: not even formatted, so a
	 * flood costs the supervisor as little as it can. */
	if (a->overflowed && !(flags & MOAT_AUDIT_ALWAYS)) {
		a->dropped++;
		return 0;
	}
	char time[40];
	moat_audit_format_time(realtime_us(), time, sizeof(time));
	_cleanup_free_ char *s = NULL;
	int rc = moat_audit_format_line(a->seq, time, a->session, type, fields, a->prev, a->red, &s, err);
	if (rc < 0)
		return rc;
	size_t n = strlen(s);
	if (n + 1 > MOAT_AUDIT_MAX_LINE) {
		json_t *small = json_pack("{sI}", "oversize", (json_int_t)n);
		free(TAKE_PTR(s));
		rc = moat_audit_format_line(a->seq, time, a->session, type, small, a->prev, NULL, &s, err);
		json_decref(small);
		if (rc < 0)
			return rc;
		n = strlen(s);
	}
	/* The cap: the first event past it becomes one audit.overflow
	 * event, later ones are only counted. The overflow line is small and
	 * written even though it passes the cap, as are the ALWAYS events. */
	if (!(flags & MOAT_AUDIT_ALWAYS) && a->written + n + 1 > a->max_size) {
		a->dropped++;
		if (a->overflowed)
			return 0;
		a->overflowed = true;
		json_t *o = json_pack("{sIsIss}", "max_size", (json_int_t)a->max_size, "written",
				      (json_int_t)a->written, "first_dropped", type);
		free(TAKE_PTR(s));
		rc = o ? moat_audit_format_line(a->seq, time, a->session, "audit.overflow", o, a->prev, a->red, &s, err)
		       : moat_error_set(err, ENOMEM, "audit.overflow");
		json_decref(o);
		if (rc < 0)
			return rc;
		n = strlen(s);
		flags |= MOAT_AUDIT_SYNC;
	}
	char hash[MOAT_AUDIT_HASH_HEX];
	moat_audit_hash(s, n, hash);
	s[n] = '\n'; /* the NUL is not written; the hash covers the line only */
	ssize_t w;
	do
		w = write(a->fd, s, n + 1);
	while (w < 0 && errno == EINTR);
	if (w < 0 || (size_t)w != n + 1) {
		/* A short write leaves a partial line. Later lines could only be
		 * chained to bytes that are not there, so the writer stops. */
		a->broken = true;
		return moat_error_set(err, w < 0 ? errno : EIO, "audit log %s: write", a->path);
	}
	memcpy(a->prev, hash, sizeof(hash));
	a->seq++;
	a->written += n + 1;
	a->dirty = true;
	if (flags & MOAT_AUDIT_SYNC) {
		if (fsync(a->fd) < 0)
			return moat_error_set(err, errno, "audit log %s: fsync", a->path);
		a->dirty = false;
	}
	return 0;
}

int moat_audit_event(moat_audit *a, const char *type, json_t *fields, unsigned flags, moat_error *err)
{
	if (!a) {
		json_decref(fields);
		return moat_error_set(err, EINVAL, "audit event %s: no log", type);
	}
	pthread_mutex_lock(&a->lock);
	int rc = a->broken ? moat_error_set(err, EIO, "audit log %s: an earlier write failed", a->path)
			   : append_line(a, type, fields, flags, err);
	/* An event that could not be written is a hole in the record even
	 * when the file itself is intact: the caller must learn of it. */
	if (rc < 0)
		a->failed = true;
	pthread_mutex_unlock(&a->lock);
	json_decref(fields);
	return rc;
}

/* Reads the tail of an existing log and continues its chain. */
/* Reads len bytes of the log from start into a new buffer (*ret, the
 * caller's to free): the tail the chain continues from, or a partial line. */
static int read_range(moat_audit *a, off_t start, size_t len, char **ret, moat_error *err)
{
	_cleanup_free_ char *buf = malloc(len ? len : 1);
	if (!buf)
		return moat_error_set(err, ENOMEM, "audit log %s", a->path);
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(a->fd, buf + got, len - got, start + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return moat_error_set(err, r < 0 ? errno : EIO, "audit log %s: read", a->path);
		got += (size_t)r;
	}
	*ret = TAKE_PTR(buf);
	return 0;
}

static int continue_chain(moat_audit *a, off_t size, moat_error *err)
{
	size_t want = 2 * (size_t)MOAT_AUDIT_MAX_LINE + 2;
	off_t start = size > (off_t)want ? size - (off_t)want : 0;
	size_t len = (size_t)(size - start);
	_cleanup_free_ char *buf = NULL;
	int rr = read_range(a, start, len, &buf, err);
	if (rr < 0)
		return rr;
	if (buf[len - 1] != '\n')
		return moat_error_set(err, MOAT_EINPUT,
				      "audit log %s ends in a partial line; check it with 'moat audit verify' "
				      "and start a new log",
				      a->path);
	/* When the tail does not start at the file's beginning, its first
	 * segment may be the end of a longer line: skip it. The chain needs
	 * only the last two lines. */
	const char *p = buf, *end = buf + len;
	if (start > 0)
		p = (const char *)memchr(buf, '\n', len) + 1;
	const char *last = end - 1;
	while (last > p && last[-1] != '\n')
		last--;
	const char *last2 = last;
	if (last2 > p) {
		last2--;
		while (last2 > p && last2[-1] != '\n')
			last2--;
	}
	bool from_start = last2 == buf;
	moat_audit_verdict v;
	int r = moat_audit_verify_buffer(last2, (size_t)(end - last2), from_start ? 0 : MOAT_AUDIT_VERIFY_TAIL,
					 &v);
	if (r < 0)
		return moat_error_set(err, r, "audit log %s", a->path);
	if (r > 0 || v.events == 0)
		return moat_error_set(err, MOAT_EINPUT,
				      "audit log %s: its last lines do not verify (%s: %s); check it with 'moat "
				      "audit verify'",
				      a->path, moat_audit_problem_to_string(v.problem), v.reason);
	a->seq = v.last_seq + 1;
	memcpy(a->prev, v.head, sizeof(a->prev));
	return 0;
}

/* fsyncs the folder that holds path, found as the log was (hostpath). A
 * filesystem that cannot sync a folder says EINVAL: its entries have no
 * other way to disk, so that is not a failure (PostgreSQL's
 * fsync_fname_ext does the same). */
static int sync_folder(const char *path, moat_error *err)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	_cleanup_close_ int fd = moat__hostpath_open("audit log folder", dir, O_RDONLY | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	if (fsync(fd) < 0 && errno != EINVAL)
		return moat_error_set(err, errno, "audit log folder %s: fsync", dir);
	return 0;
}

/* Whether the file at path, regular, this user's and not a link, holds
 * exactly len bytes, those of buf. */
static bool same_aside(const char *path, const char *buf, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_size != (off_t)len)
		return false;
	_cleanup_free_ char *got = malloc(len + 1);
	if (!got)
		return false;
	size_t n = 0;
	while (n < len) {
		ssize_t r = pread(fd, got + n, len - n, (off_t)n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		n += (size_t)r;
	}
	return memcmp(got, buf, len) == 0;
}

/* The log ends in a partial line: its tail past the last newline goes to
 * PATH.partial-OFFSET (created new, fsync'd) before the log is cut back to
 * that newline, so no byte is lost, only set aside. *size becomes the cut
 * size; ret_sha256 the tail's digest. A tail longer than one line can be is
 * no write cut short but something else, and is refused. */
static int set_aside_partial(moat_audit *a, off_t *size, char *moved, size_t moved_size,
			     char ret_sha256[MOAT_AUDIT_HASH_HEX], moat_error *err)
{
	char last = 0;
	ssize_t r1;
	do
		r1 = pread(a->fd, &last, 1, *size - 1);
	while (r1 < 0 && errno == EINTR);
	if (r1 != 1)
		return moat_error_set(err, r1 < 0 ? errno : EIO, "audit log %s: read", a->path);
	if (last == '\n')
		return 0;
	/* A line is at most MOAT_AUDIT_MAX_LINE bytes with its newline: the
	 * newline before a partial one is within that many bytes of the end. */
	size_t want = (size_t)MOAT_AUDIT_MAX_LINE + 1;
	off_t start = *size > (off_t)want ? *size - (off_t)want : 0;
	size_t len = (size_t)(*size - start);
	_cleanup_free_ char *buf = NULL;
	int rr = read_range(a, start, len, &buf, err);
	if (rr < 0)
		return rr;
	const char *nl = memrchr(buf, '\n', len);
	if (!nl && start > 0)
		return moat_error_set(err, MOAT_EINPUT,
				      "audit log %s ends in %zu bytes without a newline, more than a line can be; "
				      "check it with 'moat audit verify'",
				      a->path, len);
	size_t keep_in_buf = nl ? (size_t)(nl - buf) + 1 : 0;
	off_t keep = start + (off_t)keep_in_buf;
	const char *tail = buf + keep_in_buf;
	size_t tail_len = len - keep_in_buf;
	snprintf(moved, moved_size, "%s.partial-%lld", a->path, (long long)keep);
	moat_error e2 = {0};
	_cleanup_close_ int fd =
		moat__hostpath_open("partial audit line", moved, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600, &e2);
	if (fd < 0 && e2.code == EEXIST) {
		/* A recovery killed after it set the tail aside and before its
		 * event was written leaves the same tail at the same offset:
		 * its copy, byte for byte, is this one's. Anything else in
		 * that name is not overwritten. */
		if (!same_aside(moved, tail, tail_len))
			return moat_error_set(err, EEXIST,
					      "audit log %s: %s exists and is not a copy of its partial line (%zu bytes); "
					      "move it away to restart",
					      a->path, moved, tail_len);
	} else if (fd < 0) {
		*err = e2;
		return fd;
	} else if (moat__write_all(fd, tail, tail_len) < 0 || fsync(fd) < 0)
		return moat_error_set(err, errno ? errno : EIO, "audit log %s: set its partial line aside in %s",
				      a->path, moved);
	if (ftruncate(a->fd, keep) < 0 || fsync(a->fd) < 0)
		return moat_error_set(err, errno, "audit log %s: cut its partial line", a->path);
	moat_audit_hash(tail, tail_len, ret_sha256);
	*size = keep;
	return (int)tail_len;
}

static int audit_open(const char *path, const char *session_id, bool recover, moat_audit **ret, char *ret_moved,
		      moat_error *err);

int moat_audit_open(const char *path, const char *session_id, moat_audit **ret, moat_error *err)
{
	return audit_open(path, session_id, false, ret, NULL, err);
}

int moat_audit_open_recover(const char *path, const char *session_id, moat_audit **ret, char *ret_moved,
			    moat_error *err)
{
	return audit_open(path, session_id, true, ret, ret_moved, err);
}

static int audit_open(const char *path, const char *session_id, bool recover, moat_audit **ret, char *ret_moved,
		      moat_error *err)
{
	moat_audit *a = calloc(1, sizeof(*a));
	if (!a)
		return moat_error_set(err, ENOMEM, "audit log %s", path);
	pthread_mutex_init(&a->lock, NULL);
	a->fd = -1;
	a->max_size = MOAT_AUDIT_DEFAULT_MAX_SIZE;
	_cleanup_audit_ moat_audit *guard = a;
	a->path = strdup(path);
	a->red = moat_redactor_new();
	if (!a->path || !a->red)
		return moat_error_set(err, ENOMEM, "audit log %s", path);
	if (session_id) {
		if (!*session_id || strlen(session_id) >= sizeof(a->session))
			return moat_error_set(err, MOAT_EINPUT, "audit session id: empty or too long");
		snprintf(a->session, sizeof(a->session), "%s", session_id);
	} else {
		int rid = moat_audit_new_id(a->session);
		if (rid < 0)
			return moat_error_set(err, rid, "audit session id: getrandom");
	}

	a->fd = moat__hostpath_open("audit log", path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW, 0600, err);
	if (a->fd < 0)
		return a->fd;
	struct stat st;
	if (fstat(a->fd, &st) < 0)
		return moat_error_set(err, errno, "audit log %s", path);
	if (!S_ISREG(st.st_mode))
		return moat_error_set(err, MOAT_EINPUT, "audit log %s: not a regular file", path);
	/* Two writers would interleave two chains in one file. */
	if (flock(a->fd, LOCK_EX | LOCK_NB) < 0)
		return moat_error_set(err, errno == EWOULDBLOCK ? MOAT_EINPUT : errno,
				      "audit log %s: in use by another writer", path);
	/* The size is read under the lock, after any earlier writer is gone. */
	if (fstat(a->fd, &st) < 0)
		return moat_error_set(err, errno, "audit log %s", path);
	off_t size = st.st_size;
	char moved[PATH_MAX] = "", tail_sha[MOAT_AUDIT_HASH_HEX] = "";
	off_t tail_at = 0;
	int tail_len = 0;
	if (recover && size > 0) {
		tail_len = set_aside_partial(a, &size, moved, sizeof(moved), tail_sha, err);
		if (tail_len < 0)
			return tail_len;
		tail_at = size;
	}

	if (size > 0) {
		int rc = continue_chain(a, size, err);
		if (rc < 0)
			return rc;
	} else {
		/* A new log: the fsync of its session.start makes the file's data
		 * durable, not the folder's entry for it, so after a crash the log
		 * itself could be gone (fsync(2): "an explicit fsync() on a file
		 * descriptor for the directory is also needed"). Once, here. */
		int rs = sync_folder(path, err);
		if (rs < 0)
			return rs;
		char nonce[MOAT_AUDIT_HASH_HEX];
		int rn = moat__random_hex(32, nonce);
		if (rn < 0)
			return moat_error_set(err, rn, "audit log nonce: getrandom");
		moat_audit_hash(nonce, 64, a->prev);
		a->seq = 0;
		json_t *f = json_pack("{sisssssisi}", "version", MOAT_AUDIT_VERSION, "nonce", nonce, "writer",
				      "moat " MOAT_VERSION, "writer_pid", (int)getpid(), "writer_uid", (int)getuid());
		/* Not synced on its own: the session.start that follows is, and one
		 * fsync is a good part of a short run's cost on a journaling disk. */
		int rc = moat_audit_event(a, "log.start", f, 0, err);
		if (rc < 0)
			return rc;
	}

	if (tail_len > 0) {
		json_t *f = json_pack("{s:I, s:i, s:s, s:s, s:s}", "offset", (json_int_t)tail_at, "bytes", tail_len, "sha256", tail_sha,
				      "moved_to", moved, "reason", "the log ended in a partial line: a write cut short (its writer killed mid-write)");
		if (!f)
			return moat_error_set(err, ENOMEM, "audit log %s: audit.partial_tail", path);
		int rc = moat_audit_event(a, "audit.partial_tail", f, MOAT_AUDIT_SYNC | MOAT_AUDIT_ALWAYS, err);
		if (rc < 0)
			return rc;
	}
	if (ret_moved)
		snprintf(ret_moved, PATH_MAX, "%s", moved);
	*ret = TAKE_PTR(guard);
	return 0;
}

int moat_audit_set_max_size(moat_audit *a, uint64_t max_size, moat_error *err)
{
	if (max_size < MOAT_AUDIT_MIN_MAX_SIZE || max_size > MOAT_AUDIT_MAX_MAX_SIZE)
		return moat_error_set(err, MOAT_EINPUT,
				      "audit.max_size: %" PRIu64 " bytes is out of range (64K to 1T)", max_size);
	pthread_mutex_lock(&a->lock);
	a->max_size = max_size;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

uint64_t moat_audit_dropped(moat_audit *a)
{
	pthread_mutex_lock(&a->lock);
	uint64_t d = a->dropped;
	pthread_mutex_unlock(&a->lock);
	return d;
}

int moat_audit_add_secret(moat_audit *a, const char *name, const char *value, moat_error *err)
{
	pthread_mutex_lock(&a->lock);
	int rc = moat_redactor_add(a->red, name, value, err);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

const moat_redactor *moat_audit_redactor(const moat_audit *a)
{
	return a ? a->red : NULL;
}

const char *moat_audit_session(const moat_audit *a)
{
	return a->session;
}

void moat_audit_head(moat_audit *a, char ret[MOAT_AUDIT_HASH_HEX])
{
	pthread_mutex_lock(&a->lock);
	memcpy(ret, a->prev, MOAT_AUDIT_HASH_HEX);
	pthread_mutex_unlock(&a->lock);
}

bool moat_audit_failed(moat_audit *a)
{
	pthread_mutex_lock(&a->lock);
	bool b = a->broken || a->failed;
	pthread_mutex_unlock(&a->lock);
	return b;
}

int moat_audit_sync(moat_audit *a, moat_error *err)
{
	if (fsync(a->fd) < 0)
		return moat_error_set(err, errno, "audit log %s: fsync", a->path);
	return 0;
}

void moat_audit_close(moat_audit *a)
{
	if (!a)
		return;
	if (a->fd >= 0) {
		if (a->dirty)
			fsync(a->fd);
		close(a->fd);
	}
	pthread_mutex_destroy(&a->lock);
	moat_redactor_free(a->red);
	free(a->path);
	free(a);
}
