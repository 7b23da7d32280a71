/* Parsers for the first bytes a client sends the gateway. See proxyproto.h.
 *
 * The HTTP parser is a small strict one rather than http-parser (packaged
 * in Debian but unmaintained upstream and lenient by design: obs-fold, bare
 * LF and duplicate Content-Length are accepted by default). The gateway only
 * needs the head, and it needs every ambiguity refused, not tolerated. */
#include "proxyproto.h"

#include <string.h>
#include <strings.h>

/* ---- HTTP/1.x request head ---------------------------------------------- */

struct moat_http_parser {
	size_t len;        /* bytes held in buf */
	size_t seen;       /* bytes fed since the last reset, skipped ones included */
	size_t skipped;    /* leading CRLF pairs dropped */
	bool done;
	moat_http_request req;
	char pathbuf[MOAT_HTTP_MAX_LINE + 2];
	char buf[MOAT_HTTP_MAX_HEAD + 1];
};

moat_http_parser *moat_http_parser_new(void)
{
	return calloc(1, sizeof(moat_http_parser));
}

void moat_http_parser_free(moat_http_parser *p) { free(p); }

void moat_http_parser_reset(moat_http_parser *p)
{
	p->len = p->seen = p->skipped = 0;
	p->done = false;
	memset(&p->req, 0, sizeof(p->req));
}

const moat_http_request *moat_http_parser_request(const moat_http_parser *p)
{
	return p->done ? &p->req : NULL;
}

const char *moat_http_request_header(const moat_http_request *r, const char *name)
{
	for (size_t i = 0; i < r->n_headers; i++)
		if (strcasecmp(r->headers[i].name, name) == 0)
			return r->headers[i].value;
	return NULL;
}

static bool is_tchar(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Header names compared after '_' is read as '-': some servers (CGI, some
 * frameworks) fold them, so "Transfer_Encoding" must be judged like
 * "Transfer-Encoding" or it slips past the framing checks. */
static bool name_is(const char *name, const char *want)
{
	for (; *name && *want; name++, want++) {
		char a = *name == '_' ? '-' : *name;
		if ((a | 0x20) != (*want | 0x20))
			return false;
	}
	return *name == *want;
}

static bool has_token(const char *list, const char *tok)
{
	size_t tl = strlen(tok);
	const char *p = list;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *e = p;
		while (*e && *e != ',')
			e++;
		const char *t = e;
		while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		if ((size_t)(t - p) == tl && strncasecmp(p, tok, tl) == 0)
			return true;
		p = e;
	}
	return false;
}

static int bad(moat_error *err, const char *msg)
{
	return moat_error_set(err, EBADMSG, "%s", msg);
}

/* Puts context before an error a host parser set, and marks the request as
 * malformed. */
static int bad_wrap(moat_error *err, const char *ctx)
{
	moat_error_wrap(err, "%s", ctx);
	if (err)
		err->code = EBADMSG;
	return -EBADMSG;
}

