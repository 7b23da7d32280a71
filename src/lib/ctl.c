/* The control channel between the supervisor and the sandbox's init: a
 * SOCK_SEQPACKET pair, one fixed-size message per packet, optionally with
 * file descriptors attached (SCM_RIGHTS, at most MOAT_CTL_MAX_FDS). */
#include "sandbox-internal.h"

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

static int send_msg_fds(int fd, const moat_ctl_msg *m, const int *fds, size_t n)
{
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	union {
		char buf[CMSG_SPACE(sizeof(int) * MOAT_CTL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n > MOAT_CTL_MAX_FDS)
		return -EINVAL;
	if (n > 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	for (;;) {
		if (sendmsg(fd, &msg, MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno != EINTR)
			return moat__neg_errno();
	}
}

static int send_msg(int fd, const moat_ctl_msg *m, int passfd)
{
	return send_msg_fds(fd, m, &passfd, passfd >= 0 ? 1 : 0);
}

int moat__ctl_send_fds(int fd, int type, int a, const int *fds, size_t n)
{
	moat_ctl_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.a = a;
	return send_msg_fds(fd, &m, fds, n);
}

int moat__ctl_send(int fd, int type, int a, int b, const char *text)
{
	moat_ctl_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.a = a;
	m.b = b;
	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	return send_msg(fd, &m, -1);
}

int moat__ctl_send_data(int fd, int type, int a, int b, const void *data, size_t len)
{
	moat_ctl_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.a = a;
	m.b = b;
	if (len >= sizeof(m.text))
		return -EMSGSIZE;
	memcpy(m.text, data, len);
	return send_msg(fd, &m, -1);
}

int moat__ctl_send_fd_for(int fd, int kind, int a, int passfd)
{
	moat_ctl_msg m;
	memset(&m, 0, sizeof(m));
	m.type = MOAT_CTL_FD;
	m.a = a;
	m.b = kind;
	return send_msg(fd, &m, passfd);
}

int moat__ctl_send_fd(int fd, int kind, int passfd)
{
	return moat__ctl_send_fd_for(fd, kind, 0, passfd);
}

int moat__ctl_recv(int fd, moat_ctl_msg *m, int *ret_fd)
{
	size_t n = 0;
	int got = -1;
	int r = moat__ctl_recv_fds(fd, m, &got, ret_fd ? 1 : 0, &n);
	if (ret_fd)
		*ret_fd = n > 0 ? got : -1;
	return r;
}

int moat__ctl_recv_fds(int fd, moat_ctl_msg *m, int *fds, size_t max, size_t *ret_n)
{
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	union {
		char buf[CMSG_SPACE(sizeof(int) * MOAT_CTL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	*ret_n = 0;
	/* A peer that closes with our last message still unread in its queue
	 * leaves ECONNRESET pending on this socket, and the kernel reports
	 * that error once before handing out what the peer sent before it
	 * closed (an init's SETUP_ERROR, say). The error is consumed by that
	 * first call, so read again: EOF or the message follows. */
	ssize_t n;
	bool reset_seen = false;
	for (;;) {
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n >= 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == ECONNRESET && !reset_seen) {
			reset_seen = true;
			continue;
		}
		break;
	}
	if (n < 0)
		return moat__neg_errno();
	if (n == 0)
		return -EPIPE;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int got;
			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*ret_n < max)
				fds[(*ret_n)++] = got;
			else
				close(got);
		}
	}
	if ((size_t)n != sizeof(*m) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (size_t i = 0; i < *ret_n; i++)
			close(fds[i]);
		*ret_n = 0;
		return -EBADMSG;
	}
	m->text[sizeof(m->text) - 1] = '\0';
	return 0;
}
