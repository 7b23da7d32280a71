/* ATTACK: fragment trick: http://127.0.0.1#@up.test/ | LAYER: URL parser refuses '#' in the authority | REF: Orange Tsai, A New Era of SSRF (2017) */
#include "netattack.h"

int main(void)
{
	return na_http_raw("GET http://127.0.0.1#@up.test/", "GET http://127.0.0.1:%u#@%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", na_secret_port(), na_up(), na_up());
}
