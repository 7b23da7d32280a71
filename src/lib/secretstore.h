/* The secret store: a run's secret values, held by the supervisor and never
 * by anything in the sandbox.
 *
 * The sandbox's init is a clone of the supervisor without CLONE_VM: it gets
 * a copy of every page the supervisor has, and a process in the sandbox
 * that can read the init's memory would find any value held there. So the
 * values are read, before the clone, straight into an anonymous mapping
 * marked MADV_WIPEONFORK (the kernel gives a child zero-filled pages there),
 * and a value taken from the environment is wiped from this process's own
 * environment block, which the init would otherwise inherit. Only after the
 * clone (moat_secrets_arm) do copies reach ordinary memory: the redactors
 * of the audit log, the recording and the output, and the gateway.
 *
 * The sandbox gets a placeholder per secret (secrets.h) in the variable the
 * policy names. */
#pragma once

#include "config.h"
#include "error.h"
#include "policy.h"
#include "redact.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct moat_audit;

typedef struct moat_secrets moat_secrets;

/* Reads the value of every secret of p (env:VAR, then removed from this
 * process's environment and wiped; file:PATH, one trailing newline
 * dropped) and makes a placeholder for each. Fails naming the secret when
 * a variable is unset, a file unreadable, or a value empty or longer than
 * MOAT_SECRET_VALUE_MAX. A policy without secrets gives *ret = NULL. */
int moat_secrets_open(const moat_policy *p, moat_secrets **ret, moat_error *err);
void moat_secrets_free(moat_secrets *s);
static inline void moat_secrets_freep(moat_secrets **s) { moat_secrets_free(*s); }
#define _cleanup_secrets_ _cleanup_(moat_secrets_freep)

/* Puts each placeholder into c's environment under the secret's variable.
 * Refuses a run whose environment would carry a secret's value
 * (--env VAR for a secret from env:VAR) or sets a secret's variable
 * itself. */
int moat_secrets_apply_env(const moat_secrets *s, moat_config *c, moat_error *err);

/* After the sandbox's init was cloned: the values become usable. Each is
 * registered with the audit log's redactor (which the recording shares)
 * and the store's own (moat_secrets_redactor), and the expiry clocks
 * start. audit may be NULL. */
int moat_secrets_arm(moat_secrets *s, struct moat_audit *audit, moat_error *err);

/* Redacts every value (after moat_secrets_arm; before, nothing). */
const moat_redactor *moat_secrets_redactor(const moat_secrets *s);

size_t moat_secrets_count(const moat_secrets *s);
/* The i-th secret's policy entry and placeholder. */
const moat_secret *moat_secrets_entry(const moat_secrets *s, size_t i);
const char *moat_secrets_placeholder(const moat_secrets *s, size_t i);
/* Its value, NUL-terminated, or NULL before moat_secrets_arm and for a
 * honeytoken. */
const char *moat_secrets_value(const moat_secrets *s, size_t i, size_t *ret_len);
/* The value's base64 and URL-encoded forms (secrets.h), once armed. */
char *const *moat_secrets_forms(const moat_secrets *s, size_t i, size_t *ret_n);
/* Milliseconds since moat_secrets_arm, for expires. */
uint64_t moat_secrets_age_ms(const moat_secrets *s);
/* Injections of the i-th secret so far, for max_uses; safe from any
 * thread. */
uint64_t moat_secrets_uses(const moat_secrets *s, size_t i);
void moat_secrets_count_use(moat_secrets *s, size_t i);
