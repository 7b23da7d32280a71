/* ATTACK: userinfo trick: http://up.test@127.0.0.1/ | LAYER: hostname parser refuses userinfo | REF: CVE-2018-3774 (url-parse userinfo) */
#include "netattack.h"

int main(void)
{
	char hp[128];
	snprintf(hp, sizeof(hp), "%s@127.0.0.1:%u", na_up(), na_secret_port());
	return na_get("GET http://up.test@127.0.0.1/", hp);
}
