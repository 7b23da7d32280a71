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
