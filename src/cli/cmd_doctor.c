/* moat doctor: what this host lets moat enforce, and how to fix the rest.
 * Exits 0 when the code runner's profile is fully enforced here, 1 when it
 * is not, 125 on a usage error. */
#include <string.h>

#include "cli.h"
#include "probe.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: moat doctor\n\n"
		   "Probes this host for the user running it (user namespaces, seccomp, Landlock,\n"
		   "cgroups, kernel interfaces) and prints what moat can enforce here, with the fix\n"
		   "for each missing piece. Exits 1 when the code profile cannot be fully enforced.\n");
}

int moat_cmd_doctor(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return moat_cli_fail("doctor: unexpected argument '%s'", argv[i]);
	}

	moat_host h;
	moat_host_probe(&h);
	moat_check checks[MOAT_HOST_CHECKS_MAX];
	size_t n = moat_host_checks(&h, checks, MOAT_HOST_CHECKS_MAX);

	printf("moat doctor: what this host lets moat enforce (as %s)\n\n", h.is_root ? "root" : "an unprivileged user");
	for (size_t i = 0; i < n; i++) {
		printf("  %-8s %-18s %s\n", moat_check_state_to_string(checks[i].state), checks[i].name, checks[i].detail);
		if (checks[i].fix[0])
			printf("  %-8s %-18s fix: %s\n", "", "", checks[i].fix);
	}
	/* Always in force, whatever the host: they need nothing but a kernel
	 * from this decade. */
	printf("  %-8s %-18s %s\n", "ok", "capabilities", "all sets emptied, securebits locked, no_new_privs");

	bool ok = moat_host_code_profile_enforced(checks, n);
	printf("\ncode profile: %s\n", ok ? "fully enforced on this host"
					   : "NOT fully enforced on this host (see the fixes above)");
	return ok ? 0 : 1;
}
