/* ATTACK: DNS rebinding: rebind.test first resolves to the allowed upstream, then the test resolver answers 127.0.0.1 | LAYER: gateway resolves once per connection, checks every answer, connects to the checked address | REF: DNS rebinding (Jackson et al. 2007) */
#include "netattack.h"

int main(void)
{
	char hp[64];
	snprintf(hp, sizeof(hp), "rebind.test:%u", na_secret_port());
	/* The first lookup names an allowed address (127.0.0.2, where nothing
	 * listens on this port): it only arms the test name server. The later
	 * ones answer 127.0.0.1 and must be refused. */
	na_quiet = 1;
	na_get("GET http://rebind.test/ (first answer)", hp);
	na_quiet = 0;
	int r = na_get("GET http://rebind.test/ (rebound to 127.0.0.1)", hp);
	if (r != 0)
		return r;
	na_quiet = 1;
	r = na_get("GET http://rebind.test/ (asked again)", hp);
	na_quiet = 0;
	return r == 0 ? 0 : na_escaped("a later lookup of rebind.test got through");
}
