/* Bounded, incremental parsers for what a sandboxed client says to the
 * egress gateway first: an HTTP/1.x request head, a TLS ClientHello (for its
 * server name), or a SOCKS5 greeting and request. The proxy engine feeds
 * them bytes as they arrive; they never read past a cap, never allocate
 * more than the cap, and refuse every input two servers could read in two
 * ways (request smuggling). Pure functions apart from the parser's own
 * buffer.
 *
 * Feeding functions return MOAT_PARSE_MORE (0) when they need more bytes,
 * MOAT_PARSE_DONE (1) when the message is complete, or a negative errno
 * (-EBADMSG malformed or ambiguous, -E2BIG over a cap, -ENOTSUP a valid
 * request the gateway does not serve) with the reason in err. */
#pragma once

#include "error.h"
#include "hostname.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOAT_PARSE_MORE 0
#define MOAT_PARSE_DONE 1

/* ---- HTTP/1.x request head ---------------------------------------------- */

#define MOAT_HTTP_MAX_LINE 8192      /* request line or one header line */
#define MOAT_HTTP_MAX_HEAD 65536     /* whole head, CRLFs included */
#define MOAT_HTTP_MAX_HEADERS 128
#define MOAT_HTTP_MAX_METHOD 32

typedef enum moat_http_target_form {
	MOAT_HTTP_ORIGIN_FORM = 0, /* "/path?q" with a Host header */
	MOAT_HTTP_ABSOLUTE_FORM,   /* "http://host[:port]/path?q" (plain proxying) */
	MOAT_HTTP_AUTHORITY_FORM,  /* "host:port" (CONNECT) */
	MOAT_HTTP_ASTERISK_FORM,   /* "*" (OPTIONS) */
	_MOAT_HTTP_TARGET_FORM_MAX,
	_MOAT_HTTP_TARGET_FORM_INVALID = -1,
} moat_http_target_form;

typedef enum moat_http_body {
	MOAT_HTTP_BODY_NONE = 0,  /* no body follows the head */
	MOAT_HTTP_BODY_LENGTH,    /* content_length bytes follow */
	MOAT_HTTP_BODY_CHUNKED,   /* Transfer-Encoding: chunked */
	_MOAT_HTTP_BODY_MAX,
	_MOAT_HTTP_BODY_INVALID = -1,
} moat_http_body;

typedef struct moat_http_header {
	const char *name; /* points into the parser's buffer, NUL-terminated */
	const char *value; /* leading and trailing whitespace removed */
} moat_http_header;

typedef struct moat_http_request {
	char method[MOAT_HTTP_MAX_METHOD + 1];
	moat_http_target_form form;
	const char *target;  /* the request target as sent */
	/* Where the request goes: from the absolute URL or CONNECT authority,
	 * else from the Host header. port defaults to 80. */
	moat_host host;
	uint16_t port;
	/* Origin-form path and query ("/" for CONNECT and "*"). Points into the
	 * parser's buffer. */
	const char *path;
	int version_minor;   /* HTTP/1.0 or HTTP/1.1 */
	moat_http_header headers[MOAT_HTTP_MAX_HEADERS];
	size_t n_headers;
	moat_http_body body;
	uint64_t content_length;
	bool connection_close; /* HTTP/1.0 without keep-alive, or Connection: close */
	bool expect_continue;
	bool upgrade;          /* an Upgrade header is present */
	size_t head_len;       /* bytes of the head, the final CRLFCRLF included */
} moat_http_request;

typedef struct moat_http_parser moat_http_parser;

moat_http_parser *moat_http_parser_new(void);
void moat_http_parser_free(moat_http_parser *p);
static inline void moat_http_parser_freep(moat_http_parser **p) { moat_http_parser_free(*p); }
#define _cleanup_http_parser_ _cleanup_(moat_http_parser_freep)
/* Ready for the next request on the same connection. */
void moat_http_parser_reset(moat_http_parser *p);
/* Feeds bytes. *ret_consumed receives how many of them belong to the head;
 * on MOAT_PARSE_DONE the rest is body or the next request. */
int moat_http_parser_feed(moat_http_parser *p, const void *data, size_t len,
			  size_t *ret_consumed, moat_error *err);
/* The parsed head; valid after MOAT_PARSE_DONE until reset or free. */
const moat_http_request *moat_http_parser_request(const moat_http_parser *p);
/* Value of the first header with this name (case-insensitive), or NULL. */
const char *moat_http_request_header(const moat_http_request *r, const char *name);

