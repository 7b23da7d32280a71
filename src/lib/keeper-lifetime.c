/* A keeper's time to live and idle time, and end.json (keeper-lifetime.h). */
#include "keeper-lifetime.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void ttl_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	moat_keeper_lifetime_state *lt = arg;
	moat__keeper_lifetime_note(lt, MOAT_END_TTL);
	lt->expire(lt->arg, MOAT_END_TTL);
}

static void idle_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	moat_keeper_lifetime_state *lt = arg;
	moat__keeper_lifetime_note(lt, MOAT_END_IDLE);
	lt->expire(lt->arg, MOAT_END_IDLE);
}

void moat__keeper_lifetime_init(moat_keeper_lifetime_state *lt, struct event_base *base,
				void (*expire)(void *arg, const char *reason), void *arg)
{
	memset(lt, 0, sizeof(*lt));
	lt->base = base;
	lt->end_dir = -1;
	lt->expire = expire;
	lt->arg = arg;
}

static struct timeval tv_of(uint64_t ms)
{
	return (struct timeval){.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

int moat__keeper_lifetime_set(moat_keeper_lifetime_state *lt, uint64_t ttl_ms, uint64_t idle_ms, int end_dir, size_t n_live,
			      moat_error *err)
{
	if (!lt->ttl_ev)
		lt->ttl_ev = evtimer_new(lt->base, ttl_cb, lt);
	if (!lt->idle_ev)
		lt->idle_ev = evtimer_new(lt->base, idle_cb, lt);
	if (!lt->ttl_ev || !lt->idle_ev)
		return moat_error_set(err, ENOMEM, "lifetime: timers");
	if (end_dir >= 0) {
		int fd = fcntl(end_dir, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return moat_error_errno(err, errno, "lifetime: the end folder");
		if (lt->end_dir >= 0)
			close(lt->end_dir);
		lt->end_dir = fd;
	}
	lt->ttl_ms = ttl_ms;
	lt->idle_ms = idle_ms;
	evtimer_del(lt->ttl_ev);
	if (ttl_ms) {
		struct timeval tv = tv_of(ttl_ms);
		evtimer_add(lt->ttl_ev, &tv);
	}
	moat__keeper_lifetime_activity(lt, n_live);
	return 0;
}

void moat__keeper_lifetime_activity(moat_keeper_lifetime_state *lt, size_t n_live)
{
	if (!lt->idle_ev)
		return;
	evtimer_del(lt->idle_ev);
	if (lt->idle_ms && n_live == 0 && !lt->reason[0]) {
		struct timeval tv = tv_of(lt->idle_ms);
		evtimer_add(lt->idle_ev, &tv);
	}
}

void moat__keeper_lifetime_note(moat_keeper_lifetime_state *lt, const char *reason)
{
	if (!lt->reason[0])
		snprintf(lt->reason, sizeof(lt->reason), "%s", reason);
	if (lt->ttl_ev)
		evtimer_del(lt->ttl_ev);
	if (lt->idle_ev)
		evtimer_del(lt->idle_ev);
}

char *moat__keeper_end_json(const char *reason, const char *limit, int64_t t, int64_t cpu_ms)
{
	json_t *o = json_pack("{s:s, s:s?, s:I, s:o}", "reason", reason, "limit", limit && limit[0] ? limit : NULL,
			      "ended", (json_int_t)t, "cpu_ms", cpu_ms >= 0 ? json_integer((json_int_t)cpu_ms) : json_null());
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

static void write_end_file(moat_keeper_lifetime_state *lt, const char *limit_hit, int64_t cpu_ms)
{
	const char *reason = lt->reason[0] ? lt->reason : limit_hit && limit_hit[0] ? MOAT_END_LIMIT : MOAT_END_ENDED;
	/* The limit that ended it, when a limit did, whoever noticed first. */
	_cleanup_free_ char *s = moat__keeper_end_json(reason, lt->reason[0] ? NULL : limit_hit, (int64_t)time(NULL),
							       cpu_ms);
	if (!s)
		return;
	(void)unlinkat(lt->end_dir, "end.json.new", 0);
	int fd = openat(lt->end_dir, "end.json.new", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	bool ok = moat__write_all(fd, s, strlen(s)) >= 0 && moat__write_all(fd, "\n", 1) >= 0;
	close(fd);
	if (ok)
		(void)renameat(lt->end_dir, "end.json.new", lt->end_dir, "end.json");
	else
		(void)unlinkat(lt->end_dir, "end.json.new", 0);
}

void moat__keeper_lifetime_write_reason(moat_keeper_lifetime_state *lt)
{
	/* Only a reason already known (ttl, idle, a stop): a session a limit
	 * ended is known to have been only once its sandbox is gone, and an
	 * early "ended" would be wrong for it. */
	if (lt->end_dir >= 0 && lt->reason[0])
		write_end_file(lt, NULL, -1);
}

void moat__keeper_lifetime_write_end(moat_keeper_lifetime_state *lt, const char *limit_hit, int64_t cpu_ms)
{
	if (lt->end_dir < 0)
		return;
	write_end_file(lt, limit_hit, cpu_ms);
	close(lt->end_dir);
	lt->end_dir = -1;
}

void moat__keeper_lifetime_done(moat_keeper_lifetime_state *lt)
{
	if (lt->ttl_ev)
		event_free(lt->ttl_ev);
	if (lt->idle_ev)
		event_free(lt->idle_ev);
	lt->ttl_ev = lt->idle_ev = NULL;
	if (lt->end_dir >= 0)
		close(lt->end_dir);
	lt->end_dir = -1;
}
