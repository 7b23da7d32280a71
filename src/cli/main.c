/* moat: the command-line front. Each subcommand lives in its own cmd_*.c and
 * is a thin layer over libmoat: parse, call, print. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "moat-config.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"run", moat_cmd_run, "run one command in a fresh sandbox"},
	{"doctor", moat_cmd_doctor, "what this host lets moat enforce, and how to fix the rest"},
	{"audit", moat_cmd_audit, "verify or read an audit log"},
	{"replay", moat_cmd_replay, "play back a terminal recording or an audit timeline"},
	{"judge", moat_cmd_judge, "grade a program against test cases"},
	{"eval", moat_cmd_eval, "run a code benchmark's samples (HumanEval, MBPP) and report pass@k"},
	{"policy", moat_cmd_policy, "check, explain or show a policy file"},
	{"session", moat_cmd_session, "long-lived sandboxes to run commands in"},
	{"approvals", moat_cmd_approvals, "what waits for a person's approval, and the leases granted"},
	{"approve", moat_cmd_approve, "let a held action through, once or with a lease"},
	{"deny", moat_cmd_deny, "refuse a held action"},

	{"mcp", moat_cmd_mcp, "the sandbox as MCP tools for agents"},

	{"oci", moat_cmd_oci, "an OCI runtime for podman, containerd and Kubernetes"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: moat COMMAND [OPTIONS]\n\n"
		   "moat runs untrusted code and AI agents inside a kernel-enforced boundary.\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nexample:\n  moat run -- python3 -c 'print(6*7)'\n\n"
		   "'moat COMMAND --help' describes one command.\n");
}

int main(int argc, char **argv)
{
	/* Before anything is opened (see moat_stdio_ensure_open). */
	if (moat_stdio_ensure_open() < 0)
		return MOAT_EXIT_ERROR;
	/* Called by the name moat-oci, as an OCI runtime is (cmd_oci.c). */
	const char *base = strrchr(argv[0], '/');
	if (strcmp(base ? base + 1 : argv[0], "moat-oci") == 0)
		return moat_cmd_oci(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return MOAT_EXIT_ERROR;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("moat %s\n", MOAT_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	/* Not in the table: not a command for people (cmd_keeper.c). */
	if (strcmp(argv[1], "__keeper") == 0)
		return moat_cmd_keeper(argc - 1, argv + 1);
	if (strcmp(argv[1], "__oci-keeper") == 0)
		return moat_cmd_oci(argc, argv);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	return moat_cli_fail("unknown command '%s' (see 'moat --help')", argv[1]);
}
