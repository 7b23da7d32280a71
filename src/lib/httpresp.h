/* Follows an HTTP/1.x response as it streams from an upstream server, to
 * find where it ends, so that the connection it came on can carry another
 * request (the gateway's keep-alive inside terminated TLS, and its pool of
 * upstream connections). Pure: bytes in, a count and a verdict out; the
 * response itself is forwarded untouched by the caller.
 *
 * The framing is RFC 9112 section 6.3's: no body after a response to HEAD
 * or a 1xx, 204 or 304 (an interim 1xx is followed by the real response,
 * which is followed in turn); a chunked body to its last chunk and
 * trailers; a Content-Length body; anything else ends when the server
 * closes. A head that could be framed two ways (Content-Length and
 * Transfer-Encoding, two different lengths, a Transfer-Encoding that does
 * not end in chunked) is followed as the safest reading and marked
 * reusable = false: neither connection carries another request after it. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOAT_HTTP_RESP_MAX_LINE 8192   /* status line, one header or trailer line */
#define MOAT_HTTP_RESP_MAX_HEAD 65536  /* one head, or the trailers, in all */
#define MOAT_HTTP_RESP_MAX_INTERIM 16  /* 1xx responses before the final one */

typedef struct moat_http_resp {
	int state;
	bool head_request; /* the request was HEAD: the response has no body */
	/* Of the final response, once its head is read. */
	int status;
	bool keep_alive;      /* the server keeps the connection open after it */
	bool close_delimited; /* its body ends when the server closes */
	bool reusable;        /* framed without ambiguity and kept alive */
	/* Reading a head. */
	int version_minor;
	unsigned interim;
	size_t head_bytes;
	unsigned n_cl;
	uint64_t cl;
	bool cl_differs, te, te_chunked, conn_close, conn_keep_alive;
	size_t line_len;
	char line[MOAT_HTTP_RESP_MAX_LINE + 1];
	/* Reading a body. */
	uint64_t left;
	unsigned digits;
} moat_http_resp;

/* Ready for the response to one request (head_request: it was HEAD). */
void moat_http_resp_init(moat_http_resp *r, bool head_request);

/* Feeds the response's next bytes. *ret_used receives how many belong to
 * it: all on MOAT_PARSE_MORE, up to its last byte on MOAT_PARSE_DONE (what
 * follows is not part of it). A close-delimited body takes every byte and
 * never ends here. -EBADMSG or -E2BIG with the reason in err when the
 * response cannot be followed; the caller then relays the rest until the
 * server closes, and reuses neither connection. */
int moat_http_resp_feed(moat_http_resp *r, const void *data, size_t len, size_t *ret_used, moat_error *err);
