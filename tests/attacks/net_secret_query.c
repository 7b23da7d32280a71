/* ATTACK: a secret's placeholder in a URL's query string | LAYER: gateway secret misuse (URL) | REF: - */
#include "netsecret.h"

int main(void)
{
	const char *ph = ns_placeholder();
	if (!ph)
		return ns_no_placeholder();
	return na_http_raw("placeholder in the query", "GET http://%s/?key=%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
			   na_up(), ph, na_up());
}
