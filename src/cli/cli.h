/* Shared by the moat subcommands. */
#pragma once

#include <stdio.h>

/* Exit status when moat itself failed (bad option, bad policy, setup). */
#define MOAT_EXIT_ERROR 125

int moat_cmd_run(int argc, char **argv);

/* Prints "moat: MESSAGE" on stderr; returns MOAT_EXIT_ERROR. */
int moat_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
