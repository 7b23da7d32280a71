/* ATTACK: allowed URL but a Host header naming the internal server | LAYER: gateway requires Host to match the URL | REF: - */
#include "netattack.h"

int main(void)
{
	return na_http_raw("Host header differs from the URL", "GET http://%s/ HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", na_up(), na_secret_port());
}
