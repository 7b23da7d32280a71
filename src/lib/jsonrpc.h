/* JSON-RPC 2.0 as the Model Context Protocol carries it: framing of
 * newline-delimited messages with a cap on their size, decoding and
 * classification of one message, the ids a peer has in flight or used
 * lately, and the error objects. Pure: no I/O, so unit tests and fuzzers
 * call it directly; moat mcp serve and moat mcp wrap are built on it.
 *
 * Batches (a JSON array of messages) were part of MCP 2025-03-26 and were
 * removed in 2025-06-18; moat answers a batch with one Invalid Request
 * error instead of doing N calls of work for one message. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest message either side may send (a line of stdio or an HTTP
 * body). A tool call's code and files fit; a 100 MB message is refused
 * without being held. */
#define MOAT_JSONRPC_MAX_MESSAGE (4u << 20)
/* Ids of finished requests remembered to refuse their reuse. */
#define MOAT_JSONRPC_RECENT_IDS 1024
/* Requests in flight at once per peer. */
#define MOAT_JSONRPC_MAX_INFLIGHT 64
/* The longest string id accepted. */
#define MOAT_JSONRPC_MAX_ID 256

/* The error codes of JSON-RPC 2.0. */
#define MOAT_JSONRPC_PARSE_ERROR -32700
#define MOAT_JSONRPC_INVALID_REQUEST -32600
#define MOAT_JSONRPC_METHOD_NOT_FOUND -32601
#define MOAT_JSONRPC_INVALID_PARAMS -32602
#define MOAT_JSONRPC_INTERNAL_ERROR -32603

typedef enum moat_jsonrpc_kind {
	MOAT_JSONRPC_REQUEST = 1,  /* method and id */
	MOAT_JSONRPC_NOTIFICATION, /* method, no id */
	MOAT_JSONRPC_RESPONSE,     /* id and result or error */
	_MOAT_JSONRPC_KIND_MAX,
	_MOAT_JSONRPC_KIND_INVALID = -1,
} moat_jsonrpc_kind;

/* One decoded message. msg owns a reference; id and method point into it. */
typedef struct moat_jsonrpc_msg {
	moat_jsonrpc_kind kind;
	json_t *msg;
	json_t *id;         /* string or integer; NULL for a notification */
	const char *method; /* request and notification */
	json_t *params;     /* object, or NULL when absent */
} moat_jsonrpc_msg;

void moat_jsonrpc_msg_clear(moat_jsonrpc_msg *m);

/* Decodes one message of len bytes. Returns 0 with *ret filled, or a
 * JSON-RPC error code (negative) with *ret_error set to a static
 * description and *ret_id to the request's id when one could be read (a
 * new reference, or NULL: the error response then has id null). Invalid
 * UTF-8, a byte 0, a document that is not an object, a batch, a missing
 * or wrong "jsonrpc", a bad id (null, fractional, boolean, object, too
 * long), a method that is not a string and params that are not an object
 * are errors. */
int moat_jsonrpc_decode(const char *buf, size_t len, moat_jsonrpc_msg *ret, json_t **ret_id, const char **ret_error);

/* The id of a message that did not decode, read leniently ("id" then an
 * integer or a plain string of at most MOAT_JSONRPC_MAX_ID bytes), or
 * NULL. Used only to answer the peer waiting on that id with an error:
 * nothing of the message is passed on. */
json_t *moat_jsonrpc_salvage_id(const char *buf, size_t len);

/* {"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}} with
 * data when not NULL (stolen). id NULL: null. A new reference, or NULL on
 * allocation failure. */
json_t *moat_jsonrpc_error(json_t *id, int code, const char *message, json_t *data);
/* {"jsonrpc":"2.0","id":id,"result":result}; result is stolen. */
json_t *moat_jsonrpc_result(json_t *id, json_t *result);
/* {"jsonrpc":"2.0","method":method,"params":params}; params is stolen (may be NULL). */
json_t *moat_jsonrpc_notification(const char *method, json_t *params);
/* One line: the compact encoding and "\n". NULL on allocation failure. */
char *moat_jsonrpc_encode_line(const json_t *msg, size_t *ret_len);

/* Splits a byte stream into newline-delimited messages. A line longer
 * than max is not held: its bytes are dropped up to the next newline and
 * it is reported once as oversized. Empty lines (and a lone "\r" before
 * the newline) are skipped. */
typedef struct moat_jsonrpc_framer {
	char *buf;
	size_t len, cap, max;
	bool discarding; /* in the middle of an oversized line */
	uint64_t discarded; /* bytes of the line being dropped */
} moat_jsonrpc_framer;

void moat_jsonrpc_framer_init(moat_jsonrpc_framer *f, size_t max);
void moat_jsonrpc_framer_free(moat_jsonrpc_framer *f);
/* Called for each complete line (without its newline), or with line NULL
 * and len the size of an oversized line once its end is seen (or, when
 * it is still going, once it passes max). A negative return stops feed,
 * which returns it. */
typedef int (*moat_jsonrpc_line_fn)(void *userdata, const char *line, size_t len);
/* Feeds n bytes; returns 0, a negative errno (-ENOMEM) or the callback's
 * negative return. */
int moat_jsonrpc_framer_feed(moat_jsonrpc_framer *f, const char *data, size_t n, moat_jsonrpc_line_fn fn,
			     void *userdata);

/* The ids one peer has in flight, and the last MOAT_JSONRPC_RECENT_IDS it
 * finished: MCP forbids reusing an id within a session, and an id reused
 * while its first request runs would make their responses ambiguous. */
typedef struct moat_jsonrpc_ids {
	json_t *inflight[MOAT_JSONRPC_MAX_INFLIGHT];
	size_t n_inflight;
	json_t *recent[MOAT_JSONRPC_RECENT_IDS];
	size_t recent_next;
} moat_jsonrpc_ids;

void moat_jsonrpc_ids_init(moat_jsonrpc_ids *t);
void moat_jsonrpc_ids_free(moat_jsonrpc_ids *t);
/* Takes id into flight: 0, -EEXIST when it is in flight or was used
 * lately, -EAGAIN when MOAT_JSONRPC_MAX_INFLIGHT are in flight. */
int moat_jsonrpc_ids_begin(moat_jsonrpc_ids *t, json_t *id);
/* The request id has been answered (or cancelled): it moves to the recent
 * ones. Returns 0, or -ENOENT when it was not in flight. */
int moat_jsonrpc_ids_end(moat_jsonrpc_ids *t, const json_t *id);
/* Whether id is in flight. */
bool moat_jsonrpc_ids_inflight(const moat_jsonrpc_ids *t, const json_t *id);
/* Whether two ids are the same (the string "1" is not the number 1). */
bool moat_jsonrpc_id_equal(const json_t *a, const json_t *b);
