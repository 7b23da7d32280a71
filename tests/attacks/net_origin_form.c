/* ATTACK: origin-form request naming the internal server only in Host | LAYER: gateway accepts only absolute-form requests | REF: - */
#include "netattack.h"

int main(void)
{
	return na_http_raw("origin-form GET with Host: 127.0.0.1", "GET / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", na_secret_port());
}
