/* The bounded byte queue and the non-blocking sink of the supervisor's
 * output path (iobuf.h). */
#include "iobuf.h"

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

int moat__iobuf_init(moat_iobuf *b, size_t cap)
{
	memset(b, 0, sizeof(*b));
	if (cap == 0)
		return -EINVAL;
	b->data = malloc(cap);
	if (!b->data)
		return -ENOMEM;
	b->cap = cap;
	return 0;
}

void moat__iobuf_free(moat_iobuf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

size_t moat__iobuf_push(moat_iobuf *b, const void *p, size_t n)
{
	if (n > moat__iobuf_room(b))
		n = moat__iobuf_room(b);
	size_t tail = (b->head + b->len) % (b->cap ? b->cap : 1);
	size_t first = n < b->cap - tail ? n : b->cap - tail;
	if (first)
		memcpy(b->data + tail, p, first);
	if (n > first)
		memcpy(b->data, (const char *)p + first, n - first);
	b->len += n;
	return n;
}

size_t moat__iobuf_push_grow(moat_iobuf *b, const void *p, size_t n, size_t max)
{
	if (n > moat__iobuf_room(b) && b->cap < max) {
		size_t want = b->len + n < max ? b->len + n : max;
		size_t cap = b->cap * 2 > want ? (b->cap * 2 < max ? b->cap * 2 : max) : want;
		char *d = malloc(cap);
		if (d) {
			size_t first;
			const char *q = moat__iobuf_peek(b, &first);
			if (first)
				memcpy(d, q, first);
			if (b->len > first)
				memcpy(d + first, b->data, b->len - first);
			free(b->data);
			b->data = d;
			b->cap = cap;
			b->head = 0;
		}
	}
	return moat__iobuf_push(b, p, n);
}

const char *moat__iobuf_peek(const moat_iobuf *b, size_t *ret_len)
{
	if (b->len == 0) {
		*ret_len = 0;
		return NULL;
	}
	size_t to_end = b->cap - b->head;
	*ret_len = b->len < to_end ? b->len : to_end;
	return b->data + b->head;
}

void moat__iobuf_drop(moat_iobuf *b, size_t n)
{
	if (n > b->len)
		n = b->len;
	b->len -= n;
	b->head = b->len ? (b->head + n) % b->cap : 0;
}

void moat__iobuf_clear(moat_iobuf *b)
{
	b->head = b->len = 0;
}

/* A description of our own on the same pipe, non-blocking, so
 * that nothing the caller's other processes see changes. */
static int reopen_nonblocking(int fd)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
}

int moat__sink_open(moat_sink *s, int fd, bool ours)
{
	*s = (moat_sink)MOAT_SINK_INIT;
	int r = moat__iobuf_init(&s->buf, MOAT_IOBUF_CAP);
	if (r < 0)
		return r;
	if (fd < 0)
		return 0;
	s->fd = fd;
	struct stat st;
	if (fstat(fd, &st) < 0 || S_ISREG(st.st_mode))
		return 0;
	if (S_ISSOCK(st.st_mode)) {
		s->is_socket = true;
		return 0;
	}
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_NONBLOCK))
		return 0;
	if (ours) {
		(void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
		return 0;
	}
	/* Only a pipe is reopened: reopening a character device could open a
	 * different one (a pseudo-terminal master reopens as a new terminal). */
	if (S_ISFIFO(st.st_mode)) {
		int own = reopen_nonblocking(fd);
		if (own >= 0) {
			s->fd = s->own_fd = own;
			return 0;
		}
	}
	/* A terminal, or a reopen refused (a FIFO whose reader is gone, no
	 * /proc): change the shared description for the run only. */
	if (fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0) {
		s->shared_fd = fd;
		s->saved_flags = flags;
	}
	return 0;
}

bool moat__sink_pending(const moat_sink *s)
{
	return s->fd >= 0 && !s->broken && !moat__iobuf_empty(&s->buf);
}

size_t moat__sink_room(const moat_sink *s)
{
	if (s->fd < 0 || s->broken)
		return SIZE_MAX;
	return moat__iobuf_room(&s->buf);
}

void moat__sink_flush(moat_sink *s)
{
	while (moat__sink_pending(s)) {
		size_t n;
		const char *p = moat__iobuf_peek(&s->buf, &n);
		ssize_t w = s->is_socket ? send(s->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL) : write(s->fd, p, n);
		if (w > 0) {
			moat__iobuf_drop(&s->buf, (size_t)w);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		/* EPIPE and the like: nobody reads any more. */
		s->broken = true;
		s->dropped += s->buf.len;
		moat__iobuf_clear(&s->buf);
	}
}

void moat__sink_put(moat_sink *s, const void *p, size_t n)
{
	if (s->fd < 0 || s->broken) {
		if (s->fd >= 0)
			s->dropped += n;
		return;
	}
	size_t took = moat__iobuf_push(&s->buf, p, n);
	s->dropped += n - took;
	moat__sink_flush(s);
}

void moat__sink_put_final(moat_sink *s, const void *p, size_t n)
{
	if (s->fd < 0 || s->broken) {
		if (s->fd >= 0)
			s->dropped += n;
		return;
	}
	size_t took = moat__iobuf_push_grow(&s->buf, p, n, MOAT_IOBUF_MAX);
	s->dropped += n - took;
	moat__sink_flush(s);
}

void moat__sink_close(moat_sink *s)
{
	uint64_t dropped = s->dropped + (s->fd >= 0 && !s->broken ? s->buf.len : 0);
	moat__iobuf_free(&s->buf);
	if (s->shared_fd >= 0)
		(void)fcntl(s->shared_fd, F_SETFL, s->saved_flags);
	if (s->own_fd >= 0)
		close(s->own_fd);
	*s = (moat_sink)MOAT_SINK_INIT;
	s->dropped = dropped;
}
