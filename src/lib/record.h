/* Terminal recording in asciicast v2 (the format asciinema plays): a header
 * line {"version":2,"width","height","timestamp","env"}, then one
 * [seconds, "o"|"i", "text"] line per chunk of output or input. Every line is
 * written with jansson; secret values are redacted with the audit log's
 * redactor; a UTF-8 character or a secret value cut across two chunks is held
 * back until the next chunk completes it, so neither is ever split (a split
 * character would be mangled, a split secret would escape redaction). */
#pragma once

#include "error.h"
#include "redact.h"

#include <stdint.h>

typedef struct moat_record moat_record;

typedef struct moat_record_header {
	unsigned width, height; /* 0: 80x24 */
	const char *term;       /* TERM, or NULL */
	const char *shell;      /* SHELL, or NULL */
	const char *command;    /* what was run, or NULL */
	const char *title;      /* or NULL */
} moat_record_header;

/* Creates (truncating) path, never through a symlink, mode 0600, and writes
 * the header. red may be NULL and must outlive the recording. */
int moat_record_open(const char *path, const moat_record_header *h, const moat_redactor *red, moat_record **ret,
		     moat_error *err);
/* stream 'o' (output) or 'i' (input). */
int moat_record_write(moat_record *r, char stream, const void *buf, size_t len, moat_error *err);
/* Writes what was held back, fsyncs and closes. Accepts NULL. */
int moat_record_close(moat_record *r, moat_error *err);
static inline void moat_record_closep(moat_record **r) { moat_record_close(*r, NULL); }
#define _cleanup_record_ _cleanup_(moat_record_closep)

/* ---- Pure parts ---- */

/* How many leading bytes of buf can be written now: the rest is an
 * incomplete UTF-8 sequence or the beginning of a secret value. */
size_t moat_record_cut(const moat_redactor *red, const char *buf, size_t len);
/* Copies buf with every byte that is not part of valid UTF-8 replaced by
 * U+FFFD, so that a binary stream still yields valid JSON strings. */
int moat_utf8_sanitize(const char *buf, size_t len, char **ret, size_t *ret_len);
/* One event line (no newline) for time t seconds. */
char *moat_record_format_event(double t, char stream, const char *utf8, size_t len);