/* ---- chunked request bodies ----------------------------------------------- */

/* A chunked request body (RFC 9112 section 7.1), followed byte by byte as
 * it streams through, so that the gateway forwards exactly the body and
 * not one byte of what follows it (a second, smuggled request). Strict:
 * hexadecimal sizes of at most 15 digits without spaces or signs, CRLF
 * only, chunk extensions of at most MOAT_CHUNKED_MAX_EXT bytes without
 * control bytes, and no trailer fields (they would be headers the rules
 * never saw). */
#define MOAT_CHUNKED_MAX_EXT 1024

typedef struct moat_chunked {
	int state;
	uint64_t size;     /* of the chunk being read */
	unsigned digits;
	size_t ext_len;
	uint64_t body;     /* data bytes so far, for the caller's caps */
} moat_chunked;

void moat_chunked_init(moat_chunked *c);
/* Feeds bytes that follow the ones fed before. *ret_used receives how many
 * of them belong to the body: all of them on MOAT_PARSE_MORE, up to the
 * final CRLF on MOAT_PARSE_DONE. -EBADMSG with the reason in err when the
 * framing is malformed. */
int moat_chunked_feed(moat_chunked *c, const void *data, size_t len, size_t *ret_used, moat_error *err);

/* ---- TLS ClientHello ------------------------------------------------------ */

#define MOAT_TLS_MAX_HELLO 32768 /* handshake message cap, across records */

typedef struct moat_tls_hello {
	bool has_sni;
	char sni[MOAT_HOST_MAX + 1]; /* raw host_name as sent (normalise it) */
	bool has_ech;                /* an ECH (any draft) or ESNI extension: the name is hidden */
	bool has_alpn_h2;
	uint16_t legacy_version;
	size_t bytes;                /* bytes of records that carried the hello */
} moat_tls_hello;

/* Parses the records at the start of a TLS stream. Call it again with the
 * whole buffer received so far whenever more bytes arrive; a ClientHello
 * split across several handshake records is reassembled (within
 * MOAT_TLS_MAX_HELLO). Refuses non-handshake records before the hello,
 * SSLv2 hellos, bad lengths, duplicate extensions and server_name lists
 * that are not exactly one host_name. */
int moat_tls_hello_parse(const void *data, size_t len, moat_tls_hello *ret, moat_error *err);

/* ---- SOCKS5 (RFC 1928) --------------------------------------------------- */

#define MOAT_SOCKS5_REP_SUCCEEDED 0x00
#define MOAT_SOCKS5_REP_FAILURE 0x01
#define MOAT_SOCKS5_REP_NOT_ALLOWED 0x02
#define MOAT_SOCKS5_REP_NET_UNREACHABLE 0x03
#define MOAT_SOCKS5_REP_HOST_UNREACHABLE 0x04
#define MOAT_SOCKS5_REP_REFUSED 0x05
#define MOAT_SOCKS5_REP_TTL_EXPIRED 0x06
#define MOAT_SOCKS5_REP_CMD_NOT_SUPPORTED 0x07
#define MOAT_SOCKS5_REP_ATYP_NOT_SUPPORTED 0x08

/* The greeting: version 5 and the client's methods. *ret_noauth tells
 * whether "no authentication" was offered; the reply is then 05 00, else
 * 05 FF (moat_socks5_greeting_reply). */
int moat_socks5_greeting_parse(const void *data, size_t len, size_t *ret_used, bool *ret_noauth,
			       moat_error *err);
void moat_socks5_greeting_reply(bool accept, uint8_t ret[2]);

typedef struct moat_socks5_request {
	uint8_t cmd;         /* always CONNECT (1) on success */
	bool is_domain;
	char domain[256];    /* raw name as sent when is_domain (normalise it) */
	moat_addr addr;      /* when !is_domain */
	uint16_t port;
} moat_socks5_request;

/* The request. BIND and UDP ASSOCIATE are refused with -ENOTSUP and
 * *ret_reply = MOAT_SOCKS5_REP_CMD_NOT_SUPPORTED; unknown address types
 * with MOAT_SOCKS5_REP_ATYP_NOT_SUPPORTED; malformed input with
 * MOAT_SOCKS5_REP_FAILURE. */
int moat_socks5_request_parse(const void *data, size_t len, size_t *ret_used,
			      moat_socks5_request *ret, uint8_t *ret_reply, moat_error *err);
/* The 10-byte reply with the bound address 0.0.0.0:0. */
void moat_socks5_reply(uint8_t rep, uint8_t ret[10]);
