/* Unit tests: the file trail's pure parts (event types, path joining). The
 * trail itself is exercised end to end in tests/integration/audit.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <string.h>

#include "fanwatch.h"
#include "filetrail.h"

#include <openssl/sha.h>

static void test_event_type(void **state)
{
	(void)state;
	assert_string_equal(moat__filetrail_event_type("execve", 0), "exec");
	assert_string_equal(moat__filetrail_event_type("execveat", 0), "exec");
	assert_string_equal(moat__filetrail_event_type("openat", O_RDONLY), "file.open");
	assert_string_equal(moat__filetrail_event_type("openat", O_RDONLY | O_DIRECTORY | O_CLOEXEC), "file.open");
	assert_string_equal(moat__filetrail_event_type("open", O_WRONLY), "file.write");
	assert_string_equal(moat__filetrail_event_type("openat2", O_RDWR), "file.write");
	/* Creating or truncating is a write even when opened read-only. */
	assert_string_equal(moat__filetrail_event_type("openat", O_RDONLY | O_CREAT), "file.write");
	assert_string_equal(moat__filetrail_event_type("openat", O_RDONLY | O_TRUNC), "file.write");
	assert_string_equal(moat__filetrail_event_type("creat", 0), "file.write");
	assert_string_equal(moat__filetrail_event_type("unlinkat", 0), "file.unlink");
	assert_string_equal(moat__filetrail_event_type("rmdir", 0), "file.unlink");
	assert_string_equal(moat__filetrail_event_type("renameat2", 0), "file.rename");
	assert_string_equal(moat__filetrail_event_type("truncate", 0), "file.truncate");
	assert_string_equal(moat__filetrail_event_type("link", 0), "file.link");
	assert_string_equal(moat__filetrail_event_type("linkat", 0), "file.link");
	assert_string_equal(moat__filetrail_event_type("symlink", 0), "file.symlink");
	assert_string_equal(moat__filetrail_event_type("symlinkat", 0), "file.symlink");
	assert_string_equal(moat__filetrail_event_type("mkdir", 0), "file.mkdir");
	assert_string_equal(moat__filetrail_event_type("mkdirat", 0), "file.mkdir");
	assert_string_equal(moat__filetrail_event_type("chmod", 0), "file.chmod");
	assert_string_equal(moat__filetrail_event_type("fchmodat", 0), "file.chmod");
	assert_string_equal(moat__filetrail_event_type("fchmodat2", 0), "file.chmod");
	assert_null(moat__filetrail_event_type("read", 0));
	assert_null(moat__filetrail_event_type(NULL, 0));
}

static void test_join(void **state)
{
	(void)state;
	char *s = moat__filetrail_join("/out", "note.txt");
	assert_string_equal(s, "/out/note.txt");
	free(s);
	s = moat__filetrail_join("/", "etc/hostname");
	assert_string_equal(s, "/etc/hostname");
	free(s);
	s = moat__filetrail_join("/out", "/abs");
	assert_string_equal(s, "/abs");
	free(s);
	/* Unknown base: the path stays as asked. */
	s = moat__filetrail_join(NULL, "rel");
	assert_string_equal(s, "rel");
	free(s);
	/* Nothing is normalised: ".." is what the program asked for. */
	s = moat__filetrail_join("/out", "../etc/passwd");
	assert_string_equal(s, "/out/../etc/passwd");
	free(s);
}

static void test_mode(void **state)
{
	(void)state;
	json_t *j = moat__filetrail_mode_json(0755);
	assert_string_equal(json_string_value(j), "0755");
	json_decref(j);
	/* Only the permission bits and setuid/setgid/sticky. */
	j = moat__filetrail_mode_json(0104777);
	assert_string_equal(json_string_value(j), "04777");
	json_decref(j);
}

static void sha256_hex(const char *buf, size_t len, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)buf, len, md);
	moat__hex_encode(md, sizeof(md), out);
}

/* A small argv is kept whole, chunked or not. */
static void test_argv_whole(void **state)
{
	(void)state;
	moat_trail_argv *v = moat__trail_argv_new();
	assert_int_equal(moat__trail_argv_add(v, "py", 2), 0);
	assert_int_equal(moat__trail_argv_add(v, "thon3", 5), 0);
	assert_int_equal(moat__trail_argv_end(v), 0);
	assert_int_equal(moat__trail_argv_end(v), 0); /* an empty string */
	assert_int_equal(moat__trail_argv_add(v, "caf\xc3\xa9", 5), 0);
	assert_int_equal(moat__trail_argv_end(v), 0);
	json_t *f = json_object();
	moat__trail_argv_finish(v, true, f);
	char *s = json_dumps(f, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s, "{\"argv\":[\"python3\",\"\",\"caf\xc3\xa9\"]}");
	free(s);
	json_decref(f);
	/* No argument at all. */
	f = json_object();
	moat__trail_argv_finish(moat__trail_argv_new(), true, f);
	assert_int_equal(json_array_size(json_object_get(f, "argv")), 0);
	json_decref(f);
}

