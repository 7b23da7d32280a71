/* moatd: the HTTP API in front of libmoat (docs/api.md). This header holds
 * its pure parts, which the unit tests and the fuzz target call directly:
 * the router, the request decoders, the configuration and the roles. The
 * server (server.c) touches the system; everything here is a function of
 * its input. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "poolplan.h"

/* Caps on what a request may hold (every size a client controls has one). */
#define MOATD_MAX_ARGV 256
#define MOATD_MAX_ARG 65536
#define MOATD_MAX_ENV 128
#define MOATD_MAX_FILES 64
#define MOATD_MAX_PATH 1024
#define MOATD_ID_MAX 64
#define MOATD_MAX_TOKENS 1024
#define MOATD_MAX_IDS 64

typedef enum moatd_route {
	MOATD_R_HEALTH,
	MOATD_R_METRICS,
	MOATD_R_OPENAPI,
	MOATD_R_RUN,
	MOATD_R_JUDGE,
	MOATD_R_SESSION_CREATE,
	MOATD_R_SESSION_LIST,
	MOATD_R_SESSION_GET,
	MOATD_R_SESSION_DELETE,
	MOATD_R_SESSION_EXEC,
	MOATD_R_SESSION_AUDIT,
	MOATD_R_SESSION_FILE_PUT,
	MOATD_R_SESSION_FILE_GET,
	MOATD_R_SESSION_EXEC_GET,
	MOATD_R_APPROVAL_LIST,
	MOATD_R_APPROVAL_DECIDE,
	_MOATD_R_MAX,
	MOATD_R_NOT_FOUND = -1,
	MOATD_R_BAD_METHOD = -2, /* the path exists, not with this method */
} moatd_route;

/* The route for method and path (the path without its query). A session's
 * id or name is copied into ret_id. */
moatd_route moatd_route_match(const char *method, const char *path, char ret_id[MOATD_ID_MAX + 1]);
/* As moatd_route_match; ret_sub gets the path's second key (an exec's id
 * under a session, an approval's id), checked for its shape. */
moatd_route moatd_route_match_sub(const char *method, const char *path, char ret_id[MOATD_ID_MAX + 1],
				  char ret_sub[MOATD_ID_MAX + 1]);
const char *moatd_route_name(moatd_route r);
/* Whether a route changes something (it is then an audit event). */
bool moatd_route_changes(moatd_route r);

typedef enum moatd_role {
	MOATD_ROLE_NONE,
	MOATD_ROLE_VIEWER,
	MOATD_ROLE_AGENT,
	MOATD_ROLE_OPERATOR,
	MOATD_ROLE_ADMIN,
	_MOATD_ROLE_MAX,
} moatd_role;
const char *moatd_role_name(moatd_role r);
moatd_role moatd_role_from_name(const char *s);
/* Whether role may call route at all; a session's owner is checked apart
 * (moatd_may_touch_session). */
bool moatd_role_allows(moatd_role role, moatd_route route);
/* Whether a caller may exec in, read or delete a session another identity
 * (owner; NULL: made outside moatd) created. */
bool moatd_may_touch_session(moatd_role role, const char *identity, const char *owner);

/* What a request body asks for, decoded and checked. */
typedef enum moatd_body_kind {
	MOATD_BODY_RUN,
	MOATD_BODY_SESSION,
	MOATD_BODY_EXEC,
	MOATD_BODY_JUDGE,
} moatd_body_kind;

typedef struct moatd_file {
	char *path; /* absolute, inside the sandbox */
	char *data;
	size_t len;
} moatd_file;

typedef struct moatd_request {
	char **opts;      /* options for `moat run` / `moat session ...`, each "--name=value" */
	char *policy;     /* an inline policy, as JSON text, or NULL */
	char **argv;      /* the command */
	char *stdin_data; /* NULL: none */
	size_t stdin_len;
	moatd_file *files;
	size_t n_files;
	char *source;     /* judge: the program's text */
	char *source_name; /* judge: its file name (solution.py) */
	char *cases;      /* judge: the cases, as JSON Lines */
	bool wait;        /* exec: stream the output (true) */
} moatd_request;

/* Decodes body as kind for a caller of role. Errors: MOAT_EINPUT (400) with
 * a message naming the field; EACCES (403) for a field the role may not use;
 * EMSGSIZE for a value over its cap. */
int moatd_request_decode(moatd_body_kind kind, moatd_role role, const char *body, size_t len, moatd_request *ret,
			 moat_error *err);
void moatd_request_done(moatd_request *r);

/* POST /v1/approvals/{id}: {decision: approve|deny, kind: once|for|session,
 * for: DURATION, scope: exact|path|host, note, reason} to the request a
 * keeper's approvals take ({op, id, kind, for_ms, scope, note | reason}).
 * Errors name the field (MOAT_EINPUT). */
int moatd_decision_decode(const char *id, const char *body, size_t len, json_t **ret, moat_error *err);

