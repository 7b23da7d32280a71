/* Where an upstream's HTTP/1.x response ends. See httpresp.h. */
#include "httpresp.h"

#include "netaddr.h"
#include "proxyproto.h"

#include <string.h>
#include <strings.h>

enum {
	RS_HEAD = 0,   /* head lines, the status line first */
	RS_LENGTH,     /* a Content-Length body */
	RS_CK_SIZE,    /* hex digits of a chunk size */
	RS_CK_EXT,     /* ";ext" after the size, up to CR */
	RS_CK_SIZE_LF, /* the LF of the size line */
	RS_CK_DATA,
	RS_CK_DATA_CR, /* the CRLF after a chunk's data */
	RS_CK_DATA_LF,
	RS_TRAILER,    /* trailer lines after the last chunk, up to an empty one */
	RS_CLOSE,      /* a body that ends when the server closes */
	RS_DONE,
};

static int resp_bad(moat_error *err, const char *why)
{
	moat_error_set(err, EBADMSG, "the upstream's response: %s", why);
	return -EBADMSG;
}

static void head_reset(moat_http_resp *r)
{
	r->version_minor = -1;
	r->n_cl = 0;
	r->cl = 0;
	r->cl_differs = r->te = r->te_chunked = r->conn_close = r->conn_keep_alive = false;
	r->line_len = 0;
	r->head_bytes = 0;
}

void moat_http_resp_init(moat_http_resp *r, bool head_request)
{
	memset(r, 0, sizeof(*r));
	r->head_request = head_request;
	head_reset(r);
	r->state = RS_HEAD;
}

/* Whether a comma-separated list holds tok (last_only: as its last
 * element). */
static bool list_has(const char *v, const char *tok, bool last_only)
{
	size_t tl = strlen(tok);
	bool found = false;
	for (const char *p = v; *p;) {
		p += strspn(p, " \t,");
		if (!*p)
			break;
		const char *e = p + strcspn(p, ",");
		const char *t = e;
		while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		bool is = (size_t)(t - p) == tl && strncasecmp(p, tok, tl) == 0;
		/* A parameter (";q=1") belongs to the coding before it. */
		if (!is && last_only && (size_t)(t - p) > tl && strncasecmp(p, tok, tl) == 0 && (p[tl] == ';' || p[tl] == ' '))
			is = true;
		found = last_only ? is : found || is;
		p = e;
	}
	return found;
}

static int status_line(moat_http_resp *r, const char *l, size_t n, moat_error *err)
{
	/* "HTTP/1.x SSS[ reason]" */
	if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || (l[7] != '0' && l[7] != '1') || l[8] != ' ')
		return resp_bad(err, "no HTTP/1.x status line");
	int s = 0;
	for (size_t i = 9; i < 12; i++) {
		if (l[i] < '0' || l[i] > '9')
			return resp_bad(err, "the status is not three digits");
		s = s * 10 + (l[i] - '0');
	}
	if (s < 100 || (n > 12 && l[12] != ' '))
		return resp_bad(err, "malformed status");
	r->version_minor = l[7] - '0';
	r->status = s;
	return 0;
}

