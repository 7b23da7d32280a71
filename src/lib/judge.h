/* Grading code against test cases: the pure part. A cases file holds one
 * JSON object a line; each case is either a stdin case (feed stdin, compare
 * stdout) or a function case (call a function of a Python or JavaScript
 * source through a harness and compare the JSON value it returned).
 *
 * Everything here is a function of its input (parsing, comparison, the
 * harness protocol, the verdict of a finished run), so that unit tests and
 * fuzzers call it directly. Running cases in sandboxes is judge_run.c. */
#pragma once

#include "config.h"
#include "error.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct moat_gateway_config; /* gateway.h */

/* Caps on what a cases file may ask for, in one place. */
#define MOAT_JUDGE_MAX_FILE_BYTES (64u << 20)  /* the whole cases file */
#define MOAT_JUDGE_MAX_CASES 10000             /* cases in one file */
#define MOAT_JUDGE_MAX_DATA_BYTES (16u << 20)  /* stdin, expected_stdout, encoded expected/args, each */
#define MOAT_JUDGE_MAX_NAME 128                /* bytes of a case name */
#define MOAT_JUDGE_MAX_ARGS 256                /* "args" of a stdin case */
#define MOAT_JUDGE_MAX_CAPTURE (64u << 20)     /* stdout kept for comparison */
#define MOAT_JUDGE_MAX_SOURCE_BYTES (16u << 20) /* --source FILE */
#define MOAT_JUDGE_MAX_PARALLEL_PER_CPU 4      /* --parallel N <= online CPUs x 4 */
#define MOAT_JUDGE_MAX_PARALLEL 256            /* ... and never more than this */
#define MOAT_JUDGE_DEFAULT_TOLERANCE 1e-6

/* The nonce that tags the harness's result line: 128 random bits in hex. */
#define MOAT_JUDGE_NONCE_LEN 32
/* The result line the harness prints: PREFIX NONCE ' ' JSON '\n'. */
#define MOAT_JUDGE_RESULT_PREFIX "moat-result:"

typedef enum moat_judge_compare {
	MOAT_JUDGE_COMPARE_EXACT = 0, /* byte for byte; JSON values structurally */
	MOAT_JUDGE_COMPARE_WHITESPACE, /* the same whitespace-separated tokens */
	MOAT_JUDGE_COMPARE_NUMERIC,    /* tokens, numbers within a tolerance */
	_MOAT_JUDGE_COMPARE_MAX,
	_MOAT_JUDGE_COMPARE_INVALID = -1,
} moat_judge_compare;

typedef enum moat_judge_verdict {
	MOAT_JUDGE_PASS = 0,
	MOAT_JUDGE_WRONG_ANSWER,
	MOAT_JUDGE_RUNTIME_ERROR,
	MOAT_JUDGE_TIMEOUT,
	MOAT_JUDGE_CPU_LIMIT,
	MOAT_JUDGE_OOM,
	MOAT_JUDGE_OUTPUT_LIMIT,
	MOAT_JUDGE_PIDS_LIMIT,
	MOAT_JUDGE_SETUP_ERROR,
	_MOAT_JUDGE_VERDICT_MAX,
	_MOAT_JUDGE_VERDICT_INVALID = -1,
} moat_judge_verdict;

typedef enum moat_judge_lang {
	MOAT_JUDGE_LANG_NONE = 0, /* "-- COMMAND": no source, no harness */
	MOAT_JUDGE_LANG_PYTHON,
	MOAT_JUDGE_LANG_JAVASCRIPT,
	_MOAT_JUDGE_LANG_MAX,
	_MOAT_JUDGE_LANG_INVALID = -1,
} moat_judge_lang;

/* Which limits a case overrides (bits of moat_judge_case.limits_set). */
enum {
	MOAT_JUDGE_LIMIT_TIME = 1u << 0,
	MOAT_JUDGE_LIMIT_CPU = 1u << 1,
	MOAT_JUDGE_LIMIT_MEM = 1u << 2,
	MOAT_JUDGE_LIMIT_PIDS = 1u << 3,
	MOAT_JUDGE_LIMIT_OUTPUT = 1u << 4,
	MOAT_JUDGE_LIMIT_TMP = 1u << 5,
};

typedef struct moat_judge_case {
	char *name;
	unsigned line; /* 1-based line of the cases file */
	bool is_call;  /* a function case */
	/* stdin cases */
	char *stdin_data; /* may hold NUL bytes; NULL: empty stdin */
	size_t stdin_len;
	char *expected_stdout;
	size_t expected_len;
	char **args; /* appended to the command, NULL-terminated, may be NULL */
	/* function cases */
	char *function;
	json_t *call_args; /* an array */
	json_t *expected;  /* any JSON value; never enters the sandbox */
	/* both */
	moat_judge_compare compare;
	double tolerance;
	moat_limits limits; /* only the fields named in limits_set count */
	unsigned limits_set;
} moat_judge_case;

