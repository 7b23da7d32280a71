/* Redaction of secret values from everything moat writes down: audit events,
 * terminal recordings, captured output. The secrets store registers each
 * value under its name; every occurrence of a value then reads
 * "[REDACTED:NAME]". Pure: a redactor is a list of (name, value) pairs and
 * every function here is a function of its input. */
#pragma once

#include "error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Caps: how many secrets one redactor holds, and how long a value may be.
 * Longer values are refused rather than silently not redacted. */
#define MOAT_REDACT_MAX_SECRETS 256
#define MOAT_REDACT_MAX_VALUE 8192
#define MOAT_REDACT_MAX_NAME 64

typedef struct moat_redactor moat_redactor;

moat_redactor *moat_redactor_new(void);
void moat_redactor_free(moat_redactor *r);
static inline void moat_redactor_freep(moat_redactor **r) { moat_redactor_free(*r); }
#define _cleanup_redactor_ _cleanup_(moat_redactor_freep)

/* Registers value under name. name is [A-Za-z0-9_.-]+, so that the marker
 * cannot itself be read two ways; value is non-empty. Adding the same value
 * twice keeps the first name. */
int moat_redactor_add(moat_redactor *r, const char *name, const char *value, moat_error *err);
size_t moat_redactor_count(const moat_redactor *r);

/* Copies buf[0..len) with every secret value replaced by its marker; where
 * two values overlap at the same position the longer one wins. *ret is
 * NUL-terminated (and may hold NULs of buf). Returns the number of
 * replacements, or -ENOMEM. r may be NULL (plain copy). */
int moat_redact(const moat_redactor *r, const char *buf, size_t len, char **ret, size_t *ret_len);

/* For streams cut into chunks: the length of the longest suffix of buf that
 * is a proper prefix of some secret value. A writer holds those bytes back
 * until the next chunk shows whether the secret completes. */
size_t moat_redact_holdback(const moat_redactor *r, const char *buf, size_t len);

/* The decision at buf[i] of a stream that may go on past buf[len): which
 * value starts there (MOAT_REDACT_MATCH, its length and name set), none
 * (MOAT_REDACT_NONE), or not known before more bytes come
 * (MOAT_REDACT_MORE: what is left is a proper prefix of a value longer
 * than any that matches). With final, the end is the end: never MORE.
 * For redactstream.h. */
typedef enum { MOAT_REDACT_NONE, MOAT_REDACT_MATCH, MOAT_REDACT_MORE } moat_redact_verdict;
moat_redact_verdict moat_redact_decide(const moat_redactor *r, const char *buf, size_t len, size_t i, bool final,
				       size_t *ret_len, const char **ret_name);

/* Redacts every string in j (object keys, values, array members), in place.
 * Returns the number of replacements or -ENOMEM. */
int moat_redact_json(const moat_redactor *r, json_t *j);
