/* moatd's server loop (server.c): serves until SIGTERM or SIGINT. */
#pragma once

#include "moatd.h"

#include "moat-config.h"
#define MOATD_VERSION MOAT_VERSION

/* moat: the `moat` binary each run, session and exec is a process of;
 * openapi: the API description (YAML) served as JSON. */
int moatd_serve(moatd_config *cfg, const char *moat, const char *openapi, moat_error *err);

/* Detached execs (detach.c): a command in a session that outlives its
 * client and moatd, its state in STATE/execs/ID. */
#define MOATD_EXEC_ID_LEN 32
bool moatd_exec_id_valid(const char *s);

typedef struct moatd_detached_spec {
	const char *state;   /* moatd's state folder */
	const char *moat;    /* the moat binary */
	char **argv;         /* moat's argv: session exec ... --result FILE -- ... */
	char **command;      /* the command alone, for the record */
	const char *stdin_data;
	size_t stdin_len;
	uint64_t output_cap; /* stdout and stderr, each */
	const char *session; /* its id */
	const char *owner;   /* the caller's identity */
} moatd_detached_spec;

/* Starts one; the folder must not hold argv's --result yet (the caller
 * names it with moatd_detached_result_path). */
int moatd_detached_start(const moatd_detached_spec *sp, const char *id, moat_error *err);
/* A new exec id (hex), and where its result is to be written. */
int moatd_detached_new_id(char ret[MOATD_EXEC_ID_LEN + 1]);
/* {id, session, owner, argv, started, state: running|exited|lost,
 * exit_code, result, stdout, stderr (capped, with *_truncated)}. ENOENT
 * when there is no such exec. */
int moatd_detached_status(const char *state, const char *id, uint64_t output_cap, json_t **ret, moat_error *err);
/* Removes the records of session's execs that have ended (it was deleted;
 * their CPU time is charged first by the caller). */
void moatd_detached_forget(const char *state, const char *session);

/* A token's policy ceiling (ceiling.c): the request's policy (policy_json,
 * or the --profile among opts) with its limits and hosts (opts) must fit
 * in ceiling; EACCES naming the field when it asks for more, MOAT_EINPUT
 * when it is not a policy. *ret_yaml: the effective policy, narrowed where
 * the request left a field unsaid. */
struct moat_policy;
int moatd_ceiling_apply(const struct moat_policy *ceiling, bool session, const char *policy_json, char *const *opts,
			char **ret_yaml, moat_error *err);
/* Whether a policy can serve as a ceiling (its binds at their own path). */
int moatd_ceiling_check(const struct moat_policy *ceiling, moat_error *err);
