/* ATTACK: "Host: up%2etest", judged as up.test but forwarded as sent, a name the rules never judged | LAYER: gateway: a host must be spelt on the wire as it is judged | REF: - */
#include "netattack.h"

int main(void)
{
	char what[160];
	snprintf(what, sizeof(what), "GET http://up.test:%u/ with Host: up%%2etest:%u", na_up_port(), na_up_port());
	return na_http_raw(what, "GET http://up.test:%u/ HTTP/1.1\r\nHost: up%%2etest:%u\r\nConnection: close\r\n\r\n", na_up_port(),
			   na_up_port());
}
