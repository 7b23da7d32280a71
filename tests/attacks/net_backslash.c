/* ATTACK: backslash trick: http://up.test\\@127.0.0.1/ | LAYER: hostname normaliser refuses backslashes | REF: CVE-2021-22118 class (URL parser differentials) */
#include "netattack.h"

int main(void)
{
	return na_http_raw("GET http://up.test\\@127.0.0.1/", "GET http://%s\\@127.0.0.1:%u/ HTTP/1.1\r\nHost: %s\r\n\r\n", na_up(), na_secret_port(), na_up());
}
