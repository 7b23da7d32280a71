/* The exec gate's pure logic: argument patterns and where in memory an
 * execve's strings may lie. */
#include "execgate.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#define ARGS(s) s, sizeof(s) - 1

static void test_args_match(void **state)
{
	(void)state;
	char *push[] = {"push", "*", NULL};
	assert_true(moat__exec_args_match(push, ARGS("git\0push\0origin\0main\0"), 4));
	assert_true(moat__exec_args_match(push, ARGS("git\0push\0"), 2));
	assert_false(moat__exec_args_match(push, ARGS("git\0status\0"), 2));
	assert_false(moat__exec_args_match(push, ARGS("git\0"), 1));
	assert_false(moat__exec_args_match(push, ARGS("git\0pushx\0"), 2));
	char *exact[] = {"-rf", "/out/*", NULL};
	assert_true(moat__exec_args_match(exact, ARGS("rm\0-rf\0/out/a\0"), 3));
	assert_false(moat__exec_args_match(exact, ARGS("rm\0-rf\0/out/a\0/x\0"), 4));
	assert_false(moat__exec_args_match(exact, ARGS("rm\0-rf\0"), 2));
	/* A "*" that is not last is one argument, any. */
	char *mid[] = {"*", "x", NULL};
	assert_true(moat__exec_args_match(mid, ARGS("p\0a\0x\0"), 3));
	assert_false(moat__exec_args_match(mid, ARGS("p\0x\0"), 2));
	assert_true(moat__exec_args_match(NULL, ARGS("p\0anything\0"), 2));
	char *none[] = {NULL};
	assert_true(moat__exec_args_match(none, ARGS("p\0"), 1));
	assert_false(moat__exec_args_match(none, ARGS("p\0a\0"), 2));
	/* An argv that claims more strings than it holds never matches. */
	assert_false(moat__exec_args_match(push, "git\0pu", 6, 3));
}

static const char maps[] = "00400000-00452000 r-xp 00000000 08:02 173521  /usr/bin/prog\n"
			   "00651000-00652000 rw-p 00051000 08:02 173521  /usr/bin/prog\n"
			   "00652000-00655000 rw-p 00000000 00:00 0       [heap]\n"
			   "7f0000000000-7f0000001000 rw-s 00000000 00:05 1234 /memfd:x (deleted)\n"
			   "7f0000001000-7f0000003000 rw-p 00000000 00:00 0 \n"
			   "7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
			   "7f0000004000-7f0000005000 r--p 00000000 00:00 0 \n"
			   "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0       [stack]\n";

static bool file_ok(void *ud, const char *dev, uint64_t inode, const char *name)
{
	return strcmp(dev, "08:02") == 0 && inode == 173521 && strcmp(name, ud) == 0;
}

static void test_maps(void **state)
{
	(void)state;
	const char *why = NULL;
	assert_true(moat__maps_private(maps, 0x652010, 16, NULL, NULL, &why));
	assert_true(moat__maps_private(maps, 0x7ffc00000100, 64, NULL, NULL, &why));
	/* Spanning two adjacent private anonymous mappings. */
	assert_true(moat__maps_private(maps, 0x7f0000002ff0, 0x20, NULL, NULL, &why));
	assert_false(moat__maps_private(maps, 0x7f0000000010, 8, NULL, NULL, &why));
	assert_non_null(strstr(why, "shared"));
	assert_false(moat__maps_private(maps, 0x651010, 8, NULL, NULL, &why));
	assert_non_null(strstr(why, "a file the sandbox may write"));
	/* A file the caller vouches for (a read-only mount) is fine. */
	assert_true(moat__maps_private(maps, 0x651010, 8, file_ok, "/usr/bin/prog", &why));
	assert_false(moat__maps_private(maps, 0x651010, 8, file_ok, "/other", &why));
	/* A shared mapping never is, whatever the file. */
	assert_false(moat__maps_private(maps, 0x7f0000000010, 8, file_ok, "/memfd:x (deleted)", &why));
	assert_false(moat__maps_private(maps, 0x400010, 8, NULL, NULL, &why));
	assert_false(moat__maps_private(maps, 0x7f0000004010, 8, NULL, NULL, &why));
	assert_non_null(strstr(why, "read-only anonymous"));
	/* Running off the end of a good mapping into a bad one. */
	assert_false(moat__maps_private(maps, 0x7f0000003ff0, 0x20, NULL, NULL, &why));
	/* A hole. */
	assert_false(moat__maps_private(maps, 0x10, 4, NULL, NULL, &why));
	assert_false(moat__maps_private(maps, 0x654ff0, 0x20, NULL, NULL, &why));
	assert_false(moat__maps_private(maps, UINT64_MAX - 2, 8, NULL, NULL, &why));
}