/* Past MOAT_TRAIL_ARGV_WHOLE: the first 4 KiB and the SHA-256 of all the
 * strings with their NULs, which anyone holding the argv can recompute. */
static void test_argv_head_and_hash(void **state)
{
	(void)state;
	size_t big = 700u << 10;
	char *joined = malloc(2 * big + 4);
	memcpy(joined, "sh\0", 3);
	memset(joined + 3, 'A', big);
	joined[3 + big] = '\0';
	memset(joined + 4 + big, 'B', big - 1);
	joined[3 + 2 * big] = '\0';
	size_t total = 4 + 2 * big;
	moat_trail_argv *v = moat__trail_argv_new();
	/* Fed in odd chunks, as the pages of the caller's memory come. */
	size_t start = 0;
	for (size_t i = 0; i < total; i++)
		if (joined[i] == '\0') {
			for (size_t p = start; p < i; p += 1000)
				moat__trail_argv_add(v, joined + p, i - p < 1000 ? i - p : 1000);
			moat__trail_argv_end(v);
			start = i + 1;
		}
	json_t *f = json_object();
	moat__trail_argv_finish(v, true, f);
	char want[65];
	sha256_hex(joined, total, want);
	assert_string_equal(json_string_value(json_object_get(f, "argv_sha256")), want);
	assert_true(json_is_true(json_object_get(f, "argv_truncated")));
	assert_int_equal(json_integer_value(json_object_get(f, "argc")), 3);
	assert_int_equal(json_integer_value(json_object_get(f, "argv_bytes")), total);
	json_t *a = json_object_get(f, "argv");
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_array_get(a, 0)), "sh");
	/* The head is the first MOAT_TRAIL_ARGV_HEAD bytes: "sh\0" and the
	 * start of the second string. */
	assert_int_equal(strlen(json_string_value(json_array_get(a, 1))), MOAT_TRAIL_ARGV_HEAD - 3);
	char *line = json_dumps(f, JSON_COMPACT);
	assert_true(strlen(line) < 3 * MOAT_TRAIL_ARGV_HEAD);
	free(line);
	json_decref(f);
	/* An argv not read to its end gives no hash. */
	v = moat__trail_argv_new();
	moat__trail_argv_add(v, joined + 3, big);
	f = json_object();
	moat__trail_argv_finish(v, false, f);
	assert_null(json_object_get(f, "argv_sha256"));
	assert_true(json_is_true(json_object_get(f, "argv_truncated")));
	json_decref(f);
	free(joined);
}

/* Many small strings are cut at MOAT_TRAIL_ARGV_WHOLE_COUNT. */
static void test_argv_many(void **state)
{
	(void)state;
	moat_trail_argv *v = moat__trail_argv_new();
	for (unsigned i = 0; i < MOAT_TRAIL_ARGV_WHOLE_COUNT + 1; i++) {
		moat__trail_argv_add(v, "x", 1);
		moat__trail_argv_end(v);
	}
	json_t *f = json_object();
	moat__trail_argv_finish(v, true, f);
	assert_int_equal(json_integer_value(json_object_get(f, "argc")), MOAT_TRAIL_ARGV_WHOLE_COUNT + 1);
	assert_int_equal(json_array_size(json_object_get(f, "argv")), MOAT_TRAIL_ARGV_HEAD / 2);
	json_decref(f);
}

/* Which of the sandbox's mounts fanotify marks: those holding files, with
 * mountinfo's escapes undone. */
static void test_fanwatch_mounts(void **state)
{
	(void)state;
	const char *mi =
		"500 400 0:50 / / ro,nosuid,nodev - tmpfs tmpfs rw\n"
		"501 500 8:1 /usr /usr ro,nosuid,nodev - ext4 /dev/vda rw\n"
		"502 500 0:51 / /proc rw,nosuid - proc proc rw\n"
		"503 500 0:52 / /dev ro - tmpfs tmpfs rw\n"
		"504 503 0:5 /null /dev/null rw - devtmpfs udev rw\n"
		"505 500 0:53 / /tmp rw,nosuid,nodev - tmpfs tmpfs rw,size=65536k\n"
		"506 500 8:1 /home/u/my\\040data /data\\040in ro - ext4 /dev/vda rw\n"
		"507 500 0:54 / /sys/fs/cgroup ro - cgroup2 cgroup rw\n"
		"garbage line\n";
	char **v = moat__fanwatch_mounts(mi);
	assert_non_null(v);
	assert_int_equal(moat__strv_length(v), 4);
	assert_string_equal(v[0], "/");
	assert_string_equal(v[1], "/usr");
	assert_string_equal(v[2], "/tmp");
	assert_string_equal(v[3], "/data in");
	moat__strv_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_type),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_fanwatch_mounts),
		cmocka_unit_test(test_argv_whole),
		cmocka_unit_test(test_argv_head_and_hash),
		cmocka_unit_test(test_argv_many),
	};
	return cmocka_run_group_tests_name("filetrail", tests, NULL, NULL);
}
