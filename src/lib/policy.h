/* The policy file: one declarative YAML document (JSON is valid YAML) saying
 * what a sandbox may see, run, reach and use. Parsed strictly: an unknown
 * key, a wrong type, a duplicate key or YAML that can be read two ways
 * (anchors, aliases, merge keys, tags, several documents) is an error with
 * FILE:LINE:COL, never a warning, because a misspelt key must never silently
 * grant nothing or everything. Parsing, checking, intersecting, explaining
 * and emitting are pure functions of their input (apart from checking that
 * host paths exist), so unit tests and the fuzzer call them directly. */
#pragma once

#include "config.h"
#include "error.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Caps on what one policy may hold. */
#define MOAT_POLICY_MAX_BYTES (1u << 20)
#define MOAT_POLICY_MAX_DEPTH 16
#define MOAT_POLICY_MAX_NODES 100000
#define MOAT_POLICY_MAX_RULES 1024
#define MOAT_POLICY_MAX_LIST 1024
#define MOAT_POLICY_MAX_SECRETS 256
#define MOAT_POLICY_MAX_STRING 4096

/* Where a nested sandbox finds its parent's effective policy: the sandbox
 * writes it there read-only, and a nested `moat run` may only narrow it. */
#define MOAT_PARENT_POLICY_ENV "MOAT_PARENT_POLICY"

typedef enum moat_workspace {
	MOAT_WORKSPACE_EPHEMERAL = 0, /* gone when the sandbox ends */
	MOAT_WORKSPACE_PERSISTENT,    /* kept across a session's commands and restarts */
	_MOAT_WORKSPACE_MAX,
	_MOAT_WORKSPACE_INVALID = -1,
} moat_workspace;

/* Layers a policy can demand: the run fails rather than start without them. */
typedef enum moat_layer {
	MOAT_LAYER_USERNS = 1u << 0,
	MOAT_LAYER_SECCOMP = 1u << 1,
	MOAT_LAYER_LANDLOCK = 1u << 2,
	MOAT_LAYER_CGROUP = 1u << 3,
	MOAT_LAYER_NETNS = 1u << 4,
} moat_layer;
#define MOAT_LAYER_ALL 0x1fu

/* Which limits a policy (or the command line) set explicitly; the others
 * carry a default. Intersection needs to know the difference. */
typedef enum moat_limit_bit {
	MOAT_LIMIT_WALL = 1u << 0,
	MOAT_LIMIT_CPU_TIME = 1u << 1,
	MOAT_LIMIT_CPU = 1u << 2,
	MOAT_LIMIT_MEMORY = 1u << 3,
	MOAT_LIMIT_PIDS = 1u << 4,
	MOAT_LIMIT_OUTPUT = 1u << 5,
	MOAT_LIMIT_TMP = 1u << 6,
	MOAT_LIMIT_DISK = 1u << 7,
	MOAT_LIMIT_INODES = 1u << 8,
	MOAT_LIMIT_FILES = 1u << 9,
	MOAT_LIMIT_FSIZE = 1u << 10,
} moat_limit_bit;

typedef enum moat_policy_net_verdict {
	MOAT_POLICY_NET_DENY = 0,
	MOAT_POLICY_NET_ALLOW,
	MOAT_POLICY_NET_APPROVE, /* held until a person approves, else denied */
	/* network.mode: pod: the pod's network carries the traffic, no
	 * gateway sees it and no rule of the policy applies (config.h). */
	MOAT_POLICY_NET_UNFILTERED,
	_MOAT_POLICY_NET_MAX,
	_MOAT_POLICY_NET_INVALID = -1,
} moat_policy_net_verdict;

/* One network rule. No ports means 80 and 443; no methods or paths means any
 * (and plain HTTP only can show them: see netrules.h). */
