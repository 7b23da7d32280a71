/* ATTACK: a GET carrying "X-HTTP-Method-Override: DELETE" to a host where DELETE is denied | LAYER: gateway: a method override is judged as the method it names | REF: - */
#include "netattack.h"

int main(void)
{
	char what[160];
	snprintf(what, sizeof(what), "GET http://get.wild.test:%u/ with X-HTTP-Method-Override: DELETE (deny DELETE)", na_up_port());
	return na_http_raw(what, "GET http://get.wild.test:%u/ HTTP/1.1\r\nHost: get.wild.test:%u\r\nX-HTTP-Method-Override: DELETE\r\nConnection: close\r\n\r\n",
			   na_up_port(), na_up_port());
}
