/* Fuzz target: chunked request bodies. The end of a body must not depend
 * on how its bytes were split: the gateway feeds whatever each read
 * brought, and a framing that ends in a different place for a different
 * split would let a second request through. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include "proxyproto.h"

static int feed_in_steps(const uint8_t *data, size_t size, size_t step, size_t *ret_used, moat_chunked *c)
{
	moat_error err = { 0 };
	moat_chunked_init(c);
	size_t total = 0;
	int r = MOAT_PARSE_MORE;
	for (size_t off = 0; off < size && r == MOAT_PARSE_MORE; off += step) {
		size_t n = size - off < step ? size - off : step, used = 0;
		r = moat_chunked_feed(c, data + off, n, &used, &err);
		if (r < 0) {
			FUZZ_CHECK(r == -EBADMSG && err.msg[0]);
			break;
		}
		FUZZ_CHECK(used <= n);
		FUZZ_CHECK(r == MOAT_PARSE_DONE || used == n);
		total += used;
	}
	*ret_used = total;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_chunked whole, bytes, odd;
	size_t u1, u2, u3;
	int r1 = feed_in_steps(data, size, size ? size : 1, &u1, &whole);
	int r2 = feed_in_steps(data, size, 1, &u2, &bytes);
	int r3 = feed_in_steps(data, size, 7, &u3, &odd);
	FUZZ_CHECK(r1 == r2 && r2 == r3);
	if (r1 >= 0) {
		FUZZ_CHECK(u1 == u2 && u2 == u3);
		FUZZ_CHECK(whole.body == bytes.body && bytes.body == odd.body);
		FUZZ_CHECK(whole.body <= u1);
	}
	return 0;
}
