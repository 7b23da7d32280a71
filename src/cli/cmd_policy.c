/* moat policy check|explain|show: validate a policy file, summarise it for
 * a reviewer, print the effective policy after defaults and flags (loaded
 * as `moat run` loads them, cmd_run.c). */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "policy.h"

static void policy_usage(FILE *f)
{
	fprintf(f, "usage: moat policy check FILE...\n"
		   "       moat policy explain FILE | --profile NAME\n"
		   "       moat policy show [--profile NAME | --policy FILE] [RUN OPTIONS]\n"
		   "\n"
		   "check    validate policy files; prints 'ok' or FILE:LINE:COL: what is wrong\n"
		   "explain  a short summary a reviewer reads: files, programs, network,\n"
		   "         approvals, secrets (by name), environment, limits, audit\n"
		   "show     the effective policy as YAML, after the profile's defaults and any\n"
		   "         `moat run` options (e.g. --mem 1G), ready to save and edit\n"
		   "\n"
		   "built-in profiles: code (the default of moat run), agent\n");
}

static int fail_err(const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	return moat_cli_fail("%s", moat_error_format(err, buf, sizeof(buf)));
}

static int policy_check(int argc, char **argv)
{
	if (argc < 2)
		return moat_cli_fail("policy check: no file given (usage: moat policy check FILE...)");
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		moat_error err = {0};
		_cleanup_policy_ moat_policy *p = NULL;
		if (moat_policy_load_file(argv[i], &p, &err) < 0) {
			fail_err(&err);
			rc = MOAT_EXIT_ERROR;
		} else if (argc > 2) {
			printf("%s: ok\n", argv[i]);
		} else {
			printf("ok\n");
		}
	}
	return rc;
}

static int policy_explain(int argc, char **argv)
{
	moat_error err = {0};
	_cleanup_policy_ moat_policy *p = NULL;
	int r;
	if (argc == 3 && strcmp(argv[1], "--profile") == 0)
		r = moat_policy_load_profile(argv[2], &p, &err);
	else if (argc == 2 && strncmp(argv[1], "--profile=", 10) == 0)
		r = moat_policy_load_profile(argv[1] + 10, &p, &err);
	else if (argc == 2 && argv[1][0] != '-')
		r = moat_policy_load_file(argv[1], &p, &err);
	else
		return moat_cli_fail("policy explain: expected FILE or --profile NAME");
	if (r < 0)
		return fail_err(&err);
	_cleanup_free_ char *text = moat_policy_explain(p);
	if (!text)
		return moat_cli_fail("out of memory");
	fputs(text, stdout);
	return 0;
}

static int policy_show(int argc, char **argv)
{
	_cleanup_policy_ moat_policy *p = NULL;
	bool help = false;
	int first = moat_cli_load_run_policy(argc, argv, &p, NULL, &help);
	if (help) {
		policy_usage(stdout);
		return 0;
	}
	if (first < 0)
		return MOAT_EXIT_ERROR;
	if (first < argc)
		return moat_cli_fail("policy show: unexpected argument '%s'", argv[first]);
	_cleanup_free_ char *yaml = moat_policy_to_yaml(p);
	if (!yaml)
		return moat_cli_fail("out of memory");
	fputs(yaml, stdout);
	return 0;
}

int moat_cmd_policy(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		policy_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? MOAT_EXIT_ERROR : 0;
	}
	if (strcmp(argv[1], "check") == 0)
		return policy_check(argc - 1, argv + 1);
	if (strcmp(argv[1], "explain") == 0)
		return policy_explain(argc - 1, argv + 1);
	if (strcmp(argv[1], "show") == 0)
		return policy_show(argc - 1, argv + 1);
	return moat_cli_fail("policy: unknown command '%s' (expected check, explain or show)", argv[1]);
}