typedef struct moat_net_rule {
	char *host;       /* exact name or "*.suffix" (hostglob.h) */
	uint16_t *ports;  /* 1..65535 */
	size_t n_ports;
	char **methods;   /* upper-case HTTP methods */
	char **paths;     /* "/exact", or "/prefix/" followed by a star */
} moat_net_rule;

typedef struct moat_net_rules {
	moat_net_rule *v;
	size_t n;
} moat_net_rules;

typedef struct moat_host_entry {
	char *name;    /* host name */
	char *address; /* IPv4 or IPv6 literal it resolves to */
} moat_host_entry;

/* Caps on one secret's fields. */
#define MOAT_SECRET_NAME_MAX 64
#define MOAT_SECRET_FORMAT_MAX 256

/* One secrets entry. The sandbox sees only a placeholder (secrets.h); the
 * gateway puts the real value into requests to the bound hosts whose method
 * and path match, and nowhere else. */
typedef struct moat_secret {
	char *name;     /* letters, digits, '_' and '-': in messages, events and the placeholder */
	char *from;     /* "env:VAR" or "file:/absolute/path"; NULL for a honeytoken */
	char *env;      /* the variable holding the placeholder inside, or NULL */
	char **hosts;   /* patterns of hosts that may receive the real value */
	char *header;   /* set this header to format; NULL: replace the placeholder where it appears */
	char *format;   /* "...{value}...", with header only; NULL: "{value}" */
	char **methods; /* upper-case methods; NULL: any */
	char **paths;   /* "/exact" or "/prefix/" and a star; NULL: any */
	uint64_t expires_ms; /* after the run starts; 0: never */
	uint64_t max_uses;   /* injections; 0: unlimited */
	bool honeytoken;     /* a decoy: any use is an alert, nothing is injected */
} moat_secret;

/* network.budget: what the whole run may do through the gateway. A zero
 * field is not limited, except connections, where zero means the
 * gateway's default (MOAT_GATEWAY_DEFAULT_MAX_CLIENTS). */
typedef struct moat_net_budget {
	uint64_t bytes_up;            /* sent by the sandbox, request heads included */
	uint64_t bytes_down;          /* received by the sandbox */
	uint64_t requests_per_minute; /* sustained rate, a minute's worth as burst */
	uint64_t connections;         /* open to the gateway at once */
} moat_net_budget;
#define MOAT_NET_BUDGET_MAX_CONNECTIONS 16384
#define MOAT_NET_BUDGET_MAX_RATE 1000000

typedef struct moat_policy {
	char *source; /* file name or "profile NAME", for messages */
	/* As the front named the base (moat_policy_load_base): the built-in
	 * profile, or the policy file; NULL when not named. Not written out. */
	char *profile;
	char *path;
	char *dir;    /* folder relative paths were resolved in */
	char *name;

	/* filesystem */
	moat_bind *binds; /* read_only and read_write, host paths absolute */
	size_t n_binds;
	char *out_dir;
	char *cwd;
	moat_workspace workspace;

	/* exec: NULL means no allowlist (anything visible may run). */
	char **exec_allow;
	/* exec.workspace: programs written to /out and read_write binds may
	 * run (the agent profile); off, only the base system, read-only binds
	 * and /tmp hold programs. */
	bool exec_workspace;
	/* exec.delegate: a `moat run` inside may ask, through /run/moat/ctl,
	 * for a sibling sandbox no wider than this one (docs/nested.md); on in
	 * the agent profile, off in the code profile. */
	bool exec_delegate;
	/* exec.approve: programs (and arguments) whose execve is held for a
	 * person (docs/approvals.md); in a session only. */
	moat_exec_rule *exec_approve;
	size_t n_exec_approve;

	/* network */
	moat_net_mode net;
	moat_net_rules allow, deny, approve;
	char **allow_private; /* CIDRs the SSRF guard lets through */
	moat_host_entry *hosts;
	size_t n_hosts;
	char *resolver; /* IP address of the DNS server the gateway asks */
	moat_net_budget budget;

	moat_secret *secrets;
	size_t n_secrets;

	char **env; /* NAME=VALUE, or NAME to pass the caller's value */

	moat_limits limits;
	unsigned limits_set; /* moat_limit_bit */

	/* audit */
	char *audit_log;
	bool audit_files;
	uint64_t audit_max_size; /* audit.max_size; 0: MOAT_AUDIT_DEFAULT_MAX_SIZE */
	bool record;
	char *record_path;

	/* approvals (approvals.h): how long a held action waits for a person
	 * (0: MOAT_APPROVAL_DEFAULT_TIMEOUT_MS), and the host command told
	 * of each (run by /bin/sh -c, the request as JSON on its stdin) */
	uint64_t approvals_timeout_ms;
	char *approvals_notify;

	char *result_path;
	unsigned require; /* moat_layer */
	bool tty;
	/* moat run --direct-stdout (never from a file): the command's stdout
	 * is moat run's own, a pipe, not captured (sandbox.h,
	 * moat_run_io.stdout_direct) */
	bool stdout_direct;
	char *stdin_path;
	char *hostname;
} moat_policy;

