/* Secrets, the pure part: placeholders and where they appear. A sandbox
 * never holds a secret's value, only a placeholder that is random per run
 * and secret, recognisable ("moat_ph_github_3f9c...") so that the gateway
 * and people reading a log can tell it apart from a real credential, and as
 * long as the value it stands for, so that a client checking a token's
 * length accepts it. Functions of their input only; the store that reads
 * values and keeps them out of the sandbox is secretstore.h. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOAT_PLACEHOLDER_PREFIX "moat_ph_"
/* Random hex digits in every placeholder at least: 128 bits, so that a
 * placeholder cannot be guessed from outside the sandbox either. */
#define MOAT_PLACEHOLDER_MIN_RANDOM 32
/* The longest placeholder (and so the longest value a placeholder's length
 * follows; a longer value gets a placeholder of this length). */
#define MOAT_PLACEHOLDER_MAX 512
/* The longest secret value moat takes: one page, more than any API token. */
#define MOAT_SECRET_VALUE_MAX 4096

/* The length of the placeholder for a secret named name whose value is
 * value_len bytes long: the value's length, but never shorter than the
 * prefix, the name, '_' and MOAT_PLACEHOLDER_MIN_RANDOM digits, nor longer
 * than MOAT_PLACEHOLDER_MAX. */
size_t moat_placeholder_len(const char *name, size_t value_len);

/* Writes the placeholder for name: the prefix, the name in lower case with
 * '-' as '_', '_', then hex digits taken from rnd (one digit per byte, its
 * low four bits) up to len bytes. rnd holds at least len bytes. out has
 * room for len + 1. -EINVAL when len is shorter than
 * moat_placeholder_len(name, 0) or longer than MOAT_PLACEHOLDER_MAX. */
int moat_placeholder_format(const char *name, const uint8_t *rnd, size_t len, char *out, size_t out_size);

/* Whether buf[0..len) holds something that starts like a placeholder
 * ("moat_ph_", in any letter case and also percent-encoded as
 * "moat%5Fph%5F"), at *ret_off when found. Used to tell misuse of any
 * placeholder, including one of a secret this run does not know. */
bool moat_placeholder_seen(const char *buf, size_t len, size_t *ret_off);

struct moat_secret; /* policy.h */

/* What the gateway does with one secret for one request. */
typedef enum moat_secret_action {
	MOAT_SECRET_SKIP = 0, /* not for this request: nothing to do */
	MOAT_SECRET_INJECT,   /* the real value goes in */
	MOAT_SECRET_REFUSE,   /* bound here, but not now: expired, used up, or not this method or path */
	MOAT_SECRET_MISUSE,   /* the placeholder goes where the secret is not bound: refused, and an alert */
	_MOAT_SECRET_ACTION_MAX,
	_MOAT_SECRET_ACTION_INVALID = -1,
} moat_secret_action;

/* One request as the secrets see it. */
typedef struct moat_secret_request {
	const char *host;   /* normalised */
	const char *method; /* NULL: not visible (a tunnel's host name only) */
	const char *path;   /* origin form as sent; NULL: not visible */
	bool tls;           /* terminated TLS: the only way a value may leave */
	bool ph_in_headers; /* the secret's placeholder is in some header value */
	bool ph_elsewhere;  /* in the request target, the host name, or a body */
	uint64_t age_ms;    /* since the values were armed */
	uint64_t uses;      /* injections so far */
} moat_secret_request;

/* Decides, with the reason (naming the secret, never a value) in reason.
 * A value is injected only over terminated TLS, to a bound host, for a
 * bound method and path, before expiry and within max_uses; a placeholder
 * anywhere else (another host, plain HTTP, a URL, a host name, a body) is
 * misuse, as is any use of a honeytoken. A secret with inject.header is
 * injected into every request that matches its binding; one without, only
 * where its placeholder appears in a header. */
moat_secret_action moat_secret_decide(const struct moat_secret *s, const moat_secret_request *q, char *reason,
				      size_t reason_len);

/* value with every occurrence of from replaced by to, in *ret (NULL when
 * there is none). Returns the count, or -ENOMEM. */
int moat_secret_replace(const char *value, const char *from, const char *to, char **ret);
/* format with "{value}" replaced by value ("{value}" alone when format is
 * NULL); NULL when out of memory. */
char *moat_secret_format(const char *format, const char *value);

/* For a response that may echo injected values back (an API reflecting its
 * request headers): copies buf[0..len) to *ret (*ret_len bytes, malloc'd)
 * with every values[k] replaced by masks[k], which must be as long as it
 * (the response's framing counts bytes). Returns how many bytes of buf were
 * used: all when final, else all but the longest end that could begin a
 * value, which the caller passes again with what follows. -ENOMEM. */
long moat_secret_unecho(char *const *values, char *const *masks, size_t n, const char *buf, size_t len, bool final,
			char **ret, size_t *ret_len);

/* How many encoded forms moat_secret_forms gives at most. */
#define MOAT_SECRET_FORMS 3

/* The encoded forms a value may travel in besides itself: base64
 * (padded), base64url (unpadded), and percent-encoding, each only where it
 * differs from the value and the forms before it. Each is malloc'd; returns
 * how many, or -ENOMEM (nothing to free then). */
int moat_secret_forms(const char *value, char *ret[MOAT_SECRET_FORMS]);
