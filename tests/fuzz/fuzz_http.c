/* Fuzz target: the HTTP request head parser. The input is fed in chunks
 * whose sizes come from the input's first byte, and the result must not
 * depend on the chunking: the same input fed whole must end the same way. */
#include "fuzz.h"

#include <string.h>

#include "proxyproto.h"

static int run(moat_http_parser *p, const uint8_t *d, size_t n, size_t step, size_t *ret_consumed,
	       moat_error *err)
{
	size_t off = 0, total = 0;
	int r = MOAT_PARSE_MORE;
	moat_http_parser_reset(p);
	while (off < n) {
		size_t k = step < n - off ? step : n - off, used = 0;
		r = moat_http_parser_feed(p, d + off, k, &used, err);
		FUZZ_CHECK(used <= k);
		total += used;
		if (r != MOAT_PARSE_MORE)
			break;
		FUZZ_CHECK(used == k);
		off += k;
	}
	*ret_consumed = total;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static moat_http_parser *p;
	moat_error err = { 0 };
	size_t c1, c2;

	if (size < 1)
		return 0;
	if (!p)
		p = moat_http_parser_new();
	size_t step = data[0] % 16 + 1;
	data++;
	size--;

	int whole = run(p, data, size, size ? size : 1, &c1, &err);
	int chunked = run(p, data, size, step, &c2, &err);
	FUZZ_CHECK(whole == chunked);
	if (chunked == MOAT_PARSE_DONE) {
		const moat_http_request *q = moat_http_parser_request(p);
		FUZZ_CHECK(q != NULL);
		FUZZ_CHECK(c1 == c2 && c2 == q->head_len && q->head_len <= size);
		FUZZ_CHECK(q->head_len >= 4 && memcmp(data + q->head_len - 4, "\r\n\r\n", 4) == 0);
		FUZZ_CHECK(q->n_headers <= MOAT_HTTP_MAX_HEADERS);
		FUZZ_CHECK(q->path && q->path[0] == '/');
		FUZZ_CHECK(q->host.name[0] != '\0' || q->form == MOAT_HTTP_ABSOLUTE_FORM ||
			   q->form == MOAT_HTTP_AUTHORITY_FORM);
		FUZZ_CHECK(!(q->body == MOAT_HTTP_BODY_CHUNKED && moat_http_request_header(q, "content-length")));
		for (size_t i = 0; i < q->n_headers; i++)
			FUZZ_CHECK(!strchr(q->headers[i].value, '\r') && !strchr(q->headers[i].value, '\n'));
	} else if (chunked < 0) {
		FUZZ_CHECK(err.msg[0] != '\0');
	}
	return 0;
}
