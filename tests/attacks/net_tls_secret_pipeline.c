/* ATTACK: a second request pipelined behind one the secret is bound to, on one kept-alive terminated connection | LAYER: gateway secret binding (keep-alive) | REF: - */
/* The first request, GET on a bound path, gets the value; the second one,
 * written in the same TLS record, asks for a method (DELETE) or a path
 * (/admin/) the secret is not bound to. A gateway that decided the
 * connection once, or carried the first request's injection over, would
 * send the value with it: the upstream's echo of that request is the
 * escape. Each must be decided on its own and refused. */
#include "nettls.h"

static int one(const char *what, const char *second_line)
{
	const char *ph = nt_placeholder();
	const char *target = nt_target();
	char req[2048], out[65536];
	int n = snprintf(req, sizeof(req),
			 "GET /repos/myorg/echo-first HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n"
			 "%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n",
			 target, ph, second_line, target, ph);
	const char *why = NULL;
	long got = nt_exchange(req, (size_t)n, out, sizeof(out), &why);
	if (got < 0)
		return na_unexpected(why);
	/* The upstream's echo starts with the request line it received; a
	 * refusal names the request too, but never as a request line. */
	if (!strstr(out, "GET /repos/myorg/echo-first HTTP/1.1\n"))
		return na_unexpected("the bound first request was not answered by the upstream");
	char echo[256];
	snprintf(echo, sizeof(echo), "%s HTTP/1.1\n", second_line);
	if (strstr(out, echo))
		return na_escaped(what);
	return na_blocked(what);
}

int main(void)
{
	if (!nt_target() || !nt_placeholder())
		return ns_no_placeholder();
	int r = one("a pipelined DELETE on the bound path", "DELETE /repos/myorg/echo-second");
	if (r != 0)
		return r;
	return one("a pipelined GET of an unbound path", "GET /admin/echo-second");
}
