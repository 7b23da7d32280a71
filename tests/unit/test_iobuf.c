/* Unit tests: the bounded byte ring and the non-blocking sink of the
 * supervisor's output path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>

#include "iobuf.h"

static void test_ring_wraps(void **state)
{
	(void)state;
	moat_iobuf b;
	assert_int_equal(moat__iobuf_init(&b, 8), 0);
	assert_int_equal(moat__iobuf_push(&b, "abcdef", 6), 6);
	assert_int_equal(moat__iobuf_room(&b), 2);
	/* Only what fits is taken. */
	assert_int_equal(moat__iobuf_push(&b, "ghijk", 5), 2);
	assert_int_equal(moat__iobuf_room(&b), 0);
	size_t n;
	const char *p = moat__iobuf_peek(&b, &n);
	assert_int_equal(n, 8);
	assert_memory_equal(p, "abcdefgh", 8);
	moat__iobuf_drop(&b, 5);
	assert_int_equal(moat__iobuf_push(&b, "XYZ", 3), 3);
	/* Held: "fgh" at the end of the ring, then "XYZ" at its start. */
	p = moat__iobuf_peek(&b, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(p, "fgh", 3);
	moat__iobuf_drop(&b, 3);
	p = moat__iobuf_peek(&b, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(p, "XYZ", 3);
	moat__iobuf_drop(&b, 3);
	assert_true(moat__iobuf_empty(&b));
	assert_null(moat__iobuf_peek(&b, &n));
	assert_int_equal(n, 0);
	moat__iobuf_free(&b);
	assert_int_equal(moat__iobuf_init(&b, 0), -EINVAL);
}

static void test_ring_grows_bounded(void **state)
{
	(void)state;
	moat_iobuf b;
	assert_int_equal(moat__iobuf_init(&b, 4), 0);
	moat__iobuf_push(&b, "abc", 3);
	moat__iobuf_drop(&b, 2);
	moat__iobuf_push(&b, "def", 3); /* wrapped: "c" "def" */
	/* Growing keeps the order of what is held, up to the bound. */
	assert_int_equal(moat__iobuf_push_grow(&b, "0123456789", 10, 12), 8);
	assert_int_equal(b.cap, 12);
	size_t n;
	const char *p = moat__iobuf_peek(&b, &n);
	assert_int_equal(n, 12);
	assert_memory_equal(p, "cdef01234567", 12);
	assert_int_equal(moat__iobuf_push_grow(&b, "x", 1, 12), 0);
	moat__iobuf_free(&b);
}

/* A pipe nobody reads: the sink takes what it can hold, never blocks, and
 * counts what it had to drop. */
static void test_sink_never_blocks(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	moat_sink s;
	assert_int_equal(moat__sink_open(&s, p[1], false), 0);
	/* The caller's description is untouched: the sink has one of its own. */
	assert_int_equal(fcntl(p[1], F_GETFL) & O_NONBLOCK, 0);
	static char chunk[65536];
	memset(chunk, 'x', sizeof(chunk));
	uint64_t put = 0;
	for (int i = 0; i < 64 && moat__sink_room(&s) > 0; i++) {
		size_t room = moat__sink_room(&s);
		size_t n = room < sizeof(chunk) ? room : sizeof(chunk);
		moat__sink_put(&s, chunk, n);
		put += n;
	}
	assert_int_equal(moat__sink_room(&s), 0);
	assert_true(moat__sink_pending(&s));
	/* The pipe holds its 64 KiB, the sink its capacity. */
	assert_true(put >= MOAT_IOBUF_CAP);
	moat__sink_flush(&s);
	assert_true(moat__sink_pending(&s));
	/* The reader reads some: room again. */
	static char sink_out[65536];
	assert_true(read(p[0], sink_out, sizeof(sink_out)) > 0);
	moat__sink_flush(&s);
	assert_true(moat__sink_room(&s) > 0);
	/* Closing drops what is still held and counts it. */
	uint64_t held = s.buf.len, before = s.dropped;
	moat__sink_close(&s);
	assert_int_equal(s.fd, -1);
	assert_true(held > 0);
	assert_int_equal(s.dropped, before + held);
	close(p[0]);
	close(p[1]);
}

/* A consumer that goes away: the sink drops from then on, counting it. */
static void test_sink_broken(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	moat_sink s;
	assert_int_equal(moat__sink_open(&s, sv[0], false), 0);
	assert_true(s.is_socket);
	/* A socket's description is never changed: it is sent to with
	 * MSG_DONTWAIT. */
	assert_int_equal(fcntl(sv[0], F_GETFL) & O_NONBLOCK, 0);
	moat__sink_put(&s, "hello", 5);
	char got[8];
	assert_int_equal(read(sv[1], got, sizeof(got)), 5);
	close(sv[1]);
	moat__sink_put(&s, "again", 5);
	assert_true(s.broken);
	assert_int_equal(s.dropped, 5);
	assert_int_equal(moat__sink_room(&s), SIZE_MAX);
	moat__sink_put(&s, "more", 4);
	assert_int_equal(s.dropped, 9);
	moat__sink_close(&s);
	close(sv[0]);
}

/* A sink with nowhere to go takes everything and holds nothing. */
static void test_sink_nowhere(void **state)
{
	(void)state;
	moat_sink s;
	assert_int_equal(moat__sink_open(&s, -1, false), 0);
	assert_int_equal(moat__sink_room(&s), SIZE_MAX);
	moat__sink_put(&s, "x", 1);
	assert_false(moat__sink_pending(&s));
	assert_int_equal(s.dropped, 0);
	moat__sink_close(&s);
	moat_sink never = MOAT_SINK_INIT;
	moat__sink_close(&never);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_wraps),
		cmocka_unit_test(test_ring_grows_bounded),
		cmocka_unit_test(test_sink_never_blocks),
		cmocka_unit_test(test_sink_broken),
		cmocka_unit_test(test_sink_nowhere),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
