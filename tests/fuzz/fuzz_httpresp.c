/* Fuzz target: where an upstream's response ends (httpresp.h). The end
 * must not depend on how the bytes were split: the gateway feeds whatever
 * each read brought, and an end found in a different place for a different
 * split would hand the next response's bytes to the wrong request, or
 * pool a connection with bytes still due. The first byte says whether the
 * request was HEAD. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include "httpresp.h"
#include "proxyproto.h"

static int feed_in_steps(const uint8_t *data, size_t size, size_t step, bool head, size_t *ret_used,
			 moat_http_resp *r)
{
	moat_error err = { 0 };
	moat_http_resp_init(r, head);
	size_t total = 0;
	int ret = MOAT_PARSE_MORE;
	for (size_t off = 0; off < size && ret == MOAT_PARSE_MORE; off += step) {
		size_t n = size - off < step ? size - off : step, used = 0;
		ret = moat_http_resp_feed(r, data + off, n, &used, &err);
		if (ret < 0) {
			FUZZ_CHECK((ret == -EBADMSG || ret == -E2BIG) && err.msg[0]);
			break;
		}
		FUZZ_CHECK(used <= n);
		FUZZ_CHECK(ret == MOAT_PARSE_DONE || used == n);
		total += used;
	}
	*ret_used = total;
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	bool head = data[0] & 1;
	data++;
	size--;
	static moat_http_resp whole, bytes, odd;
	size_t u1, u2, u3;
	int r1 = feed_in_steps(data, size, size ? size : 1, head, &u1, &whole);
	int r2 = feed_in_steps(data, size, 1, head, &u2, &bytes);
	int r3 = feed_in_steps(data, size, 7, head, &u3, &odd);
	FUZZ_CHECK(r1 == r2 && r2 == r3);
	if (r1 >= 0) {
		FUZZ_CHECK(u1 == u2 && u2 == u3);
		FUZZ_CHECK(u1 <= size);
		FUZZ_CHECK(whole.reusable == bytes.reusable && bytes.reusable == odd.reusable);
		FUZZ_CHECK(whole.close_delimited == bytes.close_delimited);
		/* A body that ends with the server's close takes every byte and
		 * is never reused. */
		FUZZ_CHECK(!whole.close_delimited || (r1 == MOAT_PARSE_MORE && !whole.reusable));
	}
	return 0;
}
