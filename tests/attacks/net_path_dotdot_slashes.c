/* ATTACK: "/admin//../public/x" where everything below /admin/ is denied: "/public/x" once "//" is folded, "/admin/public/x" to a server that keeps the empty segment | LAYER: gateway rules: ".." after "//" is refused | REF: - */
#include "netattack.h"

int main(void)
{
	char what[160];
	snprintf(what, sizeof(what), "GET http://paths.wild.test:%u/admin//../public/x (deny /admin/*)", na_up_port());
	return na_http_raw(what, "GET http://paths.wild.test:%u/admin//../public/x HTTP/1.1\r\nHost: paths.wild.test:%u\r\nConnection: close\r\n\r\n",
			   na_up_port(), na_up_port());
}
