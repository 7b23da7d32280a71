/* Redaction of a stream that arrives in chunks (the command's stdout and
 * stderr, a terminal recording): the output is exactly what moat_redact
 * would make of the whole stream at once, whatever the cut.
 *
 * At each position the longest value that matches wins (moat_redact's
 * rule). A position whose answer depends on bytes not read yet (what is
 * left is a proper prefix of some value, and no longer value has already
 * matched) is held back, with everything after it, until the next chunk
 * or the flush decides it. What is held is thus shorter than the longest
 * value registered (at most MOAT_REDACT_MAX_VALUE - 1 bytes), and
 * nothing is held when nothing could be the start of a value. Pure. */
#pragma once

#include "redact.h"

#include <stddef.h>

typedef struct moat_redact_stream {
	const moat_redactor *red; /* borrowed; may gain values between chunks */
	char *held;               /* the undecided tail, owned */
	size_t held_len;
} moat_redact_stream;

#define MOAT_REDACT_STREAM_INIT(r) ((moat_redact_stream){.red = (r)})

/* Takes buf[0..len) and returns in *ret (malloc'd, NUL-terminated, *ret_len
 * bytes; possibly empty) what can be written now, redacted. Returns the
 * number of values replaced, or -ENOMEM (the stream is then unchanged). */
int moat_redact_stream_feed(moat_redact_stream *st, const char *buf, size_t len, char **ret, size_t *ret_len);
/* The end of the stream: what is held, redacted (a value cut short by the
 * end is no value). The stream is empty afterwards and can be reused. */
int moat_redact_stream_flush(moat_redact_stream *st, char **ret, size_t *ret_len);
/* Bytes held back now. */
static inline size_t moat_redact_stream_held(const moat_redact_stream *st) { return st->held_len; }
void moat_redact_stream_done(moat_redact_stream *st);
