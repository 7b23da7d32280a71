/* The spec of one command a sandbox's init starts (MOAT_CTL_SPAWN): its
 * argv, its whole environment, its working directory and whether it gets a
 * terminal. It has no size bound a message could hold, so it travels in a
 * sealed memfd passed with the command's streams; the init reads it with a
 * cap on every size (docs/architecture.md).
 *
 *   header: magic "MSPC", version, flags, argc, envc (uint32 each), then
 *   the terminal's rows and columns (uint16 each; 0 without a terminal)
 *   then argc, envc and one more NUL-terminated strings: the arguments,
 *   the NAME=VALUE entries, the working directory ("" for the default).
 *
 * Pure: encoding and decoding touch nothing but memory. */
#pragma once

#include "config.h"
#include "error.h"

#include <stddef.h>
#include <stdint.h>

#define MOAT_SPAWNSPEC_MAGIC 0x4350534du /* "MSPC" */
#define MOAT_SPAWNSPEC_VERSION 2u
/* Caps, checked on both sides: the arguments as many and as large as an
 * execve takes on a default stack (ARG_MAX is a quarter of an 8 MiB
 * stack), the environment as config.h bounds it plus the variables moat
 * sets itself. */
#define MOAT_SPAWNSPEC_MAX_ARGS MOAT_MAX_ARGS
#define MOAT_SPAWNSPEC_MAX_ENV (MOAT_MAX_ENV + 64)
#define MOAT_SPAWNSPEC_MAX_BYTES ((size_t)(4u << 20))

typedef enum moat_spawnspec_flags {
	MOAT_SPAWNSPEC_TTY = 1u << 0,
} moat_spawnspec_flags;

typedef struct moat_spawnspec {
	char **argv; /* NULL-terminated; point into the decoded buffer */
	char **envp; /* NULL-terminated */
	const char *cwd; /* NULL: the sandbox's default */
	unsigned flags;
	uint16_t rows, cols; /* with MOAT_SPAWNSPEC_TTY: the terminal's size, or 0 */
} moat_spawnspec;

/* Encodes into a malloc'ed buffer. cwd may be NULL. EINVAL for an empty
 * argv, an env entry without '=' or a cwd that is not a clean absolute
 * path, or a size without a terminal; E2BIG over a cap. */
int moat__spawnspec_encode(char *const *argv, char *const *envp, const char *cwd, unsigned flags, uint16_t rows,
			   uint16_t cols, char **ret_buf, size_t *ret_len, moat_error *err);
/* Decodes buf (len bytes, len <= MOAT_SPAWNSPEC_MAX_BYTES): ret's strings
 * point into buf, which must outlive ret; its two arrays are allocated.
 * Refuses, with EBADMSG and what is wrong, anything encode would not have
 * made. */
int moat__spawnspec_decode(char *buf, size_t len, moat_spawnspec *ret, moat_error *err);
void moat__spawnspec_done(moat_spawnspec *s);
