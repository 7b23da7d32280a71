/* ATTACK: a percent-encoded NUL in the URL host (up.test%00.evil.test) | LAYER: hostname normaliser rejects NUL after decoding | REF: - */
#include "netattack.h"

int main(void)
{
	char hp[128];
	snprintf(hp, sizeof(hp), "up.test%%00.127.0.0.1:%u", na_secret_port());
	return na_get("GET http://up.test%00.127.0.0.1/", hp);
}
