/* Small helpers shared by every libmoat file: cleanup attributes, ownership
 * transfer, and safe wrappers that retry on EINTR. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _pure_ __attribute__((pure))
#define _warn_unused_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static inline void moat__freep(void *p) { free(*(void **)p); }
static inline void moat__closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void moat__fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
void moat__strv_free(char **v);
static inline void moat__strv_freep(char ***v) { moat__strv_free(*v); }

#define _cleanup_free_ _cleanup_(moat__freep)
#define _cleanup_close_ _cleanup_(moat__closep)
#define _cleanup_fclose_ _cleanup_(moat__fclosep)
#define _cleanup_strv_free_ _cleanup_(moat__strv_freep)

/* Hand ownership on: returns the value and resets the variable so the
 * cleanup attribute does nothing. */
#define TAKE_PTR(p)                                                            \
	({                                                                     \
		__typeof__(p) _p_ = (p);                                       \
		(p) = NULL;                                                    \
		_p_;                                                           \
	})
#define TAKE_FD(fd)                                                            \
	({                                                                     \
		int _fd_ = (fd);                                               \
		(fd) = -1;                                                     \
		_fd_;                                                          \
	})

/* Negative errno from the current errno, never 0 (a failing call that left
 * errno unset must still read as a failure). */
static inline int moat__neg_errno(void) { return errno > 0 ? -errno : -EIO; }

/* Write all of buf, retrying on EINTR and short writes. */
int moat__write_all(int fd, const void *buf, size_t len);
/* Opens each of the descriptors 0, 1 and 2 that is closed on /dev/null,
 * so that nothing opened afterwards takes their place. Call it first
 * thing in main(). 0, or a negative errno. */
int moat_stdio_ensure_open(void);
/* Read exactly len bytes; returns len, a shorter count at EOF, or -errno. */
ssize_t moat__read_all(int fd, void *buf, size_t len);
/* Write a whole small file relative to dirfd, created exclusively and never
 * through a symlink. */
int moat__write_file_at(int dirfd, const char *path, const char *content, mode_t mode);
/* Write a string to an existing file (procfs/cgroupfs knobs). */
int moat__write_string(const char *path, const char *s);
int moat__write_string_at(int dirfd, const char *path, const char *s);
/* Read a small file whole into a NUL-terminated buffer; returns its
 * length. A file of more than max bytes is -EFBIG: its first max bytes
 * are never taken for all of it (callers say which file and the cap). */
int moat__read_file_at(int dirfd, const char *path, size_t max, char **ret);
/* The first max bytes of a file (all of it when shorter), for a caller
 * that wants only its head (the first fields of /proc/PID/status) or
 * works through a long list in rounds; returns how many were read. */
int moat__read_file_head_at(int dirfd, const char *path, size_t max, char **ret);

size_t moat__strv_length(char *const *v);
/* Append a copy of s; the vector stays NULL-terminated. */
int moat__strv_push(char ***v, const char *s);
char **moat__strv_copy(char *const *v);

/* Lower-case hex of n bytes into out (2n characters and a NUL). */
void moat__hex_encode(const void *bytes, size_t n, char *out);
/* n random bytes from the kernel, hex-encoded into out (2n + 1 bytes).
 * Returns 0 or -errno. */
int moat__random_hex(size_t n, char *out);

/* Milliseconds/nanoseconds on CLOCK_MONOTONIC. */
uint64_t moat__now_ns(void);

/* Text from outside (a value echoed in an error, a file name printed for a
 * person) made safe to show on one line of a terminal: the C0 controls,
 * DEL, the C1 controls (U+0080..U+009F) and bytes that are not UTF-8 are
 * written as \n, \t, \r or \xNN; everything else, other UTF-8 included,
 * is copied. Backslashes are left alone: this is for reading, not for
 * parsing back. moat__escape_controls writes at most cap bytes with the NUL,
 * never cutting an escape or a character, and returns the length written;
 * the _dup form allocates. Pure. */
size_t moat__escape_controls(const char *s, char *out, size_t cap);
char *moat__escape_controls_dup(const char *s);
/* True when s[0..n) holds anything moat__escape_controls would escape. */
bool moat__has_controls(const char *s, size_t n);

bool moat__streq(const char *a, const char *b);
bool moat__startswith(const char *s, const char *prefix);
