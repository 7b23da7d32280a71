/* ATTACK: from a session's command, plant symbolic links (and a FIFO) where `moat session cp` will write or read, and swap a folder for a link while copies run, so that a copy in writes outside its target or a copy out reads a host file | LAYER: session cp resolves every path with openat2 RESOLVE_NO_SYMLINKS, below a root opened once, as the sandbox's own user (session-cp.c) | REF: CVE-2019-14271 (docker cp), CVE-2018-15664 (docker cp symlink-exchange race) */
/* session_cp.sh runs it in a session (its verdict is the host's: what cp did); in a plain run it only plants. */
#include "attack.h"
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		BROKEN("write %s: %s", path, strerror(errno));
}

static void link_or_die(const char *target, const char *path)
{
	if (symlink(target, path) < 0)
		BROKEN("symlink %s -> %s: %s", path, target, strerror(errno));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plant-in";
	const char *host = argc > 2 ? argv[2] : "/nonexistent";
	if (strcmp(mode, "plant-in") == 0) {
		/* A copy to /tmp/lnk, /tmp/d/f or /tmp/up/x must not follow. */
		put("/tmp/victim", "orig");
		link_or_die(host, "/tmp/lnk");
		if (mkdir("/tmp/d", 0755) < 0)
			BROKEN("mkdir: %s", strerror(errno));
		link_or_die("/tmp/victim", "/tmp/d/f");
		link_or_die("/", "/tmp/up");
		BLOCKED("links planted for a copy in");
	}
	if (strcmp(mode, "check-in") == 0) {
		char b[16] = {0};
		FILE *f = fopen("/tmp/victim", "r");
		if (!f || !fgets(b, sizeof(b), f))
			BROKEN("read /tmp/victim: %s", strerror(errno));
		fclose(f);
		if (strcmp(b, "orig") != 0)
			ESCAPED("a copy wrote through the link /tmp/d/f into /tmp/victim: '%s'", b);
		BLOCKED("/tmp/victim is as it was");
	}
	if (strcmp(mode, "plant-out") == 0) {
		/* host: a host file's path; a copy out of /tmp/out must not read it. */
		if (mkdir("/tmp/out", 0755) < 0 || mkdir("/tmp/fifo", 0755) < 0)
			BROKEN("mkdir: %s", strerror(errno));
		put("/tmp/out/ok", "fine");
		link_or_die(host, "/tmp/out/leak");
		link_or_die(host, "/tmp/leak1");
		if (mkfifo("/tmp/fifo/p", 0644) < 0)
			BROKEN("mkfifo: %s", strerror(errno));
		BLOCKED("links and a FIFO planted for a copy out");
	}
	if (strcmp(mode, "swap") == 0) {
		/* /tmp/sw is a folder and a link to host, in turn, as fast as
		 * the kernel swaps them, for argv[3] seconds. */
		int secs = argc > 3 ? atoi(argv[3]) : 5;
		if (mkdir("/tmp/sw", 0777) < 0)
			BROKEN("mkdir: %s", strerror(errno));
		link_or_die(host, "/tmp/swl");
		time_t end = time(NULL) + secs;
		unsigned long n = 0;
		while (time(NULL) < end)
			for (int i = 0; i < 1000; i++, n++)
				if (renameat2(AT_FDCWD, "/tmp/sw", AT_FDCWD, "/tmp/swl", RENAME_EXCHANGE) < 0)
					BROKEN("renameat2: %s", strerror(errno));
		/* Left as a folder at /tmp/sw. */
		struct stat st;
		if (lstat("/tmp/sw", &st) == 0 && S_ISLNK(st.st_mode))
			renameat2(AT_FDCWD, "/tmp/sw", AT_FDCWD, "/tmp/swl", RENAME_EXCHANGE);
		BLOCKED("swapped /tmp/sw %lu times", n);
	}
	BROKEN("unknown mode %s", mode);
}
