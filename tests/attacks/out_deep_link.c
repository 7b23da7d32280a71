/* ATTACK: hide links to host secrets where the /out clean-up does not look: 300 folders deep, and in a folder with no permissions | LAYER: output clean-up without a depth that leaves links unchecked: too deep is removed, unreadable is opened, what cannot be checked fails the run (outdir.c) | REF: - */
#include "attack.h"

int main(void)
{
	int made = 0;
	if (chdir("/out") < 0)
		BROKEN("chdir /out: %s", strerror(errno));
	for (int i = 0; i < 300; i++) {
		if (mkdir("d", 0755) < 0 || chdir("d") < 0)
			BROKEN("mkdir level %d: %s", i, strerror(errno));
		if (i % 50 == 49)
			made += symlink("/etc/shadow", "evil") == 0;
	}
	made += symlink("/etc/shadow", "evil-bottom") == 0;
	if (mkdir("/out/locked", 0755) == 0) {
		made += symlink("/etc/passwd", "/out/locked/evil") == 0;
		chmod("/out/locked", 0);
	}
	BLOCKED("%d links made deep or locked away; the host must not find any after the run", made);
}
