#include "util.h"

#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

void moat__strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

size_t moat__strv_length(char *const *v)
{
	size_t n = 0;
	if (v)
		while (v[n])
			n++;
	return n;
}

int moat__strv_push(char ***v, const char *s)
{
	size_t n = moat__strv_length(*v);
	char *copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	char **nv = realloc(*v, (n + 2) * sizeof(char *));
	if (!nv) {
		free(copy);
		return -ENOMEM;
	}
	nv[n] = copy;
	nv[n + 1] = NULL;
	*v = nv;
	return 0;
}

char **moat__strv_copy(char *const *v)
{
	size_t n = moat__strv_length(v);
	char **c = calloc(n + 1, sizeof(char *));
	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		c[i] = strdup(v[i]);
		if (!c[i]) {
			moat__strv_free(c);
			return NULL;
		}
	}
	return c;
}

int moat__write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return moat__neg_errno();
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t moat__read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return moat__neg_errno();
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int moat__write_file_at(int dirfd, const char *path, const char *content, mode_t mode)
{
	_cleanup_close_ int fd =
		openat(dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return moat__neg_errno();
	return moat__write_all(fd, content, strlen(content));
}

int moat__write_string_at(int dirfd, const char *path, const char *s)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat__neg_errno();
	size_t len = strlen(s);
	/* Kernel knobs take the value in one write; a short write is an error. */
	ssize_t n = write(fd, s, len);
	if (n < 0)
		return moat__neg_errno();
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

int moat__write_string(const char *path, const char *s)
{
	return moat__write_string_at(AT_FDCWD, path, s);
}

int moat__read_file_at(int dirfd, const char *path, size_t max, char **ret)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat__neg_errno();
	_cleanup_free_ char *buf = malloc(max + 1);
	if (!buf)
		return -ENOMEM;
	ssize_t n = moat__read_all(fd, buf, max);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	*ret = TAKE_PTR(buf);
	return (int)n;
}

uint64_t moat__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool moat__streq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

bool moat__startswith(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

void moat__hex_encode(const void *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *b = bytes;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

int moat__random_hex(size_t n, char *out)
{
	unsigned char b[64];
	if (n > sizeof(b))
		return -EINVAL;
	size_t got = 0;
	while (got < n) {
		ssize_t k = getrandom(b + got, n - got, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return moat__neg_errno();
		}
		got += (size_t)k;
	}
	moat__hex_encode(b, n, out);
	return 0;
}

int moat_stdio_ensure_open(void)
{
	/* A descriptor moat opens takes the lowest free number: with stdin
	 * closed, the first one (a cgroup folder, a policy file) would become
	 * the sandbox's stdin. Each closed one of 0, 1, 2 is opened on
	 * /dev/null, without O_CLOEXEC: it is stdio. */
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int n = open("/dev/null", O_RDWR | O_NOCTTY);
		if (n < 0)
			return -errno;
		if (n != fd) {
			/* Something else filled the gap meanwhile; never leave
			 * a stray descriptor behind. */
			close(n);
			return -EBADF;
		}
	}
	return 0;
}
