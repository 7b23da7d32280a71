/* ATTACK: a secret's placeholder to its own host in plain HTTP, where the value would travel in the clear | LAYER: gateway injects only into terminated TLS | REF: - */
#include "netsecret.h"

int main(void)
{
	const char *ph = ns_placeholder();
	if (!ph)
		return ns_no_placeholder();
	unsigned port = na_up_port();
	return na_http_raw("placeholder to the bound host over plain HTTP",
			   "GET http://bound.wild.test:%u/headers HTTP/1.1\r\nHost: bound.wild.test:%u\r\n"
			   "Authorization: Bearer %s\r\nConnection: close\r\n\r\n", port, port, ph);
}
