/* The supervisor loop (supervise.h). */
#include "supervise.h"

#include "record.h"
#include "sandbox-internal.h"
#include "secretstore.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* How long the command has to end by itself after moat passed it the
 * caller's SIGINT, SIGTERM, SIGHUP or SIGQUIT; then the run is ended. */
#define MOAT_SIGNAL_GRACE_MS 1000
/* How long output still held for a consumer that does not read may keep
 * moat alive past the wall-clock limit (or past the caller's signal). */
#define MOAT_DRAIN_GRACE_MS 500

static void kill_sandbox(moat_super *s, moat_status why, const char *limit)
{
	moat__sandbox_kill(s->sb, why, limit);
}

/* Passes one chunk, redacted already, to the recording, the caller's
 * callback and the sink. */
static void forward_output(moat_super *s, int stream, const char *buf, size_t n)
{
	if (n == 0)
		return;
	if (s->io->record)
		moat_record_write(s->io->record, 'o', buf, n, NULL);
	if (s->io->on_output)
		s->io->on_output(s->io->userdata, stream, buf, n);
	moat_sink *k = stream == 1 ? &s->out : &s->err;
	if (s->sandbox_gone)
		moat__sink_put_final(k, buf, n);
	else
		moat__sink_put(k, buf, n);
}

/* Redacts and forwards a chunk; final flushes what the redactor held. A
 * chunk the redactor cannot take for want of memory is dropped, never
 * passed on unredacted. */
static void redact_output(moat_super *s, int stream, const char *buf, size_t n, bool final)
{
	moat_redact_stream *st = stream == 1 ? &s->red_out : &s->red_err;
	_cleanup_free_ char *o = NULL;
	size_t olen = 0;
	int rc = final ? moat_redact_stream_flush(st, &o, &olen) : moat_redact_stream_feed(st, buf, n, &o, &olen);
	if (rc >= 0)
		forward_output(s, stream, o, olen);
}

/* Counts, caps and forwards one chunk of output. The counts and the cap
 * are of what the command wrote, before redaction. */
static void handle_output(moat_super *s, int stream, const char *buf, size_t n)
{
	uint64_t cap = s->c->limits.output_bytes;
	size_t keep = n;
	if (cap != MOAT_UNLIMITED && s->out_total + n > cap) {
		keep = (size_t)(cap - s->out_total);
		s->r->output_truncated = true;
	}
	s->out_total += keep;
	if (stream == 1)
		s->r->stdout_bytes += keep;
	else
		s->r->stderr_bytes += keep;
	if (keep > 0 && s->redacting)
		redact_output(s, stream, buf, keep, false);
	else if (keep > 0)
		forward_output(s, stream, buf, keep);
	if (keep < n)
		kill_sandbox(s, MOAT_STATUS_OUTPUT_LIMIT, "output");
}

static int ms_until(uint64_t now_ns, uint64_t then_ns)
{
	if (then_ns <= now_ns)
		return 0;
	uint64_t ms = (then_ns - now_ns + 999999) / 1000000;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Reads one chunk of the sandbox's stdout, stderr or terminal: while the
 * sandbox lives, no more than the sink it goes to has room for, so a
 * consumer that does not read holds the sandbox's writes up, never moat.
 * Returns false at EOF or on an error. */
static bool read_stream(moat_super *s, int fd, int stream, char *buf, size_t size)
{
	size_t room = s->sandbox_gone ? size : moat__sink_room(stream == 1 ? &s->out : &s->err);
	if (room < size)
		size = room;
	ssize_t n = read(fd, buf, size);
	if (n > 0) {
		handle_output(s, stream, buf, (size_t)n);
		return true;
	}
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* The caller's SIGINT, SIGTERM, SIGHUP and SIGQUIT: the first is passed to
 * the command, which then has MOAT_SIGNAL_GRACE_MS to end by itself; a
 * second one ends the run at once. SIGPIPE (a consumer that went away) is
 * absorbed. */
static void handle_signals(moat_super *s, int sigfd)
{
	struct signalfd_siginfo si;
	while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGPIPE)
			continue;
		bool first = s->caller_signal == 0;
		s->caller_signal = (int)si.ssi_signo;
		if (s->sandbox_gone)
			continue;
		if (first && !s->got_exit && moat_sandbox_signal(s->sb, s->id, (int)si.ssi_signo, NULL) == 0)
			s->grace_end_ns = moat__now_ns() + (uint64_t)MOAT_SIGNAL_GRACE_MS * 1000000ull;
		else
			kill_sandbox(s, MOAT_STATUS_SIGNALED, NULL);
	}
}

/* The run is over and cleaned up; what the sinks still hold goes to
 * consumers that take it, until give_up_ns or a signal of the caller. */