/* The "#!" line as the kernel's binfmt_script reads it. */
static void test_script_line(void **state)
{
	(void)state;
	char i[64], a[64];
	const char *s = "#!/usr/bin/git push\nrest";
	assert_true(moat__exec_script_line(s, strlen(s), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/usr/bin/git");
	assert_string_equal(a, "push");
	s = "#! \t/bin/sh\n";
	assert_true(moat__exec_script_line(s, strlen(s), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/bin/sh");
	assert_string_equal(a, "");
	/* One argument: the rest of the line, blanks inside kept. */
	s = "#!/usr/bin/env  python3 -u  \n";
	assert_true(moat__exec_script_line(s, strlen(s), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/usr/bin/env");
	assert_string_equal(a, "python3 -u");
	s = "#!/bin/sh"; /* no newline, the file's end */
	assert_true(moat__exec_script_line(s, strlen(s), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/bin/sh");
	assert_false(moat__exec_script_line("\x7f" "ELF", 4, i, sizeof(i), a, sizeof(a)));
	assert_false(moat__exec_script_line("#!\n", 3, i, sizeof(i), a, sizeof(a)));
	assert_false(moat__exec_script_line("#", 1, i, sizeof(i), a, sizeof(a)));
	/* An interpreter name longer than what the kernel reads: not run. */
	char big[300];
	memset(big, 'x', sizeof(big));
	memcpy(big, "#!/", 3);
	assert_false(moat__exec_script_line(big, sizeof(big), i, sizeof(i), a, sizeof(a)));
	/* A long argument is cut where the kernel stops reading. */
	big[10] = ' ';
	assert_true(moat__exec_script_line(big, sizeof(big), i, sizeof(i), a, sizeof(a)));
	assert_string_equal(i, "/xxxxxxx");
}

/* A file in memory for moat__exec_elf_interp. */
typedef struct {
	const unsigned char *b;
	size_t n;
} memfile;

static ssize_t mem_read(void *ud, void *buf, size_t n, uint64_t off)
{
	const memfile *m = ud;
	if (off >= m->n)
		return 0;
	if (n > m->n - off)
		n = (size_t)(m->n - off);
	memcpy(buf, m->b + off, n);
	return (ssize_t)n;
}

static void put(unsigned char *p, size_t e, uint64_t v, bool msb)
{
	for (size_t k = 0; k < e; k++)
		p[msb ? e - 1 - k : k] = (unsigned char)(v >> (8 * k));
}

/* An ELF of the class and byte order asked, with n_interp PT_INTERP
 * headers (after a PT_LOAD) naming interp (len bytes of it, NUL included
 * when it fits); returns its size. */
static size_t make_elf(unsigned char *f, size_t cap, bool is64, bool msb, int n_interp, const char *interp, size_t len)
{
	memset(f, 0, cap);
	size_t eh = is64 ? 64 : 52, ph = is64 ? 56 : 32, nph = 1 + (size_t)n_interp, at = eh + nph * ph;
	memcpy(f, "\x7f" "ELF", 4);
	f[4] = is64 ? 2 : 1;
	f[5] = msb ? 2 : 1;
	f[6] = 1;
	put(f + 16, 2, 2, msb); /* ET_EXEC */
	put(f + (is64 ? 32 : 28), is64 ? 8 : 4, eh, msb);
	put(f + (is64 ? 54 : 42), 2, ph, msb);
	put(f + (is64 ? 56 : 44), 2, nph, msb);
	put(f + eh, 4, 1, msb); /* PT_LOAD */
	for (int k = 0; k < n_interp; k++) {
		unsigned char *p = f + eh + (size_t)(k + 1) * ph;
		put(p, 4, 3, msb);
		put(p + (is64 ? 8 : 4), is64 ? 8 : 4, at, msb);
		put(p + (is64 ? 32 : 16), is64 ? 8 : 4, len, msb);
	}
	memcpy(f + at, interp, strlen(interp) < len ? strlen(interp) : len);
	return at + len;
}

/* PT_INTERP as binfmt_elf reads it, and every doubt refused. */
static void test_elf_interp(void **state)
{
	(void)state;
	static unsigned char f[8192];
	static char out[MOAT_ELF_INTERP_MAX];
	const char *why;
	memfile m = {f, 0};
	const char *ld = "/opt/gate/git";
	for (int c = 0; c < 4; c++) {
		bool is64 = c & 1, msb = c & 2;
		m.n = make_elf(f, sizeof(f), is64, msb, 1, ld, strlen(ld) + 1);
		assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_INTERP);
		assert_string_equal(out, ld);
		/* Two PT_INTERP: the kernel takes the first; the gate refuses. */
		m.n = make_elf(f, sizeof(f), is64, msb, 2, ld, strlen(ld) + 1);
		assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
		assert_non_null(strstr(why, "more than one"));
		/* Not NUL-terminated: the kernel refuses it (ENOEXEC). */
		m.n = make_elf(f, sizeof(f), is64, msb, 1, ld, strlen(ld));
		assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
		/* The string cut by the file's end. */
		m.n = make_elf(f, sizeof(f), is64, msb, 1, ld, strlen(ld) + 1) - 3;
		assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
		/* No PT_INTERP. */
		m.n = make_elf(f, sizeof(f), is64, msb, 0, "", 0);
		assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_NONE);
		/* The program header table cut short. */
		m.n = make_elf(f, sizeof(f), is64, msb, 1, ld, strlen(ld) + 1);
		m.n = (is64 ? 64 : 52) + 10;
		assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
		/* The header itself cut short. */
		m.n = is64 ? 60 : 40;
		assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	}
	/* An embedded NUL: the kernel opens the path up to it. */
	m.n = make_elf(f, sizeof(f), true, false, 1, "/bin/a\0/b", 10);
	memcpy(f + 64 + 2 * 56, "/bin/a\0/b", 10);
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_INTERP);
	assert_string_equal(out, "/bin/a");
	/* Oversized PT_INTERP: over PATH_MAX, the kernel refuses it. */
	m.n = make_elf(f, sizeof(f), true, false, 1, ld, MOAT_ELF_INTERP_MAX + 1);
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	/* One byte: too short for a path. */
	m.n = make_elf(f, sizeof(f), true, false, 1, "", 1);
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	/* A program header size that is not the class's. */
	m.n = make_elf(f, sizeof(f), true, false, 1, ld, strlen(ld) + 1);
	put(f + 54, 2, 32, false);
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	/* A table larger than the kernel reads (e_phnum 0xffff). */
	put(f + 54, 2, 56, false);
	put(f + 56, 2, 0xffff, false);
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	/* A table offset that wraps around. */
	put(f + 56, 2, 2, false);
	put(f + 32, 8, UINT64_MAX - 8, false);
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	/* Unknown class, unknown byte order. */
	m.n = make_elf(f, sizeof(f), true, false, 1, ld, strlen(ld) + 1);
	f[4] = 3;
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	f[4] = 2;
	f[5] = 0;
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	/* No program headers at all. */
	f[5] = 1;
	put(f + 56, 2, 0, false);
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_NONE);
	/* Not ELF: a script, an empty file, three bytes of the magic. */
	m.b = (const unsigned char *)"#!/bin/sh\n";
	m.n = 10;
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_NOT);
	m.n = 0;
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_NOT);
	m.b = (const unsigned char *)"\x7f" "EL";
	m.n = 3;
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_NOT);
	/* Magic alone, then nothing: truncated. */
	m.b = (const unsigned char *)"\x7f" "ELF";
	m.n = 4;
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, sizeof(out), &why), MOAT_ELF_BAD);
	/* A buffer too small for any path the kernel opens is refused. */
	m.b = f;
	m.n = make_elf(f, sizeof(f), true, false, 1, ld, strlen(ld) + 1);
	assert_int_equal(moat__exec_elf_interp(mem_read, &m, out, 64, &why), MOAT_ELF_BAD);
}

