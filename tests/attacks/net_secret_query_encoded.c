/* ATTACK: a secret's placeholder percent-encoded in a URL (moat%5Fph%5F...) | LAYER: gateway secret misuse (URL, decoded) | REF: - */
#include "netsecret.h"

int main(void)
{
	const char *ph = ns_placeholder();
	if (!ph)
		return ns_no_placeholder();
	char enc[1024];
	size_t o = 0;
	for (const char *p = ph; *p && o + 4 < sizeof(enc); p++)
		o += (size_t)(*p == '_' ? snprintf(enc + o, sizeof(enc) - o, "%%5F") : snprintf(enc + o, sizeof(enc) - o, "%c", *p));
	return na_http_raw("placeholder percent-encoded in the path", "GET http://%s/x/%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
			   na_up(), enc, na_up());
}