/* The HTTP status for a keeper's refusal of a decision (its negative
 * errno): 400 for bad input (EINVAL, E2BIG), 409 when the approval was
 * decided or timed out between moatd's look at the list and the decision
 * (EALREADY), 500 for the rest. */
int moatd_decision_status(int keeper_rc);

/* Whether the limit options among opts (as decoded: "--time=5s") are each
 * at most ceil's; EACCES naming the field otherwise. An agent may narrow
 * its profile's limits, never lift them. */
struct moat_limits;
int moatd_limits_within(char *const *opts, const struct moat_limits *ceil, moat_error *err);

/* Base64 (RFC 4648, padded). decode: MOAT_EINPUT on anything else. */
int moatd_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len);
char *moatd_base64_encode(const void *buf, size_t len);
bool moatd_utf8_valid(const char *s, size_t len);
/* A JSON value for bytes: {"data": text} when UTF-8 without NUL, else
 * {"data_base64": ...}, set on obj under the given key names. */
int moatd_json_set_bytes(json_t *obj, const char *key, const char *key_b64, const char *buf, size_t len);

/* The daemon's configuration (docs/api.md, "Configuration"). */
typedef struct moatd_ids {
	uint32_t v[MOATD_MAX_IDS];
	size_t n;
} moatd_ids;

typedef struct moatd_quota {
	uint64_t sandboxes;       /* concurrent runs and sessions; 0: no limit */
	uint64_t runs_per_minute; /* 0: no limit */
	uint64_t cpu_seconds;     /* CPU time of all its runs and execs; 0: no limit */
} moatd_quota;

/* What the configuration's token_limits says of one token (by name), or
 * its peer_limits of one unix peer (by uid or gid): the same ceiling and
 * quotas, whichever way the caller came in. */
typedef struct moatd_token_limit {
	char name[64];       /* the token's name, or "uid:N" / "gid:N" */
	const char *section; /* "token_limits" or "peer_limits", for messages */
	bool peer, by_gid;   /* peer_limits: keyed by a uid, or a gid */
	uint32_t id;         /* peer_limits: that uid or gid */
	char *policy;   /* the ceiling's policy file, or NULL */
	bool has_quota; /* quota replaces the role's */
	moatd_quota quota;
} moatd_token_limit;

typedef struct moatd_token {
	unsigned char sha256[32];
	moatd_role role;
	char name[64];
} moatd_token;

typedef struct moatd_config {
	char *socket;
	char *listen;    /* HOST:PORT or NULL */
	char *tls_cert, *tls_key;
	char *tokens;    /* the token file */
	char *state_dir;
	char *moat;      /* the moat binary (default: beside moatd) */
	uint64_t max_body;
	uint64_t output_cap;
	uint64_t max_connections;
	uint64_t timeout_s;
	moatd_ids uids[_MOATD_ROLE_MAX], gids[_MOATD_ROLE_MAX];
	moatd_quota quota[_MOATD_ROLE_MAX];
	moatd_token *token;
	size_t n_tokens;
	moatd_pool_conf pool; /* the warm pool (pool.c) */
	moatd_token_limit *tlim;
	size_t n_tlim;
} moatd_config;

void moatd_config_init(moatd_config *c);
void moatd_config_done(moatd_config *c);
/* Parses the YAML (or JSON) configuration text into c (its defaults set by
 * moatd_config_init stay where the text is silent). */
int moatd_config_parse(const char *text, size_t len, moatd_config *c, moat_error *err);
/* token_limits' entry for a token's name, or NULL. */
const moatd_token_limit *moatd_token_limit_of(const moatd_config *c, const char *name);
/* peer_limits' entry for a unix peer (*ret, or NULL): its uid's, else the
 * one entry of any of its groups (gids: primary and supplementary); an
 * EACCES error when two of its groups have one. */
int moatd_peer_limit_of(const moatd_config *c, uid_t uid, const gid_t *gids, size_t n_gids,
			const moatd_token_limit **ret, moat_error *err);
/* Parses a token file: "ROLE SHA256-HEX NAME" a line, # comments. */
int moatd_tokens_parse(const char *text, size_t len, moatd_config *c, moat_error *err);
/* The role of a unix peer: the highest its uid or gid maps to; self_uid
 * (moatd's own user) is always admin. */
moatd_role moatd_role_for_peer(const moatd_config *c, uid_t self_uid, uid_t uid, gid_t gid);
/* The role of an "Authorization: Bearer T" header value (the whole value);
 * compares SHA-256 digests in constant time. ret_name: the token's name. */
moatd_role moatd_role_for_bearer(const moatd_config *c, const char *header, const char **ret_name);

/* YAML text to a JSON value (mappings, sequences, strings; no anchors,
 * aliases or tags), bounded in depth and size. */
int moatd_yaml_to_json(const char *text, size_t len, json_t **ret, moat_error *err);