typedef struct moat_judge_suite {
	moat_judge_case *cases;
	size_t n_cases;
	size_t n_call_cases;
} moat_judge_suite;

const char *moat_judge_verdict_to_string(moat_judge_verdict v);
const char *moat_judge_compare_to_string(moat_judge_compare c);
moat_judge_compare moat_judge_compare_from_string(const char *s);
const char *moat_judge_lang_to_string(moat_judge_lang l);
moat_judge_lang moat_judge_lang_from_string(const char *s);
/* The language of a source file from its extension (.py, .js, .cjs). */
moat_judge_lang moat_judge_lang_from_path(const char *path);

/* Parses a whole cases file held in memory. Errors name the file and line:
 * "cases.jsonl:3: unknown key 'stdn'". Blank lines are skipped. */
int moat_judge_suite_parse(const char *data, size_t len, const char *filename, moat_judge_suite **ret,
			   moat_error *err);
/* Reads path (at most MOAT_JUDGE_MAX_FILE_BYTES) and parses it. */
int moat_judge_suite_load(const char *path, moat_judge_suite **ret, moat_error *err);
void moat_judge_suite_free(moat_judge_suite *s);
static inline void moat_judge_suite_freep(moat_judge_suite **s) { moat_judge_suite_free(*s); }
#define _cleanup_judge_suite_ _cleanup_(moat_judge_suite_freep)

/* A "limits" object ({"time": "2s", "mem": "64M", ...}, the keys of a
 * case's limits) into *ret and the MOAT_JUDGE_LIMIT_* bits it sets; moat
 * eval's problems use it too. */
int moat__judge_parse_limits(const json_t *o, moat_limits *ret, unsigned *ret_set, moat_error *err);

/* Applies the limits a case sets over base. */
void moat_judge_case_limits(const moat_judge_case *c, const moat_limits *base, moat_limits *ret);

/* Compares program output with the expected text. On a mismatch, why (when
 * not NULL) says where, with both sides quoted and shortened. */
bool moat_judge_compare_text(moat_judge_compare mode, double tolerance, const char *expected, size_t expected_len,
			     const char *actual, size_t actual_len, char *why, size_t why_len);
/* Compares JSON values structurally: objects by key set, arrays by order,
 * numbers by value (3 equals 3.0; within tolerance in numeric mode),
 * strings byte for byte (or by tokens in whitespace mode). */
bool moat_judge_compare_json(moat_judge_compare mode, double tolerance, const json_t *expected,
			     const json_t *actual, char *why, size_t why_len);

/* Fills nonce with MOAT_JUDGE_NONCE_LEN hex digits from getrandom() and a
 * NUL. The only function here with a side effect (it reads the kernel's
 * random source). */
int moat_judge_nonce(char nonce[MOAT_JUDGE_NONCE_LEN + 1], moat_error *err);
/* The line given to the harness on stdin for a function case:
 * {"nonce":"…","function":"…","args":[…]} and a newline. Caller frees. */
char *moat_judge_call_request(const moat_judge_case *c, const char *nonce, size_t *ret_len);

/* What the harness said, read from the sandbox's stdout. */
typedef enum moat_judge_reply_kind {
	MOAT_JUDGE_REPLY_VALUE = 0, /* {"value": V}: the function returned V */
	MOAT_JUDGE_REPLY_ERROR,     /* {"error": "…"}: it raised */
	MOAT_JUDGE_REPLY_MISSING,   /* no result line at all */
	MOAT_JUDGE_REPLY_INVALID,   /* more than one, or one that is not well formed */
	_MOAT_JUDGE_REPLY_MAX,
	_MOAT_JUDGE_REPLY_INVALID = -1,
} moat_judge_reply_kind;

typedef struct moat_judge_reply {
	moat_judge_reply_kind kind;
	json_t *value;     /* REPLY_VALUE: owned */
	char message[384]; /* REPLY_ERROR: the error; MISSING/INVALID: why */
	size_t other_bytes; /* stdout bytes that are not the result line */
} moat_judge_reply;

/* Finds the one result line tagged with nonce in out. Anything else on
 * stdout is the submission's own output and is only counted. Exactly one
 * line, at the start of a line, must carry the tag; a second one means the
 * submission found the nonce and tried to speak for the harness, and the
 * reply is INVALID. Never fails: the kind says what was found. */
void moat_judge_reply_parse(const char *out, size_t len, const char *nonce, moat_judge_reply *ret);
void moat_judge_reply_done(moat_judge_reply *r);

/* The verdict of a finished run and its detail line. For a stdin case,
 * stdout is what the run printed; for a function case, reply is what the
 * harness said. stderr_head (may be NULL) is quoted in runtime errors. */
moat_judge_verdict moat_judge_decide(const moat_judge_case *c, const moat_result *r, const char *stdout_data,
				     size_t stdout_len, const moat_judge_reply *reply, const char *stderr_head,
				     size_t stderr_len, char *detail, size_t detail_len);