static void drain_sinks(moat_super *s, int sigfd, uint64_t give_up_ns)
{
	for (;;) {
		struct pollfd p[3];
		int n = 0, i_out = -1, i_err = -1, i_sig = -1;
		if (moat__sink_pending(&s->out))
			p[i_out = n++] = (struct pollfd){.fd = s->out.fd, .events = POLLOUT};
		if (moat__sink_pending(&s->err))
			p[i_err = n++] = (struct pollfd){.fd = s->err.fd, .events = POLLOUT};
		if (n == 0)
			return;
		if (sigfd >= 0)
			p[i_sig = n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
		int timeout = -1;
		if (give_up_ns != UINT64_MAX) {
			uint64_t now = moat__now_ns();
			if (now >= give_up_ns)
				return;
			timeout = ms_until(now, give_up_ns);
		}
		if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR)
			return;
		if (i_out >= 0 && p[i_out].revents)
			moat__sink_flush(&s->out);
		if (i_err >= 0 && p[i_err].revents)
			moat__sink_flush(&s->err);
		if (i_sig >= 0 && p[i_sig].revents) {
			struct signalfd_siginfo si;
			bool stop = false;
			while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				stop |= si.ssi_signo != SIGPIPE;
			if (stop)
				return;
		}
	}
}

/* When moat stops waiting for consumers: output of a run with a wall-clock
 * limit is delivered by the limit plus MOAT_DRAIN_GRACE_MS at the latest,
 * and soon after the caller asked moat to stop; without either, moat waits
 * for the consumer as long as it reads (like cat), and a signal still ends
 * the wait. */
