/* Starts threads that sleep forever until pthread_create fails, then keeps
 * retrying, so a limit on tasks (cgroup pids counts threads) is hit and
 * held. Prints how many threads it got when one creation fails. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int main(void)
{
	long n = 0;
	int reported = 0;
	for (;;) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 64 * 1024);
		if (pthread_create(&t, &a, idle, NULL) != 0) {
			if (!reported++) {
				printf("threadbomb: %ld threads, then creation failed\n", n);
				fflush(stdout);
			}
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		} else {
			n++;
		}
		pthread_attr_destroy(&a);
	}
}
