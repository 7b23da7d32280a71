/* Fuzz target: SOCKS5 greeting and request. */
#include "fuzz.h"

#include <string.h>

#include "proxyproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = { 0 };
	size_t used = 0;
	bool noauth;
	int r = moat_socks5_greeting_parse(data, size, &used, &noauth, &err);
	if (r != MOAT_PARSE_DONE)
		return 0;
	FUZZ_CHECK(used >= 3 && used <= size);
	moat_socks5_request q;
	uint8_t reply = 0xee;
	size_t used2 = 0;
	r = moat_socks5_request_parse(data + used, size - used, &used2, &q, &reply, &err);
	if (r == MOAT_PARSE_DONE) {
		FUZZ_CHECK(used2 <= size - used && q.cmd == 1 && q.port != 0);
		FUZZ_CHECK(reply == MOAT_SOCKS5_REP_SUCCEEDED);
		FUZZ_CHECK(!q.is_domain || (strlen(q.domain) >= 1 && strlen(q.domain) <= 255));
	} else if (r < 0) {
		FUZZ_CHECK(reply != MOAT_SOCKS5_REP_SUCCEEDED && err.msg[0]);
	}
	return 0;
}
