/* ATTACK: leave symlinks in /out pointing at host secrets (absolute and climbing), for the host to follow later | LAYER: output clean-up after the run (links out of /out removed) | REF: CVE-2017-1002101 class */
#include "attack.h"

int main(void)
{
	/* Creating a link is allowed (workspaces need them); what matters is
	 * that none of these is left for the host once the run is over, which
	 * tests/integration/attacks.sh checks. */
	int made = 0;
	made += symlink("/etc/shadow", "/out/evil") == 0;
	made += symlink("../../../../../../etc/shadow", "/out/climb") == 0;
	made += symlink("/proc/self/root/etc/shadow", "/out/proc") == 0;
	if (mkdir("/out/d", 0755) == 0)
		made += symlink("../../etc/passwd", "/out/d/up") == 0;
	BLOCKED("%d dangerous links made; the host must not find any after the run", made);
}
