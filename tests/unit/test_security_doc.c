/* The attack table of docs/security.md is generated from the headers of
 * every tests/attacks file; this test fails when it is out of date, and shows on a
 * scratch copy that the check notices a new attack and a missing header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "util.h"

#ifndef MOAT_SOURCE_ROOT
#error "MOAT_SOURCE_ROOT must name the source tree"
#endif

/* Runs a shell command, returns its exit status (or -1). */
static int sh(const char *fmt, ...) _printf_(1, 2);
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_doc_up_to_date(void **state)
{
	(void)state;
	assert_int_equal(sh("python3 '%s/scripts/gen-security-doc' --check", MOAT_SOURCE_ROOT), 0);
}

static void test_check_notices_changes(void **state)
{
	(void)state;
	char dir[] = "/tmp/security-doc.XXXXXX";
	assert_non_null(mkdtemp(dir));
	assert_int_equal(sh("mkdir -p %s/scripts %s/docs %s/tests/attacks && cp '%s/scripts/gen-security-doc' %s/scripts/ && "
			    "cp '%s/docs/security.md' %s/docs/ && cp '%s'/tests/attacks/*.c %s/tests/attacks/",
			    dir, dir, dir, MOAT_SOURCE_ROOT, dir, MOAT_SOURCE_ROOT, dir, MOAT_SOURCE_ROOT, dir),
			 0);
	assert_int_equal(sh("python3 %s/scripts/gen-security-doc --check", dir), 0);
	/* A new attack makes the table stale until it is regenerated. */
	assert_int_equal(sh("printf '/* ATTACK: x | LAYER: y | REF: - */\\nint main(void){return 0;}\\n' "
			    ">%s/tests/attacks/zz_new.c",
			    dir),
			 0);
	assert_int_equal(sh("python3 %s/scripts/gen-security-doc --check 2>/dev/null", dir), 1);
	assert_int_equal(sh("python3 %s/scripts/gen-security-doc && python3 %s/scripts/gen-security-doc --check", dir, dir),
			 0);
	assert_int_equal(sh("grep -q '`zz_new` | x | y | - |' %s/docs/security.md", dir), 0);
	/* An attack without its header line is refused. */
	assert_int_equal(sh("echo 'int main(void){return 0;}' >%s/tests/attacks/zz_bad.c", dir), 0);
	assert_int_equal(sh("python3 %s/scripts/gen-security-doc --check 2>/dev/null", dir), 1);
	sh("rm -rf %s", dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc_up_to_date),
		cmocka_unit_test(test_check_notices_changes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
