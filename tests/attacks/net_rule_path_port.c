/* ATTACK: a path denied without ports, requested on a port a broader wildcard allow lists | LAYER: gateway rules: a port-less path deny holds on every port | REF: - */
#include "netattack.h"

int main(void)
{
	char what[160];
	snprintf(what, sizeof(what), "GET http://paths.wild.test:%u/admin/x (deny /admin/*)", na_up_port());
	return na_http_raw(what, "GET http://paths.wild.test:%u/admin/x HTTP/1.1\r\nHost: paths.wild.test:%u\r\nConnection: close\r\n\r\n",
			   na_up_port(), na_up_port());
}