/* An empty policy: the code profile's limits, no binds, no network. */
moat_policy *moat_policy_new(void);
void moat_policy_free(moat_policy *p);
static inline void moat_policy_freep(moat_policy **p) { moat_policy_free(*p); }
#define _cleanup_policy_ _cleanup_(moat_policy_freep)
moat_policy *moat_policy_copy(const moat_policy *p);

/* Parses a policy from memory. source names it in messages ("FILE:LINE:COL:
 * ..."); dir is the absolute folder relative paths are resolved in; home
 * expands "~" (NULL: "~" is an error). Host paths must exist. */
int moat_policy_parse(const char *buf, size_t len, const char *source, const char *dir, const char *home,
		      moat_policy **ret, moat_error *err);
/* Reads and parses a policy file (relative paths in it resolve against its
 * folder, "~" against $HOME). */
int moat_policy_load_file(const char *path, moat_policy **ret, moat_error *err);
/* A built-in profile ("code", "agent"), embedded in the binary. Its limits
 * count as defaults (limits_set is 0), so a stricter parent narrows them. */
int moat_policy_load_profile(const char *name, moat_policy **ret, moat_error *err);
/* The built-in profile's YAML text, or NULL. */
const char *moat_policy_profile_text(const char *name);
/* NULL-terminated list of built-in profile names. */
const char *const *moat_policy_profile_names(void);

/* One model of a run. A front loads the base policy (a profile or a
 * file), merges its own settings on top as an overlay (moat run's flags are
 * one), and compiles the effective policy into the run specification the
 * engine runs: policy -> run specification, never back.
 *
 * The base: the built-in profile NAME or the policy file at path (not both;
 * neither means the code profile), narrowed, inside a sandbox, by the
 * parent's effective policy. p->profile and p->path keep the names given. */
int moat_policy_load_base(const char *profile, const char *path, moat_policy **ret, moat_error *err);

/* An overlay sets nothing until a field is given: strings NULL, lists
 * empty, net _MOAT_NET_INVALID, limits only where limits_set says. */
moat_policy *moat_policy_overlay_new(void);
/* Fields an overlay (or anything that builds a policy) adds one by one.
 * A bind's paths lose their trailing slashes; spec of an allowed host is
 * "PATTERN[:PORT[,PORT]...]". */
int moat_policy_add_bind(moat_policy *p, const char *src, const char *dst, unsigned flags, moat_error *err);
int moat_policy_add_allow_host(moat_policy *p, const char *spec, moat_error *err);
int moat_policy_add_host(moat_policy *p, const char *name, const char *address, moat_error *err);
/* A secret in the short form NAME=env:VAR@HOST or NAME=file:/PATH@HOST: the
 * variable NAME inside holds its placeholder, the value goes to HOST only.
 * Only the shape is checked here; the fields meet the policy file's checks
 * when the overlay is merged. */
