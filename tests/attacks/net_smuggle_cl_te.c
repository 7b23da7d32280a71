/* ATTACK: request smuggling with both Content-Length and Transfer-Encoding | LAYER: HTTP parser refuses the ambiguity | REF: CVE-2019-18277 class (CL.TE smuggling) */
#include "netattack.h"

int main(void)
{
	return na_http_raw("CL.TE smuggling",
			   "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
			   "GET http://127.0.0.1:%u/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
			   na_up(), na_up(), na_secret_port());
}
