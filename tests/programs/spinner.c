/* Burns CPU on argv[1] threads (default 4) for argv[2] seconds of wall
 * time (default: forever), then prints the CPU time it used and exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int stop;

static void *spin(void *arg)
{
	(void)arg;
	volatile unsigned long x = 0;
	while (!stop)
		x++;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	double secs = argc > 2 ? atof(argv[2]) : -1;
	pthread_t t[64];
	if (n < 1 || n > 64)
		n = 4;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, spin, NULL);
	if (secs < 0)
		for (;;)
			spin(NULL);
	struct timespec ts = {(time_t)secs, (long)((secs - (long)secs) * 1e9)};
	nanosleep(&ts, NULL);
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	struct timespec cpu;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("spinner: %ld ms cpu\n", (long)(cpu.tv_sec * 1000 + cpu.tv_nsec / 1000000));
	return 0;
}
