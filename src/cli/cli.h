/* Shared by the moat subcommands. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "policy.h"

/* Exit status when moat itself failed (bad option, bad policy, setup). */
#define MOAT_EXIT_ERROR 125

int moat_cmd_run(int argc, char **argv);
int moat_cmd_doctor(int argc, char **argv);
int moat_cmd_audit(int argc, char **argv);
int moat_cmd_replay(int argc, char **argv);

/* How moat audit show and moat replay --audit walk a log. */
typedef struct moat_cli_walk {
	const char *type;   /* type or type prefix, or NULL */
	uint64_t since_us;  /* 0: from the start */
	bool json;          /* raw lines */
	bool realtime;      /* wait between events as they happened */
	double speed;       /* > 0 */
	double max_idle;    /* cap on one wait, seconds; 0: none */
} moat_cli_walk;
int moat_cli_audit_walk(const char *path, const moat_cli_walk *w);
/* Sleeps s seconds (fractions allowed), resuming after signals. */
void moat_cli_sleep(double s);
int moat_cmd_judge(int argc, char **argv);
int moat_cmd_eval(int argc, char **argv);
int moat_cmd_policy(int argc, char **argv);
int moat_cmd_session(int argc, char **argv);
/* cmd_approvals.c: moat approvals, moat approve, moat deny. */
int moat_cmd_approvals(int argc, char **argv);
int moat_cmd_approve(int argc, char **argv);
int moat_cmd_deny(int argc, char **argv);
/* The hidden entry of a sandbox's keeper (cmd_keeper.c). */
int moat_cmd_keeper(int argc, char **argv);
int moat_cmd_mcp(int argc, char **argv);
int moat__cli_mcp_wrap(int argc, char **argv); /* cmd_mcp_wrap.c */
int moat__cli_mcp_http(const char *listen, const char *token_file, char *const *serve_args); /* cmd_mcp_http.c */

/* The OCI runtime, also called by the name moat-oci (cmd_oci.c). */
int moat_cmd_oci(int argc, char **argv);

/* What the options of `moat run` ask for: --profile, --policy and
 * --net-log are the front's; every other option is a field of the policy
 * overlay (moat_policy_overlay_new), merged on top of the base policy. */
typedef struct moat_cli_run_opts {
	char *profile;
	char *policy_path;
	char *net_log;
	moat_policy *overlay;
} moat_cli_run_opts;
void moat_cli_run_opts_done(moat_cli_run_opts *o);

/* Parses `moat run` options into o; returns the index of the command word,
 * or -1 after printing an error. *ret_help is set for --help. */
int moat_cli_parse_run_options(int argc, char **argv, moat_cli_run_opts *o, bool *ret_help);

/* Loads the base policy (--profile/--policy), resolves its pass-through
 * env names from this process's environment, and merges the other options
 * on top: *ret is the effective policy, which moat_policy_compile makes
 * into the run specification. *ret_net_log (may be NULL) gets --net-log.
 * Returns the index of the command word, or -1 after printing an error. */
int moat_cli_load_run_policy(int argc, char **argv, moat_policy **ret, char **ret_net_log, bool *ret_help);

/* own_options.c: takes a front's own options (NAME VALUE or NAME=VALUE,
 * each at most once, into the const char * field at offset in opts) out of
 * argv; with stop_at_dashdash, none after "--". *ret_rest is the rest,
 * argv[0] first, for moat_cli_load_run_policy(). */
typedef struct moat_cli_own_option {
	const char *name;
	size_t offset;
} moat_cli_own_option;
int moat_cli_split_own_options(const char *front, int argc, char **argv, const moat_cli_own_option *own, size_t n_own,
			       void *opts, bool stop_at_dashdash, char ***ret_rest);

/* Prints "moat: MESSAGE" on stderr; returns MOAT_EXIT_ERROR. */
int moat_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Network options of `moat run` (run_net.c). */
/* Applies one of --net, --allow-host, --allow-private, --net-host,
 * --resolver, --net-log (name without dashes). */
int moat_cli_run_net_option(moat_cli_run_opts *o, const char *name, const char *value, moat_error *err);