int moat_policy_add_secret_spec(moat_policy *p, const char *spec, moat_error *err);
/* Merges overlay o into p: binds, env, allowed hosts, private ranges,
 * pinned names and secrets (under names p does not have) are added; strings, the network mode and the limits o sets
 * replace p's (and count as set); the file trail, the terminal and a
 * recording are only ever turned on. Then p, the effective policy, is
 * checked as a policy file's fields are (the message names the field) and,
 * inside a sandbox, refused where it widens the parent's policy. */
int moat_policy_merge_overlay(moat_policy *p, const moat_policy *o, moat_error *err);

/* Compiles the effective policy p into a run specification for argv (NULL:
 * set later, per run, on a copy). The specification carries p's YAML as
 * the sandbox sees it (policy_yaml) and the SHA-256 of
 * moat_policy_to_yaml_run (policy_sha256, logged in session.start). What
 * only a front uses (the result, the audit log, the recording, the audit
 * cap) stays in the policy. Entries of env that are a bare NAME (pass the
 * caller's value) are left out: only the front knows whose environment
 * that is, and resolves them before compiling. */
int moat_policy_compile(const moat_policy *p, char *const *argv, moat_config **ret, moat_error *err);

/* The policy a nested sandbox gets: the child may only narrow the parent.
 * Fails naming the field when the child asks for more
 * ("limits.memory: 1G exceeds the parent's 512M"). Limits the child did not
 * set take the smaller of the child's default and the parent's value. */
int moat_policy_intersect(const moat_policy *parent, const moat_policy *child, moat_policy **ret, moat_error *err);

/* The effective policy as YAML (every field, defaults included). Parsing
 * the result gives the same policy. NULL on allocation failure. */
char *moat_policy_to_yaml(const moat_policy *p);
/* The same policy as the sandbox sees it (its copy at /etc/moat/policy.yaml):
 * binds by their path inside, /out as /out, no host path of a secret file,
 * of stdin, of the result, the audit log or the recording. */
char *moat_policy_to_yaml_inside(const moat_policy *p);
/* The effective policy without the front's output paths (audit log,
 * recording, result): what a run is held to, whatever it reports where.
 * Its SHA-256 is the policy_sha256 of session.start. */
char *moat_policy_to_yaml_run(const moat_policy *p);
/* A short human summary for reviewers: files, exec, network, secrets (by
 * name only), limits, approvals. */
char *moat_policy_explain(const moat_policy *p);

/* What the gateway decides for one request. port 0, method NULL or path NULL
 * mean "not known" (e.g. inside a TLS tunnel): a rule that restricts an
 * unknown property does not match. Deny rules win over approve rules, which
 * win over allow rules; nothing matching means deny. *ret_rule (may be NULL)
 * receives a description of the deciding rule ("network.allow[2]") or
 * "network.default". Under network.mode: pod no gateway decides: the answer
 * is MOAT_POLICY_NET_UNFILTERED (rule "network.mode"), never a deny the
 * traffic does not meet. */
moat_policy_net_verdict moat_policy_net_decide(const moat_policy *p, const char *host, uint16_t port, const char *method,
					 const char *path, char *ret_rule, size_t rule_len);
const char *moat_policy_net_verdict_to_string(moat_policy_net_verdict d);
struct moat_netrules;
/* Compiles the policy's network rules for the gateway (netrules.h): deny,
 * then approve, then allow; first match wins; default deny. */
int moat_policy_netrules(const moat_policy *p, struct moat_netrules **ret, moat_error *err);

/* Fails naming the first layer the policy requires that iso says is not in
 * force. */
int moat_policy_check_required(const moat_policy *p, const moat_isolation *iso, moat_error *err);
const char *moat_layer_to_string(moat_layer l);

const char *moat_workspace_to_string(moat_workspace w);
