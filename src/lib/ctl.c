/* The control channel between the supervisor and the sandbox's init: a
 * SOCK_SEQPACKET pair, one fixed-size message per packet, optionally with
 * one file descriptor attached (SCM_RIGHTS). */
#include "sandbox-internal.h"

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

static int send_msg(int fd, const moat_ctl_msg *m, int passfd)
{
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (passfd >= 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &passfd, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n >= 0)
			return 0;
		if (errno != EINTR)
			return moat__neg_errno();
	}
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

int moat__ctl_send_fd(int fd, int kind, int passfd)
{
	moat_ctl_msg m;
	memset(&m, 0, sizeof(m));
	m.type = MOAT_CTL_FD;
	m.b = kind;
	return send_msg(fd, &m, passfd);
}

int moat__ctl_recv(int fd, moat_ctl_msg *m, int *ret_fd)
{
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	if (ret_fd)
		*ret_fd = -1;
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
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int got;
			memcpy(&got, CMSG_DATA(c), sizeof(int));
			if (ret_fd && *ret_fd < 0)
				*ret_fd = got;
			else
				close(got);
		}
	}
	if ((size_t)n != sizeof(*m) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EBADMSG;
	m->text[sizeof(m->text) - 1] = '\0';
	return 0;
}