static uint64_t drain_deadline(const moat_super *s, uint64_t t0)
{
	const uint64_t grace = (uint64_t)MOAT_DRAIN_GRACE_MS * 1000000ull;
	uint64_t now = moat__now_ns(), end = UINT64_MAX;
	uint64_t wall = s->c->limits.wall_ms;
	if (wall != MOAT_UNLIMITED && wall < UINT64_MAX / 1000000ull - t0 / 1000000ull - 1000) {
		uint64_t limit = t0 + wall * 1000000ull;
		end = (limit > now ? limit : now) + grace;
	}
	if (s->caller_signal && now + grace < end)
		end = now + grace;
	return end;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void moat__super_init(moat_super *s, const moat_config *c, const moat_run_io *io, moat_result *r)
{
	*s = (moat_super){.c = c, .io = io, .r = r, .out_fd = -1, .err_fd = -1, .stdin_feed = -1, .sig_fd = -1,
			  .out = MOAT_SINK_INIT, .err = MOAT_SINK_INIT};
	moat__tty_init(&s->tty, c->tty);
	/* The secrets' redactor gets its values once they are armed, after
	 * the init is cloned and before the command runs. */
	if (io->secrets && moat_secrets_count(io->secrets) > 0) {
		s->redacting = true;
		s->red_out = MOAT_REDACT_STREAM_INIT(moat_secrets_redactor(io->secrets));
		s->red_err = MOAT_REDACT_STREAM_INIT(moat_secrets_redactor(io->secrets));
	}
}

void moat__super_close(moat_super *s)
{
	moat__tty_restore(&s->tty);
	moat__tty_close_master(&s->tty);
	moat__sink_close(&s->out);
	moat__sink_close(&s->err);
	moat_redact_stream_done(&s->red_out);
	moat_redact_stream_done(&s->red_err);
	close_fd(&s->out_fd);
	close_fd(&s->err_fd);
	close_fd(&s->stdin_feed);
	moat_sandbox_destroy(TAKE_PTR(s->sb), NULL, NULL);
}

/* Takes every event the sandbox has: the command's end, the sandbox's. */
static void sandbox_events(moat_super *s)
{
	moat_sandbox_event ev;
	while (moat_sandbox_dispatch(s->sb, &ev, NULL) > 0) {
		if (ev.type == MOAT_SANDBOX_EVENT_EXITED && ev.command.id == s->id)
			s->got_exit = true;
		else if (ev.type == MOAT_SANDBOX_EVENT_ENDED)
			s->sandbox_gone = true;
	}
}

void moat__supervise(moat_super *s)
{
	moat_result *r = s->r;
	int sbfd = moat_sandbox_fd(s->sb);
	if (s->out_fd >= 0)
		fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	if (s->err_fd >= 0)
		fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	bool out_open = s->out_fd >= 0, err_open = s->err_fd >= 0;
	size_t fed = 0;
	char buf[65536];

	/* Something may have happened before the loop watched for it. */
	sandbox_events(s);
	/* The loop never blocks but in poll: every descriptor it reads or
	 * writes is non-blocking, and it reads the sandbox's output only as
	 * far as the consumer keeps up (iobuf.h). So the wall timer, the
	 * limits and the caller's signals are served whatever the consumers
	 * do. */
	while (!s->sandbox_gone || out_open || err_open || s->tty.master >= 0) {
		bool alive = !s->sandbox_gone;
		struct pollfd p[10];
		int n = 0, i_out = -1, i_err = -1, i_sb = -1, i_sig = -1, i_feed = -1, i_pty = -1, i_tin = -1,
		    i_sout = -1, i_serr = -1;
		bool out_room = s->sandbox_gone || moat__sink_room(&s->out) > 0;
		bool err_room = s->sandbox_gone || moat__sink_room(&s->err) > 0;
		if (out_open && out_room)
			p[i_out = n++] = (struct pollfd){.fd = s->out_fd, .events = POLLIN};
		if (err_open && err_room)
			p[i_err = n++] = (struct pollfd){.fd = s->err_fd, .events = POLLIN};
		if (alive)
			p[i_sb = n++] = (struct pollfd){.fd = sbfd, .events = POLLIN};
		p[i_sig = n++] = (struct pollfd){.fd = s->sig_fd, .events = POLLIN};
		if (s->stdin_feed >= 0)
			p[i_feed = n++] = (struct pollfd){.fd = s->stdin_feed, .events = POLLOUT};
		if (s->tty.master >= 0) {
			short ev = (short)((out_room ? POLLIN : 0) | (moat__sink_pending(&s->tty.in) ? POLLOUT : 0));
			if (ev)
				p[i_pty = n++] = (struct pollfd){.fd = s->tty.master, .events = ev};
		}
		if (moat__tty_wants_input(&s->tty))
			p[i_tin = n++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
		if (moat__sink_pending(&s->out))
			p[i_sout = n++] = (struct pollfd){.fd = s->out.fd, .events = POLLOUT};
		if (moat__sink_pending(&s->err))
			p[i_serr = n++] = (struct pollfd){.fd = s->err.fd, .events = POLLOUT};
		int timeout = -1;
		if (s->grace_end_ns && alive)
			timeout = ms_until(moat__now_ns(), s->grace_end_ns);
		if (poll(p, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (i_sout >= 0 && p[i_sout].revents)
			moat__sink_flush(&s->out);
		if (i_serr >= 0 && p[i_serr].revents)
			moat__sink_flush(&s->err);
		if (i_out >= 0 && p[i_out].revents)
			out_open = read_stream(s, s->out_fd, 1, buf, sizeof(buf));
		if (i_err >= 0 && p[i_err].revents)
			err_open = read_stream(s, s->err_fd, 2, buf, sizeof(buf));
		if (i_pty >= 0 && p[i_pty].revents) {
			short rev = p[i_pty].revents;
			if (rev & POLLOUT)
				moat__sink_flush(&s->tty.in);
			moat__tty_make_raw(&s->tty);
			bool open = true;
			if (rev & (POLLIN | POLLHUP | POLLERR)) {
				if (out_room)
					open = read_stream(s, s->tty.master, 1, buf, sizeof(buf));
				else /* a hung-up terminal takes no more input */
					moat__sink_close(&s->tty.in);
			}
			if (!open)
				moat__tty_close_master(&s->tty);
		}
		if (i_tin >= 0 && p[i_tin].revents)
			moat__tty_read_input(&s->tty, s->io->record, buf, sizeof(buf));
		if (i_feed >= 0 && p[i_feed].revents) {
			const moat_run_io *io = s->io;
			if (p[i_feed].revents & POLLOUT && fed < io->stdin_len) {
				ssize_t k = write(s->stdin_feed, io->stdin_data + fed, io->stdin_len - fed);
				if (k > 0)
					fed += (size_t)k;
				else if (k < 0 && errno != EAGAIN && errno != EINTR)
					fed = io->stdin_len;
			}
			if (fed >= io->stdin_len || (p[i_feed].revents & (POLLERR | POLLHUP)))
				close_fd(&s->stdin_feed);
		}
		if (p[i_sig].revents)
			handle_signals(s, s->sig_fd);
		if (s->grace_end_ns && alive && moat__now_ns() >= s->grace_end_ns)
			kill_sandbox(s, MOAT_STATUS_SIGNALED, NULL);
		/* Every process of the sandbox is gone once its end is seen
		 * here; what its pipes still hold is read on. */
		if (i_sb >= 0 && p[i_sb].revents)
			sandbox_events(s);
	}
	moat__tty_restore(&s->tty);
	if (s->redacting) {
		/* Every stream has ended: what the redactors held back (the
		 * beginning of a value that never completed) goes out. */
		bool gone = s->sandbox_gone;
		s->sandbox_gone = true;
		redact_output(s, 1, NULL, 0, true);
		redact_output(s, 2, NULL, 0, true);
		s->sandbox_gone = gone;
	}
	/* The sandbox's own result gets what only this loop counted; its
	 * destroy then ends what is left, accounts, removes the cgroup and
	 * writes the audit's end before any consumer is waited on. */
	moat_result *sr = moat__sandbox_result(s->sb);
	sr->stdout_bytes = r->stdout_bytes;
	sr->stdout_uncounted = r->stdout_uncounted;
	sr->stderr_bytes = r->stderr_bytes;
	sr->output_truncated = r->output_truncated;
	s->destroy_rc = moat_sandbox_destroy(TAKE_PTR(s->sb), r, &s->destroy_err);
	close_fd(&s->out_fd);
	close_fd(&s->err_fd);

	drain_sinks(s, s->sig_fd, drain_deadline(s, s->t0));
	moat__super_close(s);
	r->output_dropped_bytes = s->out.dropped + s->err.dropped;
}
