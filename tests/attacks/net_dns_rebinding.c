/* ATTACK: DNS rebinding: rebind.test first resolves to the allowed upstream, then the test resolver answers 127.0.0.1 | LAYER: gateway resolves once per connection, checks every answer, connects to the checked address | REF: DNS rebinding (Jackson et al. 2007) */
#include "netattack.h"

int main(void)
{
	char hp[64];
	snprintf(hp, sizeof(hp), "rebind.test:%u", na_secret_port());
	/* The first lookup may pass (it names the allowed upstream's address);
	 * the later ones answer 127.0.0.1 and must be refused. */
	for (int i = 0; i < 3; i++) {
		int r = na_get("GET http://rebind.test/ (rebinding)", hp);
		if (r == 1 && i == 0)
			continue; /* the first answer is the allowed upstream */
		if (r != 0 || i > 0)
			return r;
	}
	return na_unexpected("rebinding never produced a refusal");
}
