/* Shared by the moat subcommands. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "policy.h"

/* Exit status when moat itself failed (bad option, bad policy, setup). */
#define MOAT_EXIT_ERROR 125

int moat_cmd_run(int argc, char **argv);
int moat_cmd_policy(int argc, char **argv);

/* Parses `moat run` options into c; returns the index of the command word,
 * or -1 after printing an error. *ret_help is set for --help. */
int moat_cli_parse_run_options(int argc, char **argv, moat_config *c, bool *ret_help);

/* Loads --profile/--policy into a fresh configuration, then applies the
 * other run options on top; returns the index of the command word, or -1
 * after printing an error. *ret_policy receives the effective policy. */
int moat_cli_load_run_config(int argc, char **argv, moat_config **ret, moat_policy **ret_policy, bool *ret_help);

/* Prints "moat: MESSAGE" on stderr; returns MOAT_EXIT_ERROR. */
int moat_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
