/* ATTACK: a secret's placeholder as a SOCKS5 domain name | LAYER: gateway secret misuse (host names, DNS) | REF: - */
#include "netsecret.h"

int main(void)
{
	const char *ph = ns_placeholder();
	if (!ph)
		return ns_no_placeholder();
	char h[255];
	int hl = snprintf(h, sizeof(h), "%.60s.wild.test", ph);
	unsigned char req[300] = {5, 1, 0, 3, (unsigned char)hl};
	memcpy(req + 5, h, (size_t)hl);
	req[5 + hl] = 1, req[6 + hl] = 187;
	return na_socks_judge("SOCKS5 to a placeholder name", req, 7 + (size_t)hl);
}
