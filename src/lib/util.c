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

static int read_file(int dirfd, const char *path, size_t max, bool whole, char **ret)
{
	if (max > INT32_MAX - 2) /* the length is returned as an int */
		return -EINVAL;
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat__neg_errno();
	/* One byte more than the cap is asked for: its arrival says the file
	 * is longer (a /proc file has no size to stat). */
	_cleanup_free_ char *buf = malloc(max + 2);
	if (!buf)
		return -ENOMEM;
	ssize_t n = moat__read_all(fd, buf, whole ? max + 1 : max);
	if (n < 0)
		return (int)n;
	if ((size_t)n > max)
		return -EFBIG;
	buf[n] = '\0';
	*ret = TAKE_PTR(buf);
	return (int)n;
}

int moat__read_file_at(int dirfd, const char *path, size_t max, char **ret)
{
	return read_file(dirfd, path, max, true, ret);
}

int moat__read_file_head_at(int dirfd, const char *path, size_t max, char **ret)
{
	return read_file(dirfd, path, max, false, ret);
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

/* Length of the well-formed UTF-8 sequence at s (at most n bytes) and its
 * code point, or 0 when the bytes there are not one. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *ret_cp)
{
	size_t len;
	uint32_t cp, min;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return len;
}

/* How many bytes of s[0..n) escape_one copies as they are (0 when the byte
 * at s must be escaped). */
static size_t plain_len(const unsigned char *s, size_t n)
{
	if (s[0] >= 0x20 && s[0] < 0x7f)
		return 1;
	uint32_t cp;
	size_t len = s[0] >= 0x80 ? utf8_seq(s, n, &cp) : 0;
	/* C1 controls (U+0080..U+009F): some terminals obey U+009B as CSI. */
	if (len && cp >= 0x80 && cp <= 0x9f)
		return 0;
	return len;
}

bool moat__has_controls(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t k = plain_len(u + i, n - i);
		if (!k)
			return true;
		i += k;
	}
	return false;
}

size_t moat__escape_controls(const char *s, char *out, size_t cap)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), o = 0;
	if (cap == 0)
		return 0;
	for (size_t i = 0; i < n;) {
		size_t k = plain_len(u + i, n - i);
		char esc[5];
		const char *piece;
		size_t plen;
		if (k) {
			piece = s + i;
			plen = k;
		} else {
			if (u[i] == '\n')
				memcpy(esc, "\\n", 3);
			else if (u[i] == '\t')
				memcpy(esc, "\\t", 3);
			else if (u[i] == '\r')
				memcpy(esc, "\\r", 3);
			else
				snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
			piece = esc;
			plen = strlen(esc);
			k = 1;
		}
		/* Never cut an escape or a character in two. */
		if (o + plen >= cap)
			break;
		memcpy(out + o, piece, plen);
		o += plen;
		i += k;
	}
	out[o] = '\0';
	return o;
}

char *moat__escape_controls_dup(const char *s)
{
	/* The worst case is four bytes out for every byte in. */
	size_t cap = 4 * strlen(s) + 1;
	char *out = malloc(cap);
	if (out)
		moat__escape_controls(s, out, cap);
	return out;
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