/* Reads a whole regular file of at most max bytes (NUL-terminated). */
int moat__judge_read_file(const char *path, size_t max, char **ret, size_t *ret_len, moat_error *err);

/* ---- running cases (judge_run.c) ---------------------------------------- */

/* Where the source and the harness are, inside the sandbox (read-only). */
#define MOAT_JUDGE_DIR "/judge"

/* How each case's command line is made: either a command given by the
 * caller, or a source file run by its interpreter (stdin cases) or loaded by
 * the harness (function cases). */
typedef struct moat_judge_program {
	moat_judge_lang lang;
	char **command;    /* LANG_NONE: the command and its arguments */
	char *interpreter; /* path inside the sandbox */
	char *stage_dir;   /* host folder bound at MOAT_JUDGE_DIR, or NULL */
	char *stage_files[2]; /* the source and the harness in it */
} moat_judge_program;

/* A program that runs argv (then each case's "args"). */
int moat_judge_program_command(moat_judge_program *p, char *const *argv, moat_error *err);
/* A program from a source file: copies it and the embedded harness into a
 * fresh host folder that the sandbox sees read-only at MOAT_JUDGE_DIR.
 * interpreter may be NULL for the language's default. */
int moat_judge_program_source(moat_judge_program *p, moat_judge_lang lang, const char *source_path,
			      const char *interpreter, moat_error *err);
/* Removes the staged folder and frees p; accepts a zeroed program. */
void moat_judge_program_done(moat_judge_program *p);
/* Removes the staged folder only, with async-signal-safe calls, so that a
 * signal handler can leave no copy of the submission behind. */
void moat_judge_program_unstage(const moat_judge_program *p);
/* Adds what the program needs to the run configuration (the bind). */
int moat_judge_program_configure(const moat_judge_program *p, moat_config *c, moat_error *err);
/* The command line of case c. */
int moat_judge_program_argv(const moat_judge_program *p, const moat_judge_case *c, char ***ret, moat_error *err);

typedef struct moat_judge_outcome {
	moat_judge_verdict verdict;
	char detail[512];
	moat_result result;
	bool other_output_known;
	uint64_t other_stdout_bytes; /* function cases: stdout besides the result line */
} moat_judge_outcome;

/* Runs one case in a fresh sandbox made from base (its argv, limits and
 * stdin are replaced per case) and decides the verdict. gateway: the
 * egress of every case (moat_egress_gateway), required when base->net is
 * proxy, else NULL. Returns 0 whenever a verdict was reached, setup_error
 * included. */
int moat_judge_run_case(const moat_config *base, const struct moat_gateway_config *gateway,
			const moat_judge_program *p, const moat_judge_case *c, moat_judge_outcome *ret,
			moat_error *err);
/* The case's JSON line (no newline); caller frees. */
char *moat_judge_outcome_json(const moat_judge_case *c, size_t index, const moat_judge_outcome *o);

typedef struct moat_judge_totals {
	size_t total, passed;
	size_t by_verdict[_MOAT_JUDGE_VERDICT_MAX];
	uint64_t wall_ms;
	char *isolation_json; /* what the first run reported; owned */
} moat_judge_totals;

/* The most cases run at once on this host: online CPUs x 4, capped. */
unsigned moat_judge_parallel_max(void);

/* Called with each case's JSON line, in case order. */
typedef void (*moat_judge_emit_fn)(void *userdata, const char *line);

/* Runs every case, at most parallel at a time, each in a worker process of
 * its own, and emits the lines in case order as soon as each is known.
 * Fails only when moat itself cannot go on (a setup error of one case is a
 * verdict, not a failure). */
int moat_judge_run_suite(const moat_config *base, const struct moat_gateway_config *gateway,
			 const moat_judge_program *p, const moat_judge_suite *s, unsigned parallel, moat_judge_emit_fn emit, void *userdata, moat_judge_totals *ret,
			 moat_error *err);
/* A suite whose policy has secrets (secretstore.h). Each case's worker,
 * a fork of this process that runs that case alone, reads the values
 * itself (so this process must not: moat_secrets_open wipes an env:
 * variable it reads, and a fork gets zero pages where the values are
 * kept), makes the case an authority of its own for the hosts egress
 * terminates, and arms both once the case's init is cloned. */
typedef struct moat_judge_secrets {
	const struct moat_policy *policy;
	struct moat_egress *egress; /* the gateway's; each worker changes its own copy */
	const char *upstream_ca_file; /* tests only, or NULL */
} moat_judge_secrets;
int moat_judge_run_suite_secrets(const moat_config *base, const moat_judge_secrets *sec,
				 const moat_judge_program *p, const moat_judge_suite *s, unsigned parallel,
				 moat_judge_emit_fn emit, void *userdata, moat_judge_totals *ret, moat_error *err);
void moat_judge_totals_done(moat_judge_totals *t);
/* The summary line (no newline); caller frees. */
char *moat_judge_totals_json(const moat_judge_totals *t);
