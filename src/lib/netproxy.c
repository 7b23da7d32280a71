#include "netproxy.h"

#include "sandbox-internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/resource.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <event2/event.h>

int moat__netproxy_listen(int ctl, moat_error *err)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return moat_error_set(err, errno, "proxy port: socket");
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(MOAT_PROXY_PORT),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		return moat_error_set(err, errno, "proxy port: bind 127.0.0.1:%d", MOAT_PROXY_PORT);
	if (listen(fd, 512) < 0)
		return moat_error_set(err, errno, "proxy port: listen");
	int r = moat__ctl_send_fd(ctl, MOAT_CTL_FD_PROXY_LISTENER, fd);
	if (r < 0)
		return moat_error_set(err, r, "proxy port: hand it to the supervisor");
	/* The init keeps no copy: the supervisor's is the only one. */
	return 0;
}

struct moat_netproxy {
	struct event_base *base;
	moat_gateway *gw;
	struct event *stop_ev;
	int stop_fd;
	pthread_t thread;
	bool running;
	/* The upstream namespace the thread enters first, or -1; and its
	 * answer (0 or an errno), posted to entered. */
	int upstream_netns;
	int entered_errno;
	sem_t entered;
};

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

static void *netproxy_thread(void *arg)
{
	moat_netproxy *p = arg;
	/* Before anything: the sockets the gateway makes from now on (its
	 * upstream connections, its resolver's) are made in the namespace of
	 * this thread. Failing that, it serves nothing. */
	p->entered_errno = p->upstream_netns >= 0 && setns(p->upstream_netns, CLONE_NEWNET) < 0 ? errno : 0;
	int failed = p->entered_errno;
	sem_post(&p->entered);
	if (!failed)
		event_base_dispatch(p->base);
	return NULL;
}

static void netproxy_free(moat_netproxy *p)
{
	if (!p)
		return;
	moat_gateway_free(p->gw);
	if (p->stop_ev)
		event_free(p->stop_ev);
	if (p->base)
		event_base_free(p->base);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	if (p->upstream_netns >= 0)
		close(p->upstream_netns);
	sem_destroy(&p->entered);
	free(p);
}

/* Each client of the gateway costs the supervisor two descriptors (the
 * client and its upstream), on top of what the supervisor holds anyway.
 * The soft limit is raised, never lowered, so that max_clients connections
 * fit well inside it (within the hard limit, which only a privileged
 * process could raise); the cap then trips long before accept() runs out
 * of descriptors. */
static void raise_nofile(uint32_t max_clients)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	rlim_t want = (rlim_t)(max_clients ? max_clients : MOAT_GATEWAY_DEFAULT_MAX_CLIENTS) * 2 + 256;
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
		want = rl.rlim_max;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = want;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int moat__netproxy_start(const moat_gateway_config *cfg, const moat_netproxy_fds *fds, moat_netproxy **ret,
			 moat_error *err)
{
	_cleanup_close_ int lfd = fds->proxy;
	_cleanup_close_ int tfd = fds->transparent;
	_cleanup_close_ int dfd = fds->dns;
	_cleanup_close_ int nsfd = fds->upstream_netns;
	moat_netproxy *p = calloc(1, sizeof(*p));
	if (!p)
		return moat_error_set(err, ENOMEM, "gateway");
	p->upstream_netns = TAKE_FD(nsfd);
	sem_init(&p->entered, 0, 0);
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	p->base = event_base_new();
	int r;
	if (p->stop_fd < 0 || !p->base) {
		r = moat_error_set(err, p->stop_fd < 0 ? errno : ENOMEM, "gateway: event loop");
		goto fail;
	}
	raise_nofile(cfg->max_clients);
	r = moat_gateway_new(p->base, cfg, &p->gw, err);
	if (r < 0)
		goto fail;
	r = moat_gateway_add_listener_fd(p->gw, TAKE_FD(lfd), err);
	if (r >= 0 && tfd >= 0)
		r = moat_gateway_add_transparent_fd(p->gw, TAKE_FD(tfd), err);
	if (r >= 0 && dfd >= 0)
		r = moat_gateway_add_dns_stub_fd(p->gw, TAKE_FD(dfd), err);
	if (r < 0)
		goto fail;
	/* A persistent event on the eventfd keeps the loop alive while the
	 * run lasts, even when no connection is open. */
	p->stop_ev = event_new(p->base, p->stop_fd, EV_READ | EV_PERSIST, stop_cb, p->base);
	if (!p->stop_ev || event_add(p->stop_ev, NULL) < 0) {
		r = moat_error_set(err, ENOMEM, "gateway: event loop");
		goto fail;
	}
	/* The thread must not take the signals the supervisor reads from
	 * its signalfd: it starts with all of them blocked. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&p->thread, NULL, netproxy_thread, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		r = moat_error_set(err, e, "gateway: thread");
		goto fail;
	}
	while (sem_wait(&p->entered) < 0 && errno == EINTR)
		;
	if (p->entered_errno) {
		pthread_join(p->thread, NULL);
		r = moat_error_set(err, p->entered_errno, "gateway: enter its upstream network namespace");
		goto fail;
	}
	p->running = true;
	*ret = p;
	return 0;
fail:
	netproxy_free(p);
	return r;
}

void moat__netproxy_stop(moat_netproxy *p, moat_gateway_stats *ret_stats)
{
	if (!p)
		return;
	if (p->running) {
		uint64_t one = 1;
		(void)!write(p->stop_fd, &one, sizeof(one));
		pthread_join(p->thread, NULL);
	}
	if (ret_stats)
		moat_gateway_get_stats(p->gw, ret_stats);
	netproxy_free(p);
}

moat_gateway *moat__netproxy_gateway(moat_netproxy *p)
{
	return p->gw;
}
