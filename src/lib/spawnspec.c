/* The spawn spec's encoding (spawnspec.h). */
#include "spawnspec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct header {
	uint32_t magic, version, flags, argc, envc;
	uint16_t rows, cols;
} header;

static size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

static bool env_entry_ok(const char *e)
{
	const char *eq = strchr(e, '=');
	return eq && eq != e;
}

int moat__spawnspec_encode(char *const *argv, char *const *envp, const char *cwd, unsigned flags, uint16_t rows,
			   uint16_t cols, char **ret_buf, size_t *ret_len, moat_error *err)
{
	size_t argc = strv_len(argv), envc = strv_len(envp);
	if (argc == 0 || !argv[0][0])
		return moat_error_set(err, EINVAL, "command: no program to run");
	if (argc > MOAT_SPAWNSPEC_MAX_ARGS)
		return moat_error_set(err, E2BIG, "command: more than %d arguments", MOAT_SPAWNSPEC_MAX_ARGS);
	if (envc > MOAT_SPAWNSPEC_MAX_ENV)
		return moat_error_set(err, E2BIG, "env: more than %d variables", MOAT_SPAWNSPEC_MAX_ENV);
	if (cwd && !moat_path_is_clean_absolute(cwd))
		return moat_error_set(err, EINVAL, "cwd %s: not a clean absolute path", cwd);
	if (flags & ~(unsigned)MOAT_SPAWNSPEC_TTY)
		return moat_error_set(err, EINVAL, "spawn flags %#x unknown", flags);
	if ((rows || cols) && !(flags & MOAT_SPAWNSPEC_TTY))
		return moat_error_set(err, EINVAL, "spawn: a terminal size without a terminal");
	size_t total = sizeof(header);
	for (size_t i = 0; i < argc; i++)
		total += strlen(argv[i]) + 1;
	for (size_t i = 0; i < envc; i++) {
		if (!env_entry_ok(envp[i]))
			return moat_error_set(err, EINVAL, "env %s: not NAME=VALUE", envp[i]);
		total += strlen(envp[i]) + 1;
		if (total > MOAT_SPAWNSPEC_MAX_BYTES)
			break;
	}
	total += (cwd ? strlen(cwd) : 0) + 1;
	if (total > MOAT_SPAWNSPEC_MAX_BYTES)
		return moat_error_set(err, E2BIG, "command and environment: more than %zu bytes",
				      (size_t)MOAT_SPAWNSPEC_MAX_BYTES);
	char *buf = malloc(total);
	if (!buf)
		return moat_error_set(err, ENOMEM, "spawn spec");
	header h = {.magic = MOAT_SPAWNSPEC_MAGIC, .version = MOAT_SPAWNSPEC_VERSION, .flags = flags,
		    .argc = (uint32_t)argc, .envc = (uint32_t)envc, .rows = rows, .cols = cols};
	memcpy(buf, &h, sizeof(h));
	char *p = buf + sizeof(h);
	for (size_t i = 0; i < argc; i++)
		p = stpcpy(p, argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		p = stpcpy(p, envp[i]) + 1;
	p = stpcpy(p, cwd ? cwd : "") + 1;
	*ret_buf = buf;
	*ret_len = (size_t)(p - buf);
	return 0;
}

/* The next NUL-terminated string at *pos, or NULL when none ends before
 * end. */
static char *next_string(char **pos, char *end)
{
	char *s = *pos;
	if (s >= end)
		return NULL;
	char *nul = memchr(s, '\0', (size_t)(end - s));
	if (!nul)
		return NULL;
	*pos = nul + 1;
	return s;
}

int moat__spawnspec_decode(char *buf, size_t len, moat_spawnspec *ret, moat_error *err)
{
	header h;
	if (len < sizeof(h) || len > MOAT_SPAWNSPEC_MAX_BYTES)
		return moat_error_set(err, EBADMSG, "spawn spec: %zu bytes", len);
	memcpy(&h, buf, sizeof(h));
	if (h.magic != MOAT_SPAWNSPEC_MAGIC || h.version != MOAT_SPAWNSPEC_VERSION)
		return moat_error_set(err, EBADMSG, "spawn spec: not version %u", MOAT_SPAWNSPEC_VERSION);
	if (h.flags & ~(uint32_t)MOAT_SPAWNSPEC_TTY)
		return moat_error_set(err, EBADMSG, "spawn spec: flags %#x unknown", h.flags);
	if ((h.rows || h.cols) && !(h.flags & MOAT_SPAWNSPEC_TTY))
		return moat_error_set(err, EBADMSG, "spawn spec: a terminal size without a terminal");
	if (h.argc == 0 || h.argc > MOAT_SPAWNSPEC_MAX_ARGS || h.envc > MOAT_SPAWNSPEC_MAX_ENV)
		return moat_error_set(err, EBADMSG, "spawn spec: %u arguments, %u variables", h.argc, h.envc);
	_cleanup_free_ char **argv = calloc((size_t)h.argc + 1, sizeof(char *));
	_cleanup_free_ char **envp = calloc((size_t)h.envc + 1, sizeof(char *));
	if (!argv || !envp)
		return moat_error_set(err, ENOMEM, "spawn spec");
	char *pos = buf + sizeof(h), *end = buf + len;
	for (uint32_t i = 0; i < h.argc; i++)
		if (!(argv[i] = next_string(&pos, end)))
			return moat_error_set(err, EBADMSG, "spawn spec: argument %u cut short", i);
	if (!argv[0][0])
		return moat_error_set(err, EBADMSG, "spawn spec: empty program name");
	for (uint32_t i = 0; i < h.envc; i++) {
		if (!(envp[i] = next_string(&pos, end)))
			return moat_error_set(err, EBADMSG, "spawn spec: variable %u cut short", i);
		if (!env_entry_ok(envp[i]))
			return moat_error_set(err, EBADMSG, "spawn spec: variable %u is not NAME=VALUE", i);
	}
	char *cwd = next_string(&pos, end);
	if (!cwd)
		return moat_error_set(err, EBADMSG, "spawn spec: no working directory");
	if (pos != end)
		return moat_error_set(err, EBADMSG, "spawn spec: %zu bytes after its end", (size_t)(end - pos));
	if (cwd[0] && (strlen(cwd) >= MOAT_MAX_PATH || !moat_path_is_clean_absolute(cwd)))
		return moat_error_set(err, EBADMSG, "spawn spec: working directory not a clean absolute path");
	ret->argv = TAKE_PTR(argv);
	ret->envp = TAKE_PTR(envp);
	ret->cwd = cwd[0] ? cwd : NULL;
	ret->flags = h.flags;
	ret->rows = h.rows;
	ret->cols = h.cols;
	return 0;
}

void moat__spawnspec_done(moat_spawnspec *s)
{
	if (!s)
		return;
	free(s->argv);
	free(s->envp);
	s->argv = s->envp = NULL;
}
