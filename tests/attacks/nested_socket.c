/* ATTACK: use the delegation socket (/run/moat/ctl) for anything but a narrower run: other message types and versions, a policy wider than the parent's, writable or remapped binds, host environment by name, descriptors beyond stdio or a directory as stdin, a flood of connections | LAYER: the front's nested-run server (src/lib/nested.c: one message type, the policy intersection, 3 stdio descriptors only, at most 4 at once) | REF: CVE-2019-5736 (a runtime's host side reached from a container) */
#include "attack.h"
#include <fcntl.h>
#include <stdint.h>
#include <sys/un.h>

#define SOCK "/run/moat/ctl"
#define MAGIC 0x4d4e5354u

struct reply {
	uint32_t magic, version, type;
	int32_t status;
	char error[512];
};

static int dial(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = SOCK};
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		BROKEN("socket: %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(s);
		return -1;
	}
	return s;
}

/* Sends one request (header fields, body, fds) and returns the status the
 * front answers; what it said is in why. */
static int ask(uint32_t version, uint32_t type, const char *yaml, const int *fds, int nfds, char *why, size_t wn)
{
	int s = dial();
	if (s < 0)
		BROKEN("cannot reach %s: %s", SOCK, strerror(errno));
	char msg[8192];
	uint32_t h[4] = {MAGIC, version, type, 1};
	size_t n = sizeof(h);
	memcpy(msg, h, n);
	n += (size_t)sprintf(msg + n, "%s", yaml) + 1;
	msg[n++] = 0; /* no cwd */
	n += (size_t)sprintf(msg + n, "/bin/true") + 1;
	char cbuf[CMSG_SPACE(sizeof(int) * 8)] __attribute__((aligned(8))) = {0};
	struct iovec iov = {msg, n};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0)
		BROKEN("sendmsg: %s", strerror(errno));
	struct reply r;
	ssize_t got = recv(s, &r, sizeof(r), 0);
	close(s);
	if (got != (ssize_t)sizeof(r))
		return -1;
	r.error[sizeof(r.error) - 1] = 0;
	snprintf(why, wn, "%s", r.error);
	return r.status;
}

static const int stdio[3] = {0, 1, 2};

/* The request must be refused (125, a reason); a run that took place
 * (any other status) is an escape. */
static void expect_refused(const char *what, int status, const char *why)
{
	if (status != 125 || !why[0])
		ESCAPED("%s: answered %d (%s)", what, status, why);
	printf("# %s: refused: %s\n", what, why);
}

int main(void)
{
	if (access(SOCK, F_OK) < 0)
		BLOCKED("no delegation socket (%s): this sandbox may not delegate", strerror(errno));
	char why[600];
	const char *narrow = "version: 1\nlimits:\n  memory: 20M\n";
	int st;

	/* Sanity: the socket works for what it is for, or nothing below means
	 * anything. */
	st = ask(1, 1, narrow, stdio, 3, why, sizeof(why));
	if (st != 0)
		BROKEN("a narrower run was refused: %d %s", st, why);

	st = ask(1, 2, narrow, stdio, 3, why, sizeof(why));
	expect_refused("message type 2 (the front's answer)", st, why);
	st = ask(1, 7, narrow, stdio, 3, why, sizeof(why));
	expect_refused("message type 7", st, why);
	st = ask(2, 1, narrow, stdio, 3, why, sizeof(why));
	expect_refused("protocol version 2", st, why);

	st = ask(1, 1, "version: 1\nlimits:\n  memory: 100G\n", stdio, 3, why, sizeof(why));
	expect_refused("memory wider than the parent's", st, why);
	if (!strstr(why, "limits.memory"))
		ESCAPED("the wider memory was refused without naming the field: %s", why);
	st = ask(1, 1, "version: 1\nnetwork:\n  mode: proxy\n  allow: [{host: example.com}]\n", stdio, 3, why, sizeof(why));
	expect_refused("network the parent lacks", st, why);
	st = ask(1, 1, "version: 1\nfilesystem:\n  read_write: [/tmp]\n", stdio, 3, why, sizeof(why));
	expect_refused("a writable bind", st, why);
	st = ask(1, 1, "version: 1\nfilesystem:\n  read_only: [\"/etc:/x\"]\n", stdio, 3, why, sizeof(why));
	expect_refused("a remapped bind (a host path by another name)", st, why);
	st = ask(1, 1, "version: 1\nenv: [HOME]\n", stdio, 3, why, sizeof(why));
	expect_refused("an environment name read on the host", st, why);
	st = ask(1, 1, "version: 1\nexec:\n  delegate: true\n  workspace: true\n", stdio, 3, why, sizeof(why));
	if (st == 0)
		printf("# delegate/workspace asked: narrowed to the parent's (ran)\n");

	int dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int four[4] = {0, 1, 2, dir};
	st = ask(1, 1, narrow, four, 4, why, sizeof(why));
	expect_refused("a fourth descriptor (a directory)", st, why);
	int dirio[3] = {dir, 1, 2};
	st = ask(1, 1, narrow, dirio, 3, why, sizeof(why));
	expect_refused("a directory as stdin", st, why);
	int two[2] = {0, 1};
	st = ask(1, 1, narrow, two, 2, why, sizeof(why));
	expect_refused("two descriptors", st, why);

	/* A flood: connections held open past the bound are turned away at
	 * once, and the server still answers. */
	int held[16], refused = 0;
	for (int i = 0; i < 16; i++)
		held[i] = dial();
	for (int i = 0; i < 16; i++) {
		struct reply r;
		struct timeval tv = {5, 0};
		if (held[i] < 0)
			continue;
		setsockopt(held[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (i >= 4 && recv(held[i], &r, sizeof(r), 0) == (ssize_t)sizeof(r) && r.status == 125)
			refused++;
	}
	if (refused < 12)
		ESCAPED("flood: %d of 12 connections past the bound were turned away", refused);
	for (int i = 0; i < 16; i++)
		if (held[i] >= 0)
			close(held[i]);
	printf("# flood: 12 of 16 connections turned away\n");
	usleep(200000);
	st = ask(1, 1, narrow, stdio, 3, why, sizeof(why));
	if (st != 0)
		BROKEN("after the flood a narrower run was refused: %d %s", st, why);

	BLOCKED("only narrower runs pass: other types, wider policies, extra descriptors and floods refused");
}
