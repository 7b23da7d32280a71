/* ATTACK: a secret's placeholder in a header to an allowed host it is not bound to | LAYER: gateway secret binding (misuse alert) | REF: - */
#include "netsecret.h"

int main(void)
{
	const char *ph = ns_placeholder();
	if (!ph)
		return ns_no_placeholder();
	return na_http_raw("placeholder to up.test", "GET http://%s/headers HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n",
			   na_up(), na_up(), ph);
}