static int parse_request_line(moat_http_parser *p, char *line, size_t len, moat_error *err)
{
	moat_http_request *r = &p->req;
	char *sp1 = memchr(line, ' ', len);
	if (!sp1 || sp1 == line)
		return bad(err, "malformed request line");
	size_t ml = (size_t)(sp1 - line);
	if (ml > MOAT_HTTP_MAX_METHOD)
		return bad(err, "request method is too long");
	for (size_t i = 0; i < ml; i++)
		if (!is_tchar((unsigned char)line[i]))
			return bad(err, "request method is not a token");
	memcpy(r->method, line, ml);
	r->method[ml] = '\0';

	char *target = sp1 + 1;
	char *sp2 = memchr(target, ' ', len - ml - 1);
	if (!sp2 || sp2 == target)
		return bad(err, "malformed request line (one space between method, target and version)");
	char *version = sp2 + 1;
	size_t vl = len - (size_t)(version - line);
	if (vl == 8 && memcmp(version, "HTTP/1.1", 8) == 0)
		r->version_minor = 1;
	else if (vl == 8 && memcmp(version, "HTTP/1.0", 8) == 0)
		r->version_minor = 0;
	else
		return bad(err, "unsupported HTTP version (HTTP/1.0 and HTTP/1.1 only)");
	*sp2 = '\0';
	for (char *c = target; *c; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
			return bad(err, "request target holds a control, space or non-ASCII byte");
	r->target = target;
	return 0;
}

/* moat_authority_parse for an authority as the client sent it: its host
 * must be spelt as it is judged (moat_host_wire_check). */
static int wire_authority(const char *in, size_t len, uint16_t default_port, moat_host *ret_host, uint16_t *ret_port,
			  moat_error *err)
{
	if (moat_host_wire_check(in, len, err) < 0)
		return -EINVAL;
	return moat_authority_parse(in, len, default_port, ret_host, ret_port, err);
}

/* Splits the target into host, port and path. */
static int parse_target(moat_http_parser *p, moat_error *err)
{
	moat_http_request *r = &p->req;
	const char *t = r->target;
	size_t tl = strlen(t);
	bool connect = strcmp(r->method, "CONNECT") == 0;

	if (connect) {
		r->form = MOAT_HTTP_AUTHORITY_FORM;
		if (wire_authority(t, tl, 0, &r->host, &r->port, err) < 0)
			return bad_wrap(err, "CONNECT target");
		r->path = "/";
		return 1; /* host known */
	}
	if (t[0] == '/') {
		r->form = MOAT_HTTP_ORIGIN_FORM;
		if (strchr(t, '#'))
			return bad(err, "request target holds a fragment");
		r->path = t;
		return 0; /* host from the Host header */
	}
	if (strcmp(t, "*") == 0) {
		if (strcmp(r->method, "OPTIONS") != 0)
			return bad(err, "asterisk-form target is only for OPTIONS");
		r->form = MOAT_HTTP_ASTERISK_FORM;
		r->path = "/";
		return 0;
	}

	const char *colon = strstr(t, "://");
	if (!colon)
		return bad(err, "request target is neither a path, an absolute URL nor host:port");
	size_t sl = (size_t)(colon - t);
	if (sl != 4 || strncasecmp(t, "http", 4) != 0)
		return moat_error_set(err, ENOTSUP, "scheme \"%.*s\" is not proxied (use CONNECT for https)",
				      (int)(sl > 16 ? 16 : sl), t);
	r->form = MOAT_HTTP_ABSOLUTE_FORM;
	const char *auth = colon + 3;
	size_t al = strcspn(auth, "/?#\\");
	/* URL parsers disagree on a backslash after the host (WHATWG reads
	 * it as '/', others as part of the authority). */
	if (auth[al] == '\\')
		return bad(err, "request URL holds a backslash in or after its host");
	if (auth[al] == '#')
		return bad(err, "request target holds a fragment");
	if (wire_authority(auth, al, 80, &r->host, &r->port, err) < 0)
		return bad_wrap(err, "request URL");
	const char *rest = auth + al;
	if (strchr(rest, '#'))
		return bad(err, "request target holds a fragment");
	if (rest[0] == '/') {
		r->path = rest;
	} else {
		/* "http://host" or "http://host?q": the path is "/". */
		snprintf(p->pathbuf, sizeof(p->pathbuf), "/%s", rest);
		r->path = p->pathbuf;
	}
	return 1;
}

static int parse_content_length(const char *v, uint64_t *ret, moat_error *err)
{
	uint64_t n = 0;
	size_t l = strlen(v);
	/* "5, 5" and "+5" are read differently by different servers. */
	if (l == 0 || l > 18)
		return bad(err, "invalid Content-Length");
	for (size_t i = 0; i < l; i++) {
		if (v[i] < '0' || v[i] > '9')
			return bad(err, "invalid Content-Length");
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	*ret = n;
	return 0;
}

static int parse_head(moat_http_parser *p, size_t head_len, moat_error *err)
{
	moat_http_request *r = &p->req;
	char *buf = p->buf;
	size_t pos = 0;
	int n_cl = 0, n_te = 0, n_host = 0, host_known;
	const char *host_value = NULL;
	bool keep_alive = false, close = false;

	/* Every line ends in CRLF; a bare CR or LF anywhere is refused, since
	 * servers disagree on where such a line ends. */
	for (size_t i = 0; i < head_len; i++) {
		if (buf[i] == '\r' && (i + 1 >= head_len || buf[i + 1] != '\n'))
			return bad(err, "bare CR in request head");
		if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
			return bad(err, "bare LF in request head");
		if (buf[i] == '\0')
			return bad(err, "NUL byte in request head");
	}

	for (int lineno = 0;; lineno++) {
		char *line = buf + pos;
		char *crlf = memmem(line, head_len - pos, "\r\n", 2);
		if (!crlf)
			return bad(err, "truncated request head");
		size_t len = (size_t)(crlf - line);
		*crlf = '\0';
		pos += len + 2;
		if (len > MOAT_HTTP_MAX_LINE)
			return moat_error_set(err, E2BIG, "a request line or header is longer than %d bytes",
					      MOAT_HTTP_MAX_LINE);
		if (lineno == 0) {
			if (len == 0)
				return bad(err, "empty request line");
			int ret = parse_request_line(p, line, len, err);
			if (ret < 0)
				return ret;
			continue;
		}
		if (len == 0)
			break;
		if (line[0] == ' ' || line[0] == '\t')
			return bad(err, "obsolete line folding in a header");
		char *colon = memchr(line, ':', len);
		if (!colon || colon == line)
			return bad(err, "header line without a name");
		for (char *c = line; c < colon; c++)
			if (!is_tchar((unsigned char)*c))
				return bad(err, "header name is not a token (no space before ':')");
		*colon = '\0';
		char *v = colon + 1, *e = line + len;
		while (v < e && (*v == ' ' || *v == '\t'))
			v++;
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		*e = '\0';
		for (char *c = v; c < e; c++)
			if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f)
				return bad(err, "control character in a header value");
		if (r->n_headers >= MOAT_HTTP_MAX_HEADERS)
			return moat_error_set(err, E2BIG, "more than %d headers", MOAT_HTTP_MAX_HEADERS);
		r->headers[r->n_headers].name = line;
		r->headers[r->n_headers].value = v;
		r->n_headers++;

		if (name_is(line, "Content-Length")) {
			if (n_cl++)
				return bad(err, "more than one Content-Length header");
			if (strcasecmp(line, "Content-Length") != 0)
				return bad(err, "Content-Length header spelt with '_'");
			int ret = parse_content_length(v, &r->content_length, err);
			if (ret < 0)
				return ret;
		} else if (name_is(line, "Transfer-Encoding")) {
			if (n_te++)
				return bad(err, "more than one Transfer-Encoding header");
			if (strcasecmp(line, "Transfer-Encoding") != 0)
				return bad(err, "Transfer-Encoding header spelt with '_'");
			/* Only a lone "chunked" is read the same way by every
			 * server; lists, "identity" and misspellings are the
			 * classic smuggling vectors (CVE-2019-18277 and kin). */
			if (strcasecmp(v, "chunked") != 0)
				return bad(err, "Transfer-Encoding other than a single \"chunked\"");
		} else if (name_is(line, "Host")) {
			if (n_host++)
				return bad(err, "more than one Host header");
			host_value = v;
		} else if (strcasecmp(line, "Connection") == 0) {
			close = close || has_token(v, "close");
			keep_alive = keep_alive || has_token(v, "keep-alive");
		} else if (strcasecmp(line, "Expect") == 0) {
			r->expect_continue = strcasecmp(v, "100-continue") == 0;
		} else if (strcasecmp(line, "Upgrade") == 0) {
			r->upgrade = true;
		}
	}

	if (n_cl && n_te)
		return bad(err, "both Content-Length and Transfer-Encoding");
	if (n_te && r->version_minor == 0)
		return bad(err, "Transfer-Encoding in an HTTP/1.0 request");

	host_known = parse_target(p, err);
	if (host_known < 0)
		return host_known;
	if (host_known) {
		/* The Host header and the target must name the same place: a
		 * proxy that checks one while the server obeys the other is a
		 * bypass. */
		if (host_value) {
			moat_host h;
			uint16_t port;
			if (wire_authority(host_value, strlen(host_value), r->port, &h, &port, err) < 0)
				return bad_wrap(err, "Host header");
			/* A CONNECT's Host is never forwarded, and some clients
			 * (Node's http.Agent) name the proxy there, which only
			 * listens on loopback: that names no other target and is
			 * no ambiguity. Any other Host must match the target. */
			bool names_proxy = r->form == MOAT_HTTP_AUTHORITY_FORM &&
					   ((h.is_literal && moat_addr_classify_addr(&h.addr, NULL) == MOAT_ADDR_LOOPBACK) ||
					    strcmp(h.name, "localhost") == 0);
			if (!names_proxy && (strcmp(h.name, r->host.name) != 0 || port != r->port))
				return bad(err, "Host header disagrees with the request target");
		}
	} else if (r->form == MOAT_HTTP_ORIGIN_FORM || r->form == MOAT_HTTP_ASTERISK_FORM) {
		if (!host_value)
			return bad(err, "request without a Host header");
		if (wire_authority(host_value, strlen(host_value), 80, &r->host, &r->port, err) < 0)
			return bad_wrap(err, "Host header");
	}
	if (r->version_minor == 1 && !host_value && r->form != MOAT_HTTP_ABSOLUTE_FORM &&
	    r->form != MOAT_HTTP_AUTHORITY_FORM)
		return bad(err, "HTTP/1.1 request without a Host header");

	if (n_te)
		r->body = MOAT_HTTP_BODY_CHUNKED;
	else if (n_cl && r->content_length > 0)
		r->body = MOAT_HTTP_BODY_LENGTH;
	else
		r->body = MOAT_HTTP_BODY_NONE;
	r->connection_close = close || (r->version_minor == 0 && !keep_alive);
	r->head_len = p->skipped * 2 + head_len;
	return 0;
}

int moat_http_parser_feed(moat_http_parser *p, const void *data, size_t len, size_t *ret_consumed,
			  moat_error *err)
{
	const char *d = data;
	size_t before = p->seen, used = 0;

	*ret_consumed = 0;
	if (p->done)
		return MOAT_PARSE_DONE;

	while (used < len) {
		/* RFC 9112 2.2: a server SHOULD ignore at least one empty line
		 * before the request line (clients add one after a body). Two
		 * are skipped; more make an empty request line. */
		if (p->len == 0 && (d[used] == '\r' || d[used] == '\n') && p->skipped < 2) {
			if (d[used] == '\n')
				return bad(err, "bare LF before the request line");
			/* Hold the CR until its LF shows. */
			p->buf[p->len++] = d[used++];
			p->seen++;
			continue;
		}
		if (p->len == 1 && p->buf[0] == '\r' && p->skipped < 2) {
			if (d[used] != '\n')
				return bad(err, "bare CR before the request line");
			used++;
			p->seen++;
			p->len = 0;
			p->skipped++;
			continue;
		}
		size_t room = MOAT_HTTP_MAX_HEAD - p->len;
		size_t take = len - used < room ? len - used : room;
		size_t old = p->len;
		memcpy(p->buf + p->len, d + used, take);
		p->len += take;
		size_t from = old >= 3 ? old - 3 : 0;
		char *end = memmem(p->buf + from, p->len - from, "\r\n\r\n", 4);
		/* A head with bare LFs never ends in CRLFCRLF: say so at once
		 * rather than wait for the deadline with the client hanging.
		 * Only the head's own bytes are looked at, not a body after it. */
		size_t limit = end ? (size_t)(end - p->buf) + 4 : p->len;
		for (size_t i = old; i < limit; i++)
			if (p->buf[i] == '\n' && (i == 0 || p->buf[i - 1] != '\r'))
				return bad(err, "bare LF in request head (lines must end in CRLF)");
		if (end) {
			size_t head_len = (size_t)(end - p->buf) + 4;
			size_t mine = head_len - old;
			used += mine;
			p->seen += mine;
			p->len = head_len;
			p->buf[head_len] = '\0';
			*ret_consumed = p->seen - before;
			int r = parse_head(p, head_len, err);
			if (r < 0)
				return r;
			p->done = true;
			return MOAT_PARSE_DONE;
		}
		used += take;
		p->seen += take;
		if (p->len >= MOAT_HTTP_MAX_HEAD)
			return moat_error_set(err, E2BIG, "request head is longer than %d bytes",
					      MOAT_HTTP_MAX_HEAD);
		/* Refuse an overlong line as soon as it is one, not when the
		 * head finally ends. */
		const char *nl = memrchr(p->buf, '\n', p->len);
		size_t line = nl ? p->len - (size_t)(nl - p->buf) - 1 : p->len;
		if (line > MOAT_HTTP_MAX_LINE + 1)
			return moat_error_set(err, E2BIG, "a request line or header is longer than %d bytes",
					      MOAT_HTTP_MAX_LINE);
	}
	*ret_consumed = p->seen - before;
	return MOAT_PARSE_MORE;
}

/* ---- chunked request bodies ----------------------------------------------- */

enum {
	CK_SIZE = 0, /* hex digits of a chunk size */
	CK_EXT,      /* ";name=value" after the size */
	CK_SIZE_LF,  /* the LF after the size line's CR */
	CK_DATA,
	CK_DATA_CR,  /* the CRLF after a chunk's data */
	CK_DATA_LF,
	CK_LAST_CR,  /* after the last chunk: CRLF (trailers are refused) */
	CK_LAST_LF,
	CK_DONE,
};

void moat_chunked_init(moat_chunked *c)
{
	memset(c, 0, sizeof(*c));
}

static int ck_bad(moat_error *err, const char *why)
{
	moat_error_set(err, EBADMSG, "chunked request body: %s", why);
	return -EBADMSG;
}

int moat_chunked_feed(moat_chunked *c, const void *data, size_t len, size_t *ret_used, moat_error *err)
{
	const uint8_t *d = data;
	size_t i = 0;
	while (i < len && c->state != CK_DONE) {
		uint8_t b = d[i];
		switch (c->state) {
		case CK_SIZE: {
			int v = moat__hexval(b);
			if (v >= 0) {
				/* 15 digits keep the size below 2^60: no overflow. */
				if (++c->digits > 15)
					return ck_bad(err, "chunk size has more than 15 digits");
				c->size = c->size << 4 | (uint64_t)v;
				i++;
				break;
			}
			if (c->digits == 0)
				return ck_bad(err, "chunk size is not a hexadecimal number");
			if (b == ';') {
				c->state = CK_EXT;
				c->ext_len = 0;
			} else if (b == '\r') {
				c->state = CK_SIZE_LF;
			} else {
				return ck_bad(err, "chunk size is followed by something other than ';' or CRLF");
			}
			i++;
			break;
		}
		case CK_EXT:
			if (b == '\r') {
				c->state = CK_SIZE_LF;
			} else if ((b < 0x20 && b != '\t') || b == 0x7f) {
				return ck_bad(err, b == '\n' ? "bare LF after a chunk size" : "control byte in a chunk extension");
			} else if (++c->ext_len > MOAT_CHUNKED_MAX_EXT) {
				return ck_bad(err, "chunk extension is too long");
			}
			i++;
			break;
		case CK_SIZE_LF:
			if (b != '\n')
				return ck_bad(err, "bare CR after a chunk size");
			i++;
			c->digits = 0;
			c->state = c->size ? CK_DATA : CK_LAST_CR;
			break;
		case CK_DATA: {
			size_t take = len - i;
			if ((uint64_t)take > c->size)
				take = (size_t)c->size;
			c->size -= take;
			c->body += take;
			i += take;
			if (c->size == 0)
				c->state = CK_DATA_CR;
			break;
		}
		case CK_DATA_CR:
			if (b != '\r')
				return ck_bad(err, b == '\n' ? "bare LF after chunk data" : "chunk data is longer than its size");
			c->state = CK_DATA_LF;
			i++;
			break;
		case CK_DATA_LF:
			if (b != '\n')
				return ck_bad(err, "bare CR after chunk data");
			c->state = CK_SIZE;
			i++;
			break;
		case CK_LAST_CR:
			if (b != '\r')
				return ck_bad(err, "trailer fields are not proxied");
			c->state = CK_LAST_LF;
			i++;
			break;
		case CK_LAST_LF:
			if (b != '\n')
				return ck_bad(err, "bare CR at the end of the body");
			c->state = CK_DONE;
			i++;
			break;
		}
	}
	*ret_used = i;
	return c->state == CK_DONE ? MOAT_PARSE_DONE : MOAT_PARSE_MORE;
}

/* ---- TLS ClientHello ------------------------------------------------------ */

#define TLS_RECORD_MAX 16384 /* RFC 8446 5.1: plaintext records */

typedef struct reader {
	const uint8_t *p;
	size_t len, off;
} reader;

static bool rd_u8(reader *r, uint8_t *v)
{
	if (r->len - r->off < 1)
		return false;
	*v = r->p[r->off++];
	return true;
}

static bool rd_u16(reader *r, uint16_t *v)
{
	if (r->len - r->off < 2)
		return false;
	*v = (uint16_t)(r->p[r->off] << 8 | r->p[r->off + 1]);
	r->off += 2;
	return true;
}

static bool rd_bytes(reader *r, size_t n, reader *sub)
{
	if (r->len - r->off < n)
		return false;
	sub->p = r->p + r->off;
	sub->len = n;
	sub->off = 0;
	r->off += n;
	return true;
}

static int tls_bad(moat_error *err, const char *msg)
{
	return moat_error_set(err, EBADMSG, "TLS ClientHello: %s", msg);
}

static int parse_sni(reader *ext, moat_tls_hello *h, moat_error *err)
{
	uint16_t list_len, name_len;
	reader list, name;
	uint8_t type;

	if (!rd_u16(ext, &list_len) || list_len != ext->len - ext->off || !rd_bytes(ext, list_len, &list))
		return tls_bad(err, "malformed server_name extension");
	/* Exactly one host_name: RFC 6066 forbids two of one type, and a
	 * second name is a way to show the gateway one host and the server
	 * another. */
	if (!rd_u8(&list, &type) || type != 0 || !rd_u16(&list, &name_len) || !rd_bytes(&list, name_len, &name))
		return tls_bad(err, "server_name must hold exactly one host_name");
	if (list.off != list.len)
		return tls_bad(err, "server_name must hold exactly one host_name");
	if (name_len == 0 || name_len > MOAT_HOST_MAX)
		return tls_bad(err, "server name is empty or too long");
	if (memchr(name.p, '\0', name_len))
		return tls_bad(err, "server name holds a NUL byte");
	memcpy(h->sni, name.p, name_len);
	h->sni[name_len] = '\0';
	h->has_sni = true;
	return 0;
}

/* Extensions that carry the real server name encrypted, so that the SNI
 * in the clear proves nothing about where a tunnel leads. Every code point
 * deployed clients have used is refused, not only the final one. */
static bool hides_name(uint16_t type)
{
	switch (type) {
	case 0xfe0d: /* encrypted_client_hello, draft-13 onwards and the RFC */
	case 0xfe0c: /* draft-12 */
	case 0xfe0b: /* draft-11 */
	case 0xfe0a: /* draft-10 (Chrome and Firefox experiments) */
	case 0xfe09: /* draft-09 */
	case 0xfe08: /* draft-08 (Cloudflare's first deployment) */
	case 0xfd00: /* ech_outer_extensions: only in a hello built for ECH */
	case 0xffce: /* encrypted_server_name, ESNI (Firefox, Cloudflare 2018-2020) */
		return true;
	default:
		return false;
	}
}

static int parse_hello_body(reader *m, moat_tls_hello *h, moat_error *err)
{
	uint16_t ver, cs_len, ext_len;
	uint8_t sid_len, comp_len;
	reader skip, exts;
	uint16_t seen[128];
	size_t n_seen = 0;

	if (!rd_u16(m, &ver) || !rd_bytes(m, 32, &skip))
		return tls_bad(err, "truncated");
	h->legacy_version = ver;
	if (!rd_u8(m, &sid_len) || sid_len > 32 || !rd_bytes(m, sid_len, &skip))
		return tls_bad(err, "bad session id");
	if (!rd_u16(m, &cs_len) || cs_len < 2 || cs_len % 2 || !rd_bytes(m, cs_len, &skip))
		return tls_bad(err, "bad cipher suites");
	if (!rd_u8(m, &comp_len) || comp_len < 1 || !rd_bytes(m, comp_len, &skip))
		return tls_bad(err, "bad compression methods");
	if (m->off == m->len)
		return 0; /* no extensions, so no server name */
	if (!rd_u16(m, &ext_len) || ext_len != m->len - m->off || !rd_bytes(m, ext_len, &exts))
		return tls_bad(err, "extensions do not fill the message");
	while (exts.off < exts.len) {
		uint16_t type, len;
		reader ext;
		if (!rd_u16(&exts, &type) || !rd_u16(&exts, &len) || !rd_bytes(&exts, len, &ext))
			return tls_bad(err, "truncated extension");
		for (size_t i = 0; i < n_seen; i++)
			if (seen[i] == type)
				return tls_bad(err, "duplicate extension");
		if (n_seen == ELEMENTSOF(seen))
			return tls_bad(err, "too many extensions");
		seen[n_seen++] = type;
		if (type == 0) {
			int r = parse_sni(&ext, h, err);
			if (r < 0)
				return r;
		} else if (hides_name(type)) {
			h->has_ech = true;
		} else if (type == 16) {
			uint16_t l;
			uint8_t pl;
			reader protos, proto;
			if (!rd_u16(&ext, &l) || l != ext.len - ext.off || !rd_bytes(&ext, l, &protos))
				return tls_bad(err, "malformed ALPN extension");
			while (protos.off < protos.len) {
				if (!rd_u8(&protos, &pl) || pl == 0 || !rd_bytes(&protos, pl, &proto))
					return tls_bad(err, "malformed ALPN extension");
				if (pl == 2 && memcmp(proto.p, "h2", 2) == 0)
					h->has_alpn_h2 = true;
			}
		}
	}
	return 0;
}

int moat_tls_hello_parse(const void *data, size_t len, moat_tls_hello *ret, moat_error *err)
{
	const uint8_t *d = data;
	uint8_t hs[MOAT_TLS_MAX_HELLO];
	size_t hs_len = 0, off = 0;
	moat_tls_hello h = { 0 };

	if (len >= 1 && d[0] != 22) {
		if (d[0] & 0x80)
			return tls_bad(err, "SSLv2-style hello is not accepted");
		return moat_error_set(err, EBADMSG, "not a TLS handshake (first byte 0x%02x)", d[0]);
	}
	for (;;) {
		if (len - off < 5)
			return MOAT_PARSE_MORE;
		const uint8_t *rec = d + off;
		size_t rl = (size_t)rec[3] << 8 | rec[4];
		if (rec[0] != 22)
			return tls_bad(err, "a record other than handshake before the hello ended");
		if (rec[1] != 3)
			return tls_bad(err, "unknown record version");
		if (rl == 0 || rl > TLS_RECORD_MAX)
			return tls_bad(err, "bad record length");
		if (len - off - 5 < rl)
			return MOAT_PARSE_MORE;
		if (hs_len + rl > sizeof(hs))
			return moat_error_set(err, E2BIG, "TLS ClientHello is longer than %d bytes", MOAT_TLS_MAX_HELLO);
		memcpy(hs + hs_len, rec + 5, rl);
		hs_len += rl;
		off += 5 + rl;

		if (hs_len >= 1 && hs[0] != 1)
			return tls_bad(err, "first handshake message is not a ClientHello");
		if (hs_len < 4)
			continue;
		size_t ml = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
		if (ml + 4 > sizeof(hs))
			return moat_error_set(err, E2BIG, "TLS ClientHello is longer than %d bytes", MOAT_TLS_MAX_HELLO);
		if (hs_len < ml + 4)
			continue;
		/* The client sends nothing after its hello until the server
		 * answers; bytes after it in the same record are refused. */
		if (hs_len != ml + 4)
			return tls_bad(err, "data after the ClientHello in its record");
		reader m = { .p = hs + 4, .len = ml, .off = 0 };
		int r = parse_hello_body(&m, &h, err);
		if (r < 0)
			return r;
		h.bytes = off;
		*ret = h;
		return MOAT_PARSE_DONE;
	}
}

/* ---- SOCKS5 ---------------------------------------------------------------- */

int moat_socks5_greeting_parse(const void *data, size_t len, size_t *ret_used, bool *ret_noauth,
			       moat_error *err)
{
	const uint8_t *d = data;
	if (len < 1)
		return MOAT_PARSE_MORE;
	if (d[0] != 5)
		return moat_error_set(err, EBADMSG, "SOCKS version %u is not accepted (only 5)", d[0]);
	if (len < 2)
		return MOAT_PARSE_MORE;
	if (d[1] == 0)
		return moat_error_set(err, EBADMSG, "SOCKS5 greeting offers no method");
	if (len < 2u + d[1])
		return MOAT_PARSE_MORE;
	bool noauth = false;
	for (size_t i = 0; i < d[1]; i++)
		noauth = noauth || d[2 + i] == 0;
	*ret_noauth = noauth;
	*ret_used = 2u + d[1];
	return MOAT_PARSE_DONE;
}

void moat_socks5_greeting_reply(bool accept, uint8_t ret[2])
{
	ret[0] = 5;
	ret[1] = accept ? 0x00 : 0xFF;
}

int moat_socks5_request_parse(const void *data, size_t len, size_t *ret_used, moat_socks5_request *ret,
			      uint8_t *ret_reply, moat_error *err)
{
	const uint8_t *d = data;
	moat_socks5_request q = { 0 };
	size_t need;

	*ret_reply = MOAT_SOCKS5_REP_FAILURE;
	if (len >= 1 && d[0] != 5)
		return moat_error_set(err, EBADMSG, "SOCKS5 request with version %u", d[0]);
	if (len >= 2 && d[1] != 1) {
		if (d[1] == 2 || d[1] == 3) {
			*ret_reply = MOAT_SOCKS5_REP_CMD_NOT_SUPPORTED;
			return moat_error_set(err, ENOTSUP, "SOCKS5 %s is not supported (CONNECT only)",
					      d[1] == 2 ? "BIND" : "UDP ASSOCIATE");
		}
		*ret_reply = MOAT_SOCKS5_REP_CMD_NOT_SUPPORTED;
		return moat_error_set(err, EBADMSG, "unknown SOCKS5 command %u", d[1]);
	}
	if (len >= 3 && d[2] != 0)
		return moat_error_set(err, EBADMSG, "SOCKS5 reserved byte is not zero");
	if (len < 4)
		return MOAT_PARSE_MORE;
	switch (d[3]) {
	case 1:
		need = 4 + 4 + 2;
		if (len < need)
			return MOAT_PARSE_MORE;
		q.addr.family = AF_INET;
		memcpy(q.addr.bytes, d + 4, 4);
		break;
	case 4:
		need = 4 + 16 + 2;
		if (len < need)
			return MOAT_PARSE_MORE;
		q.addr.family = AF_INET6;
		memcpy(q.addr.bytes, d + 4, 16);
		break;
	case 3:
		if (len < 5)
			return MOAT_PARSE_MORE;
		if (d[4] == 0)
			return moat_error_set(err, EBADMSG, "SOCKS5 request with an empty domain name");
		need = 5u + d[4] + 2;
		if (len < need)
			return MOAT_PARSE_MORE;
		if (memchr(d + 5, '\0', d[4]))
			return moat_error_set(err, EBADMSG, "SOCKS5 domain name holds a NUL byte");
		q.is_domain = true;
		memcpy(q.domain, d + 5, d[4]);
		q.domain[d[4]] = '\0';
		break;
	default:
		*ret_reply = MOAT_SOCKS5_REP_ATYP_NOT_SUPPORTED;
		return moat_error_set(err, ENOTSUP, "SOCKS5 address type %u is not supported", d[3]);
	}
	q.port = (uint16_t)(d[need - 2] << 8 | d[need - 1]);
	if (q.port == 0)
		return moat_error_set(err, EBADMSG, "SOCKS5 request for port 0");
	q.cmd = 1;
	*ret = q;
	*ret_used = need;
	*ret_reply = MOAT_SOCKS5_REP_SUCCEEDED;
	return MOAT_PARSE_DONE;
}

void moat_socks5_reply(uint8_t rep, uint8_t ret[10])
{
	memset(ret, 0, 10);
	ret[0] = 5;
	ret[1] = rep;
	ret[3] = 1; /* IPv4 0.0.0.0:0 */
}