/* A read-only mount is only as read-only as the writable mounts of the
 * same filesystem that show its files. */
static void test_mount_unwritable(void **state)
{
	(void)state;
	const char *why;
	const char *mi = "477 341 0:116 / / ro,nosuid - tmpfs none rw,size=4096k\n"
			 "478 477 254:0 /usr /usr ro,nosuid,nodev,relatime - ext4 /dev/vda rw,discard\n"
			 "479 477 254:0 /srv/ws/tools /opt/tools ro,relatime shared:5 - ext4 /dev/vda rw\n"
			 "480 477 254:0 /srv/ws /workspace rw,nosuid master:1 - ext4 /dev/vda rw\n"
			 "481 477 254:0 /srv/data /data ro - ext4 /dev/vda rw\n"
			 "482 477 254:0 /srv/data/out /out rw - ext4 /dev/vda rw\n"
			 "483 477 254:0 /srv/wsx /wsx ro - ext4 /dev/vda rw\n"
			 "484 477 0:132 / /tmp rw,nosuid,nodev - tmpfs none rw\n"
			 "485 477 8:1 / /media ro - ext4 /dev/sda1 ro\n"
			 "486 477 8:1 /x /mediax rw - ext4 /dev/sda1 ro\n"
			 "487 477 8:2 / /other ro - ext4 /dev/sdb\\040x rw\n";
	assert_true(moat__mount_unwritable(mi, 477, &why));
	assert_true(moat__mount_unwritable(mi, 478, &why)); /* the workspace is elsewhere on the disk */
	/* A folder of the read-write workspace, bound read-only. */
	assert_false(moat__mount_unwritable(mi, 479, &why));
	assert_non_null(strstr(why, "writable mount of the same filesystem"));
	assert_false(moat__mount_unwritable(mi, 480, &why));
	assert_non_null(strstr(why, "writable mount"));
	/* A read-only folder holding a read-write one. */
	assert_false(moat__mount_unwritable(mi, 481, &why));
	/* /srv/wsx is not inside /srv/ws: names, not prefixes. */
	assert_true(moat__mount_unwritable(mi, 483, &why));
	/* A read-only superblock: nothing is writable through any mount. */
	assert_true(moat__mount_unwritable(mi, 485, &why));
	assert_true(moat__mount_unwritable(mi, 487, &why));
	assert_false(moat__mount_unwritable(mi, 999, &why));
	assert_non_null(strstr(why, "not in"));
	/* A line that cannot be read might be the alias: refused. */
	assert_false(moat__mount_unwritable("478 477 254:0 /usr /usr ro - ext4 /dev/vda rw\ngarbage\n", 478, &why));
	assert_false(moat__mount_unwritable("478 477 254:0 /usr /usr ro ext4 /dev/vda rw\n", 478, &why));
	/* The whole filesystem bound writable somewhere. */
	assert_false(moat__mount_unwritable("1 0 254:0 /usr /usr ro - ext4 /dev/vda rw\n"
					    "2 0 254:0 / /host rw - ext4 /dev/vda rw\n",
					    1, &why));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_line),
		cmocka_unit_test(test_elf_interp),
		cmocka_unit_test(test_mount_unwritable),
		cmocka_unit_test(test_args_match),
		cmocka_unit_test(test_maps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
