/* Fills a directory (argv[2], default /tmp) until the file system says no:
 * mode "bytes" writes one file 1 MiB at a time, mode "inodes" creates empty
 * files. Prints what it managed and the error that stopped it, and exits 0
 * when that error is ENOSPC or EDQUOT/EFBIG (the limit held), 1 otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "bytes";
	const char *dir = argc > 2 ? argv[2] : "/tmp";
	char path[4096];
	long n = 0;
	int e = 0;
	if (strcmp(mode, "inodes") == 0) {
		for (;; n++) {
			snprintf(path, sizeof(path), "%s/f%ld", dir, n);
			int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0) {
				e = errno;
				break;
			}
			close(fd);
		}
		printf("fillfs: %ld files, then %s\n", n, strerror(e));
	} else {
		static char buf[1 << 20];
		memset(buf, 'x', sizeof(buf));
		snprintf(path, sizeof(path), "%s/fill", dir);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			printf("fillfs: open %s: %s\n", path, strerror(errno));
			return 1;
		}
		long long total = 0;
		for (;;) {
			ssize_t w = write(fd, buf, sizeof(buf));
			if (w <= 0) {
				e = w < 0 ? errno : ENOSPC;
				break;
			}
			total += w;
		}
		printf("fillfs: %lld bytes, then %s\n", total, strerror(e));
	}
	return e == ENOSPC || e == EDQUOT || e == EFBIG ? 0 : 1;
}
