/* ATTACK: "/admin%2Fsecret" where everything below /admin/ is denied: one segment to the rules, "/admin/secret" to a server that decodes %2F | LAYER: gateway rules: a path is judged both ways and refused when the readings differ | REF: - */
#include "netattack.h"

int main(void)
{
	char what[160];
	snprintf(what, sizeof(what), "GET http://paths.wild.test:%u/admin%%2Fsecret (deny /admin/*)", na_up_port());
	return na_http_raw(what, "GET http://paths.wild.test:%u/admin%%2Fsecret HTTP/1.1\r\nHost: paths.wild.test:%u\r\nConnection: close\r\n\r\n",
			   na_up_port(), na_up_port());
}
