/* ATTACK: a second thread rewrites the path between the file trail's read and the kernel's, so the log names a file other than the one opened | LAYER: file trail marks events of multi-threaded callers reliability: racy | REF: seccomp_unotify(2) TOCTOU */
#include "attack.h"

#include <pthread.h>

/* Two names of the same length: the swap never leaves a torn string. */
static char path[] = "/tmp/innocent-file";
static volatile int stop;

/* Each name stays a while, so that about half the opens meet each. The
 * barrier keeps the compiler from dropping the first store as dead. */
static void hold(void)
{
	__asm__ volatile("" ::: "memory");
	for (volatile int i = 0; i < 20000; i++)
		;
}

static void *swapper(void *arg)
{
	(void)arg;
	while (!stop) {
		memcpy(path + 5, "hidden-secret", 13);
		hold();
		memcpy(path + 5, "innocent-file", 13);
		hold();
	}
	return NULL;
}

int main(void)
{
	/* Both files exist before any second thread does: these calls are a
	 * single-threaded caller's, and the trail may vouch for them. */
	int fd = open("/tmp/innocent-file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	int fd2 = open("/tmp/hidden-secret", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || fd2 < 0)
		BROKEN("create the two files: %s", strerror(errno));
	close(fd);
	close(fd2);
	pthread_t th;
	if (pthread_create(&th, NULL, swapper, NULL) != 0)
		BROKEN("pthread_create");
	int hidden = 0;
	for (int i = 0; i < 2000; i++) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			struct stat st, hs;
			if (fstat(fd, &st) == 0 && stat("/tmp/hidden-secret", &hs) == 0 && st.st_ino == hs.st_ino)
				hidden++;
			close(fd);
		}
	}
	stop = 1;
	pthread_join(th, NULL);
	/* The verdict is the log's: tests/integration/trail_attacks.sh checks
	 * that no open from this point on claims a path it cannot vouch for. */
	printf("DONE: opened the hidden file %d times of 2000\n", hidden);
	return 0;
}
