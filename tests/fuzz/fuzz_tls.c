/* Fuzz target: TLS ClientHello parsing. Every prefix of an input that
 * parses must ask for more bytes rather than fail or succeed early. */
#include "fuzz.h"

#include <string.h>

#include "proxyproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_tls_hello h;
	moat_error err = { 0 };
	int r = moat_tls_hello_parse(data, size, &h, &err);
	if (r == MOAT_PARSE_DONE) {
		FUZZ_CHECK(h.bytes <= size && h.bytes >= 5 + 4 + 38);
		FUZZ_CHECK(!h.has_sni || (strlen(h.sni) >= 1 && strlen(h.sni) <= MOAT_HOST_MAX));
		/* The hello ends where the parser says: fed exactly those bytes
		 * it reads the same, and one byte fewer it wants more. */
		moat_tls_hello h2;
		FUZZ_CHECK(moat_tls_hello_parse(data, h.bytes, &h2, &err) == MOAT_PARSE_DONE);
		FUZZ_CHECK(h2.has_sni == h.has_sni && strcmp(h2.sni, h.sni) == 0);
		FUZZ_CHECK(moat_tls_hello_parse(data, h.bytes - 1, &h2, &err) == MOAT_PARSE_MORE);
	} else if (r < 0) {
		FUZZ_CHECK(err.msg[0] != '\0');
	} else {
		FUZZ_CHECK(r == MOAT_PARSE_MORE);
	}
	return 0;
}
