/* The ordered worker pool of workpool.h. */
#include "workpool.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct worker {
	pid_t pid;
	int fd;
	size_t index;
	char *buf;
	size_t len;
} worker;

typedef struct pool {
	const moat_workpool_ops *ops;
	void *ctx;
	size_t msg_max;
	worker *w;
	unsigned n_w;
	char **results;
	size_t done;
	size_t n;
} pool;

static int start_worker(pool *pl, worker *w, size_t i, moat_error *err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "worker pipe");
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return moat_error_set(err, e, "fork a worker");
	}
	if (pid == 0) {
		/* When the caller dies, its workers stop too: SIGTERM reaches
		 * the sandbox's signal handling, which ends the run cleanly. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(5);
		/* Handlers the caller set (to clean up on Ctrl-C) are the
		 * caller's; a worker ends the default way, and the sandbox
		 * blocks and handles these signals itself while a run lasts. */
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT};
		for (size_t k = 0; k < ELEMENTSOF(sigs); k++)
			signal(sigs[k], SIG_DFL);
		close(pfd[0]);
		/* The read ends of the other workers' pipes came along with the
		 * fork; they are not this worker's to hold. */
		for (unsigned k = 0; k < pl->n_w; k++)
			if (pl->w[k].fd >= 0)
				close(pl->w[k].fd);
		pl->ops->work(pl->ctx, i, pfd[1]);
		_exit(6); /* work must not return */
	}
	close(pfd[1]);
	*w = (worker){.pid = pid, .fd = pfd[0], .index = i};
	return 0;
}

/* A worker ended (its pipe closed, or it sent more than it may): its
 * message, or its death, becomes the item's result. */
static int finish_worker(pool *pl, worker *w)
{
	int status = 0;
	while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
		;
	size_t i = w->index;
	pl->results[i] = pl->ops->done(pl->ctx, i, w->buf, w->len, status);
	free(w->buf);
	close(w->fd);
	*w = (worker){.fd = -1};
	if (!pl->results[i])
		return -ENOMEM;
	if (pl->ops->progress)
		pl->ops->progress(pl->ctx, ++pl->done, pl->n);
	return 0;
}

static int read_worker(pool *pl, worker *w)
{
	char tmp[16384];
	ssize_t n = read(w->fd, tmp, sizeof(tmp));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : finish_worker(pl, w);
	if (n == 0)
		return finish_worker(pl, w);
	if (w->len + (size_t)n > pl->msg_max) {
		/* Too much to be a message: the worker is told to go, and what
		 * it sent is not read as one. */
		kill(w->pid, SIGKILL);
		free(w->buf);
		w->buf = NULL;
		w->len = 0;
		return finish_worker(pl, w);
	}
	char *b = realloc(w->buf, w->len + (size_t)n);
	if (!b)
		return -ENOMEM;
	w->buf = b;
	memcpy(w->buf + w->len, tmp, (size_t)n);
	w->len += (size_t)n;
	return 0;
}

static void kill_workers(pool *pl)
{
	for (unsigned k = 0; k < pl->n_w; k++) {
		if (pl->w[k].pid > 0) {
			kill(pl->w[k].pid, SIGTERM);
			while (waitpid(pl->w[k].pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		if (pl->w[k].fd >= 0)
			close(pl->w[k].fd);
		free(pl->w[k].buf);
	}
}

int moat__workpool_run(size_t n, unsigned parallel, size_t msg_max, const moat_workpool_ops *ops, void *ctx,
		       moat_error *err)
{
	if (parallel == 0)
		return moat_error_set(err, EINVAL, "worker pool: no workers");
	if (n == 0)
		return 0;
	if (parallel > n)
		parallel = (unsigned)n;
	_cleanup_free_ worker *w = calloc(parallel, sizeof(*w));
	_cleanup_free_ char **results = calloc(n, sizeof(*results));
	_cleanup_free_ struct pollfd *pfd = calloc(parallel, sizeof(*pfd));
	if (!w || !results || !pfd)
		return moat_error_set(err, ENOMEM, "worker pool");
	for (unsigned k = 0; k < parallel; k++)
		w[k].fd = -1;
	pool pl = {.ops = ops, .ctx = ctx, .msg_max = msg_max, .w = w, .n_w = parallel, .results = results, .n = n};

	size_t next = 0, emitted = 0;
	int r = 0;
	while (emitted < n) {
		unsigned running = 0;
		for (unsigned k = 0; k < parallel; k++) {
			if (w[k].fd < 0 && next < n && (r = start_worker(&pl, &w[k], next++, err)) < 0)
				goto out;
			pfd[k].fd = w[k].fd;
			pfd[k].events = POLLIN;
			pfd[k].revents = 0;
			running += w[k].fd >= 0;
		}
		if (running > 0 && poll(pfd, parallel, -1) < 0 && errno != EINTR) {
			r = moat_error_set(err, errno, "poll");
			goto out;
		}
		for (unsigned k = 0; k < parallel; k++)
			if (w[k].fd >= 0 && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    (r = read_worker(&pl, &w[k])) < 0) {
				r = moat_error_set(err, -r, "worker pool");
				goto out;
			}
		while (emitted < n && results[emitted]) {
			ops->emit(ctx, emitted, results[emitted]);
			results[emitted] = (char *)""; /* emitted: emit owns it */
			emitted++;
		}
	}
out:
	kill_workers(&pl);
	for (size_t i = emitted; i < n; i++)
		free(results[i]);
	return r;
}