static int header_line(moat_http_resp *r, char *l, size_t n, moat_error *err)
{
	if (l[0] == ' ' || l[0] == '\t')
		return resp_bad(err, "a folded header line");
	char *colon = memchr(l, ':', n);
	if (!colon || colon == l)
		return resp_bad(err, "a header line without a name");
	for (char *p = l; p < colon; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return resp_bad(err, "a header name with a space or control byte");
	*colon = '\0';
	const char *v = colon + 1;
	if (strcasecmp(l, "Content-Length") == 0) {
		/* "5" or, as some servers repeat it, "5, 5": every one the same. */
		for (const char *p = v; *p;) {
			p += strspn(p, " \t,");
			if (!*p)
				break;
			uint64_t x = 0;
			unsigned d = 0;
			for (; *p >= '0' && *p <= '9'; p++) {
				if (++d > 18)
					return resp_bad(err, "a Content-Length too large");
				x = x * 10 + (uint64_t)(*p - '0');
			}
			if (!d || (*p && *p != ',' && *p != ' ' && *p != '\t'))
				return resp_bad(err, "an invalid Content-Length");
			if (r->n_cl++ && x != r->cl)
				r->cl_differs = true;
			r->cl = x;
		}
	} else if (strcasecmp(l, "Transfer-Encoding") == 0) {
		/* The last coding of the last header decides (RFC 9112 6.3). */
		r->te = true;
		r->te_chunked = list_has(v, "chunked", true);
	} else if (strcasecmp(l, "Connection") == 0) {
		r->conn_close = r->conn_close || list_has(v, "close", false);
		r->conn_keep_alive = r->conn_keep_alive || list_has(v, "keep-alive", false);
	}
	return 0;
}

/* The head is whole: where does its body end? */
static int head_done(moat_http_resp *r, moat_error *err)
{
	if (r->status < 200 && r->status != 101) {
		/* An interim response (100 Continue, 103 Early Hints): the real
		 * one follows on the same connection. */
		if (++r->interim > MOAT_HTTP_RESP_MAX_INTERIM)
			return resp_bad(err, "too many interim (1xx) responses");
		head_reset(r);
		return 0;
	}
	if (r->n_cl && r->cl_differs)
		return resp_bad(err, "two different Content-Length values");
	r->keep_alive = r->version_minor >= 1 ? !r->conn_close : r->conn_keep_alive && !r->conn_close;
	bool ambiguous = r->te && r->n_cl;
	if (r->status == 101) {
		r->close_delimited = true;
		r->state = RS_CLOSE;
	} else if (r->head_request || r->status == 204 || r->status == 304) {
		r->state = RS_DONE;
	} else if (r->te) {
		if (r->te_chunked) {
			r->state = RS_CK_SIZE;
			r->digits = 0;
			r->left = 0;
		} else {
			r->close_delimited = true;
			r->state = RS_CLOSE;
		}
	} else if (r->n_cl) {
		r->left = r->cl;
		r->state = r->cl ? RS_LENGTH : RS_DONE;
	} else {
		r->close_delimited = true;
		r->state = RS_CLOSE;
	}
	r->reusable = r->keep_alive && !r->close_delimited && !ambiguous;
	r->head_bytes = 0;
	return 0;
}

/* One complete line (CR and LF stripped) of a head or the trailers. */
static int line_done(moat_http_resp *r, moat_error *err)
{
	char *l = r->line;
	size_t n = r->line_len;
	l[n] = '\0';
	r->line_len = 0;
	if (r->state == RS_TRAILER) {
		if (n == 0)
			r->state = RS_DONE;
		return 0;
	}
	if (r->version_minor < 0)
		return status_line(r, l, n, err);
	if (n == 0)
		return head_done(r, err);
	return header_line(r, l, n, err);
}

int moat_http_resp_feed(moat_http_resp *r, const void *data, size_t len, size_t *ret_used, moat_error *err)
{
	const uint8_t *d = data;
	size_t i = 0;
	int ret;
	while (i < len && r->state != RS_DONE) {
		uint8_t b = d[i];
		switch (r->state) {
		case RS_HEAD:
		case RS_TRAILER:
			if (++r->head_bytes > MOAT_HTTP_RESP_MAX_HEAD)
				return moat_error_set(err, E2BIG, "the upstream's response head is larger than %d bytes",
						      MOAT_HTTP_RESP_MAX_HEAD);
			i++;
			if (b == '\n') {
				if (r->line_len == 0 || r->line[r->line_len - 1] != '\r')
					return resp_bad(err, "a bare LF");
				r->line_len--;
				if ((ret = line_done(r, err)) < 0)
					return ret;
				break;
			}
			if (r->line_len >= MOAT_HTTP_RESP_MAX_LINE)
				return moat_error_set(err, E2BIG, "a line of the upstream's response is longer than %d bytes",
						      MOAT_HTTP_RESP_MAX_LINE);
			if (b == 0 || (r->line_len && r->line[r->line_len - 1] == '\r'))
				return resp_bad(err, b ? "a bare CR" : "a NUL byte in the head");
			r->line[r->line_len++] = (char)b;
			break;
		case RS_LENGTH: {
			size_t take = len - i;
			if ((uint64_t)take > r->left)
				take = (size_t)r->left;
			r->left -= take;
			i += take;
			if (r->left == 0)
				r->state = RS_DONE;
			break;
		}
		case RS_CK_SIZE: {
			int v = moat__hexval(b);
			if (v >= 0) {
				if (++r->digits > 15)
					return resp_bad(err, "a chunk size of more than 15 digits");
				r->left = r->left << 4 | (uint64_t)v;
				i++;
				break;
			}
			if (r->digits == 0)
				return resp_bad(err, "a chunk size that is not a hexadecimal number");
			if (b == ';' || b == ' ' || b == '\t')
				r->state = RS_CK_EXT;
			else if (b == '\r')
				r->state = RS_CK_SIZE_LF;
			else
				return resp_bad(err, "a chunk size followed by something other than ';' or CRLF");
			i++;
			break;
		}
		case RS_CK_EXT:
			if (b == '\r')
				r->state = RS_CK_SIZE_LF;
			else if (b == '\n' || ++r->head_bytes > MOAT_HTTP_RESP_MAX_HEAD)
				return resp_bad(err, b == '\n' ? "a bare LF after a chunk size" : "chunk extensions too long");
			i++;
			break;
		case RS_CK_SIZE_LF:
			if (b != '\n')
				return resp_bad(err, "a bare CR after a chunk size");
			i++;
			r->digits = 0;
			if (r->left) {
				r->state = RS_CK_DATA;
			} else {
				r->state = RS_TRAILER;
				r->head_bytes = 0;
				r->line_len = 0;
			}
			break;
		case RS_CK_DATA: {
			size_t take = len - i;
			if ((uint64_t)take > r->left)
				take = (size_t)r->left;
			r->left -= take;
			i += take;
			if (r->left == 0)
				r->state = RS_CK_DATA_CR;
			break;
		}
		case RS_CK_DATA_CR:
			if (b != '\r')
				return resp_bad(err, "chunk data longer than its size");
			r->state = RS_CK_DATA_LF;
			i++;
			break;
		case RS_CK_DATA_LF:
			if (b != '\n')
				return resp_bad(err, "a bare CR after chunk data");
			r->state = RS_CK_SIZE;
			i++;
			break;
		case RS_CLOSE:
			i = len;
			break;
		}
	}
	*ret_used = i;
	return r->state == RS_DONE ? MOAT_PARSE_DONE : MOAT_PARSE_MORE;
}
