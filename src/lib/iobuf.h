/* The supervisor's output path, which must never block: a bounded byte
 * queue (pure) and a sink that writes it to a caller's descriptor without
 * ever waiting on it.
 *
 * A consumer that reads slowly, or not at all (a full pipe, a terminal
 * whose other side is stopped, a pseudo-terminal nobody reads), must not
 * hold up the loop that also runs the wall-clock timer, the limits and the
 * caller's signals. The supervisor reads from the sandbox only as much as
 * a sink's queue has room for, so a slow consumer slows the sandbox down
 * (its writes wait, as they would on any pipe) while its clock runs on. */
#pragma once

#include "util.h"

/* Bytes a sink holds at most: the sandbox is read only this far ahead of
 * its consumer. */
#define MOAT_IOBUF_CAP (256u * 1024u)
/* Once the sandbox is gone, what is still in its pipes is taken whole, so
 * that the run can be cleaned up without waiting for the consumer. What
 * those pipes can hold is bounded (fs.pipe-max-size for each, 1 MiB by
 * default, and the terminal's buffer); this bounds it again. */
#define MOAT_IOBUF_MAX (16u * 1024u * 1024u)

/* A ring of bytes of fixed capacity. */
typedef struct moat_iobuf {
	char *data;
	size_t cap;
	size_t head; /* index of the oldest byte held */
	size_t len;  /* bytes held */
} moat_iobuf;

int moat__iobuf_init(moat_iobuf *b, size_t cap);
void moat__iobuf_free(moat_iobuf *b);
static inline size_t moat__iobuf_room(const moat_iobuf *b) { return b->cap - b->len; }
static inline bool moat__iobuf_empty(const moat_iobuf *b) { return b->len == 0; }
/* Appends what fits; returns how many bytes were taken. */
size_t moat__iobuf_push(moat_iobuf *b, const void *p, size_t n);
/* Like push, growing the ring first as needed up to max bytes in all. */
size_t moat__iobuf_push_grow(moat_iobuf *b, const void *p, size_t n, size_t max);
/* The oldest held bytes that lie contiguous in memory (all of them, or up
 * to the end of the ring); NULL and 0 when empty. */
const char *moat__iobuf_peek(const moat_iobuf *b, size_t *ret_len);
/* Forgets the n oldest bytes (n <= len). */
void moat__iobuf_drop(moat_iobuf *b, size_t n);
void moat__iobuf_clear(moat_iobuf *b);

/* A destination the supervisor forwards to without blocking. How it avoids
 * blocking depends on what the descriptor is, because the descriptor's open
 * file description is shared with the caller (a terminal is also the
 * caller's shell's): a socket is written with MSG_DONTWAIT; a pipe or FIFO
 * is reopened through /proc/self/fd as a description of our own with
 * O_NONBLOCK; a terminal (or a pipe whose reopen is refused) gets O_NONBLOCK
 * on the shared description for the run, and its old flags back at the end.
 * A regular file never blocks and is written as is. */
typedef struct moat_sink {
	int fd;         /* where bytes go, -1: nowhere (bytes are dropped) */
	int own_fd;     /* a reopened description we close, or -1 */
	int shared_fd;  /* a caller's descriptor whose flags we changed, or -1 */
	int saved_flags;
	bool is_socket;
	bool broken;    /* the consumer went away: held and later bytes drop */
	uint64_t dropped; /* bytes that never reached the consumer */
	moat_iobuf buf;
} moat_sink;

/* fd < 0 makes a sink that takes and drops everything. ours: the
 * descriptor is moat's own (the pseudo-terminal's master), made
 * non-blocking in place. Returns 0 or -errno (out of memory). */
int moat__sink_open(moat_sink *s, int fd, bool ours);
/* True when the sink needs POLLOUT on s->fd to make progress. */
bool moat__sink_pending(const moat_sink *s);
/* Room for more bytes: unbounded for a sink that drops. */
size_t moat__sink_room(const moat_sink *s);
/* Queues n bytes (n <= room) and writes what the consumer takes now. */
void moat__sink_put(moat_sink *s, const void *p, size_t n);
/* The same beyond room, up to MOAT_IOBUF_MAX held: the sandbox is gone. */
void moat__sink_put_final(moat_sink *s, const void *p, size_t n);
/* Writes what the consumer takes now. */
void moat__sink_flush(moat_sink *s);
/* Drops what is still held (counted in dropped, which survives the
 * close), puts the caller's flags back, closes what we opened. Accepts a sink never opened (zeroed with fd
 * and own_fd -1, see MOAT_SINK_INIT). */
void moat__sink_close(moat_sink *s);
#define MOAT_SINK_INIT {.fd = -1, .own_fd = -1, .shared_fd = -1}
