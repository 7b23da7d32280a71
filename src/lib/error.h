/* The error object every libmoat call fills on failure: an errno and a
 * message. Callers add context as the error rises, so the user reads
 * "mount /data read-only: No such file or directory", never a bare errno.
 * Library code never prints and never exits. */
#pragma once

#include "util.h"

#define MOAT_ERROR_MAX 1024

typedef struct moat_error {
	int code;               /* positive errno, 0 when no error */
	char msg[MOAT_ERROR_MAX]; /* human text without the errno string */
	bool said;              /* msg already names the reason: no errno text */
} moat_error;

/* Sets the error and returns -code (so `return moat_error_set(...)` works).
 * code may be given negative or positive. */
int moat_error_set(moat_error *err, int code, const char *fmt, ...) _printf_(3, 4);
/* Like moat_error_set, for a message that already names the reason (one
 * formatted further down, e.g. by the sandbox's init): code is kept for the
 * callers that act on it, and moat_error_format appends nothing. */
int moat_error_set_said(moat_error *err, int code, const char *fmt, ...) _printf_(3, 4);
/* Like moat_error_set, but the message says the system call failed:
 * the errno string is appended when formatted. */
#define moat_error_errno moat_error_set
/* Prefixes context to an existing message: "ctx: old". Returns -code. */
int moat_error_wrap(moat_error *err, const char *fmt, ...) _printf_(2, 3);
/* "msg: strerror(code)" or just "msg" when code is 0 or MOAT_EINPUT, or the
 * message already carries the reason (moat_error_set_said). */
const char *moat_error_format(const moat_error *err, char *buf, size_t len);
void moat_error_clear(moat_error *err);

/* Errors about the user's input (bad option, bad policy) carry this code:
 * they have no errno text, the message says it all. */
#define MOAT_EINPUT 0x10000
