/* The delegation socket's one message (docs/nested.md): a `moat run`
 * inside a sandbox whose policy has exec.delegate asks the sandbox's front,
 * through /run/moat/ctl, for a sibling sandbox no wider than this one.
 *
 * Pure: encoding and decoding with a cap on every size. The socket is
 * SOCK_SEQPACKET; a request is one message with exactly three descriptors
 * (the command's stdin, stdout and stderr) by SCM_RIGHTS; the answer is
 * one moat_nest_reply. There is no other message type. */
#pragma once

#include "error.h"

#include <stddef.h>
#include <stdint.h>

#define MOAT_NEST_SOCKET_DIR "/run/moat"
#define MOAT_NEST_SOCKET "/run/moat/ctl"
#define MOAT_NEST_MAGIC 0x4d4e5354u /* "MNST" */
#define MOAT_NEST_VERSION 1u
#define MOAT_NEST_MAX_MSG (64 * 1024)
#define MOAT_NEST_MAX_ARGS 256
/* Nested runs of one sandbox served at once (connections included). */
#define MOAT_NEST_MAX_RUNS 4 /* "busy" message in nested.c says 4 */

enum {
	MOAT_NEST_RUN = 1,  /* inside -> front: run this, narrower */
	MOAT_NEST_EXIT = 2, /* front -> inside: its exit status (125 and why when refused) */
};

typedef struct moat_nest_hdr {
	uint32_t magic, version, type, n_args;
} moat_nest_hdr;

typedef struct moat_nest_reply {
	uint32_t magic, version, type;
	int32_t status;
	char error[512]; /* NUL-terminated; empty when the run took place */
} moat_nest_reply;

typedef struct moat_nest_request {
	char *yaml;  /* the inner run's effective policy */
	char *cwd;   /* "" when none */
	char **argv; /* NULL-terminated, at least one word */
} moat_nest_request;

/* A RUN message: header, then the policy, the cwd and each argument, each
 * NUL-terminated. Fails when it would pass MOAT_NEST_MAX_MSG. */
int moat_nest_encode(const char *yaml, const char *cwd, char *const *argv, char **ret, size_t *ret_len,
		     moat_error *err);
/* Checks every field (magic, version, type, counts, sizes, terminators)
 * and copies the strings out. Fails naming the first problem. */
int moat_nest_decode(const void *buf, size_t len, moat_nest_request *ret, moat_error *err);
void moat_nest_request_done(moat_nest_request *r);
