/* ATTACK: a request smuggled in the body of one the secret is bound to, on a kept-alive terminated connection | LAYER: gateway request framing (keep-alive) | REF: CWE-444 */
/* A POST to a bound path carries, as its body (by Content-Length, then
 * chunked), a whole request for a path the secret is not bound to, with
 * the placeholder; a last request follows. The body is the body: a gateway
 * that read it as a request would decide and send it (the upstream's echo
 * of GET /admin/... is the escape). */
#include "nettls.h"

int main(void)
{
	const char *ph = nt_placeholder();
	const char *target = nt_target();
	if (!target || !ph)
		return ns_no_placeholder();
	char inner[1024], req[4096], out[65536];
	int il = snprintf(inner, sizeof(inner), "GET /admin/echo-smuggled HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n",
			  target, ph);
	for (int chunked = 0; chunked <= 1; chunked++) {
		int n;
		if (chunked)
			n = snprintf(req, sizeof(req),
				     "POST /repos/myorg/echo-carrier HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
				     "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
				     "GET /repos/myorg/echo-last HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
				     target, ph, il, inner, target);
		else
			n = snprintf(req, sizeof(req),
				     "POST /repos/myorg/echo-carrier HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
				     "Content-Length: %d\r\n\r\n%s"
				     "GET /repos/myorg/echo-last HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
				     target, ph, il, inner, target);
		const char *why = NULL;
		long got = nt_exchange(req, (size_t)n, out, sizeof(out), &why);
		if (got < 0)
			return na_unexpected(why);
		/* The upstream's echo starts with the request line it got. */
		if (strstr(out, "GET /admin/echo-smuggled HTTP/1.1\n"))
			return na_escaped(chunked ? "a request in a chunked body was sent as one" : "a request in a body was sent as one");
		if (!strstr(out, "POST /repos/myorg/echo-carrier HTTP/1.1\n") ||
		    !strstr(out, "GET /repos/myorg/echo-last HTTP/1.1\n"))
			return na_unexpected("the carrier and the last request were not both answered on one connection");
		if (nt_responses(out) != 2)
			return na_unexpected("not exactly two responses on the connection");
	}
	return na_blocked("requests in a body (Content-Length and chunked) stayed body");
}
