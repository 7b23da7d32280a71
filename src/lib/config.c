#include "config.h"
#include "hostpath.h"

#include "units.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

void moat_limits_unlimited(moat_limits *l)
{
	l->wall_ms = MOAT_UNLIMITED;
	l->cpu_ms = MOAT_UNLIMITED;
	l->memory_bytes = MOAT_UNLIMITED;
	l->pids = MOAT_UNLIMITED;
	l->output_bytes = MOAT_UNLIMITED;
	l->tmp_bytes = MOAT_UNLIMITED;
	l->disk_bytes = MOAT_UNLIMITED;
	l->disk_inodes = MOAT_UNLIMITED;
	l->files = MOAT_UNLIMITED;
	l->fsize = MOAT_UNLIMITED;
	l->cpus_milli = MOAT_UNLIMITED;
}

void moat_limits_default_code(moat_limits *l)
{
	moat_limits_unlimited(l);
	l->wall_ms = 10 * 1000;
	l->cpu_ms = 10 * 1000;
	l->memory_bytes = 256ull << 20;
	l->pids = 64;
	l->output_bytes = 1ull << 20;
	l->tmp_bytes = 64ull << 20;
	l->disk_bytes = 64ull << 20;
	l->disk_inodes = 4096;
	l->files = 256;
	l->fsize = 64ull << 20;
}

moat_config *moat_config_new(void)
{
	moat_config *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	moat_limits_default_code(&c->limits);
	c->sandbox_uid = MOAT_DEFAULT_SANDBOX_UID;
	c->sandbox_gid = MOAT_DEFAULT_SANDBOX_GID;
	return c;
}

void moat_config_free(moat_config *c)
{
	if (!c)
		return;
	moat__strv_free(c->argv);
	for (size_t i = 0; i < c->n_binds; i++) {
		free(c->binds[i].src);
		free(c->binds[i].dst);
	}
	free(c->binds);
	free(c->out_dir);
	free(c->cwd);
	moat__strv_free(c->env);
	free(c->stdin_path);
	free(c->profile);
	free(c->policy_path);
	free(c->hostname);
	free(c->seccomp_extra);
	for (size_t i = 0; i < c->n_tmpfs; i++)
		free(c->tmpfs[i].dst);
	free(c->tmpfs);
	if (c->dev_shm)
		free(c->dev_shm->dst);
	free(c->dev_shm);
	moat__strv_free(c->masked_paths);
	moat__strv_free(c->readonly_paths);
	moat__strv_free(c->sysctls);
	free(c->rootfs);
	moat__strv_free(c->exec_allow);
	moat__exec_rules_free(c->exec_approve, c->n_exec_approve);
	free(c->policy_yaml);
	free(c);
}

bool moat_path_is_clean_absolute(const char *p)
{
	if (!p || p[0] != '/')
		return false;
	size_t len = strlen(p);
	if (len >= MOAT_MAX_PATH)
		return false;
	const char *s = p + 1;
	while (*s) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0 && e) /* "//" */
			return false;
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!e)
			break;
		s = e + 1;
	}
	return true;
}

static bool path_is_or_under(const char *p, const char *base)
{
	size_t n = strlen(base);
	return strncmp(p, base, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

bool moat_path_is_reserved_target(const char *p)
{
	/* moat builds these itself; a bind over them would replace the masked
	 * /proc, the minimal /dev or the root with host content. */
	static const char *const reserved[] = {"/proc", "/dev", "/sys"};
	if (strcmp(p, "/") == 0)
		return true;
	for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
		if (path_is_or_under(p, reserved[i]))
			return true;
	return false;
}

/* Strips one trailing slash (but keeps "/"). */
static char *dup_path(const char *p)
{
	char *d = strdup(p);
	if (!d)
		return NULL;
	size_t n = strlen(d);
	while (n > 1 && d[n - 1] == '/')
		d[--n] = '\0';
	return d;
}

int moat_config_add_bind(moat_config *c, const char *src, const char *dst, unsigned flags, moat_error *err)
{
	if (c->n_binds >= MOAT_MAX_BINDS)
		return moat_error_set(err, MOAT_EINPUT, "too many binds (at most %d)", MOAT_MAX_BINDS);
	if (!src[0] || !dst[0])
		return moat_error_set(err, MOAT_EINPUT, "bind needs a host path and a sandbox path");
	moat_bind *nb = realloc(c->binds, (c->n_binds + 1) * sizeof(*nb));
	if (!nb)
		return moat_error_set(err, ENOMEM, "bind");
	c->binds = nb;
	moat_bind *b = &c->binds[c->n_binds];
	b->src = dup_path(src);
	b->dst = dup_path(dst);
	b->flags = flags;
	if (!b->src || !b->dst) {
		free(b->src);
		free(b->dst);
		return moat_error_set(err, ENOMEM, "bind");
	}
	c->n_binds++;
	return 0;
}

int moat_config_add_bind_spec(moat_config *c, const char *spec, unsigned flags, moat_error *err)
{
	if (strlen(spec) >= 2 * MOAT_MAX_PATH)
		return moat_error_set(err, MOAT_EINPUT, "bind %.40s...: path too long", spec);
	_cleanup_free_ char *s = strdup(spec);
	if (!s)
		return moat_error_set(err, ENOMEM, "bind");
	/* HOST[:PATH]: the last colon separates, so a host path may not contain
	 * one; a path that does is rejected rather than read two ways. */
	char *colon = strchr(s, ':');
	if (colon && strchr(colon + 1, ':'))
		return moat_error_set(err, MOAT_EINPUT, "bind %s: more than one ':' (expected HOST[:PATH])", spec);
	const char *dst = s;
	if (colon) {
		*colon = '\0';
		dst = colon + 1;
	}
	return moat_config_add_bind(c, s, dst, flags, err);
}

int moat_env_spec_check(const char *spec, moat_error *err)
{
	const char *eq = strchr(spec, '=');
	size_t nlen = eq ? (size_t)(eq - spec) : strlen(spec);
	bool ok = nlen > 0;
	for (size_t i = 0; ok && i < nlen; i++) {
		char ch = spec[i];
		ok = ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (i > 0 && ch >= '0' && ch <= '9');
	}
	/* The same words as a policy's env: field. */
	if (!ok)
		return moat_error_set(err, MOAT_EINPUT, "env: '%.*s' is not a variable name (expected letters, digits and '_')",
				      (int)nlen, spec);
	/* Taking a value from the caller's environment is the front's
	 * business (a daemon's environment is not its client's). */
	if (!eq)
		return moat_error_set(err, MOAT_EINPUT, "env: '%s' has no value (expected NAME=VALUE)", spec);
	if (strlen(spec) > MOAT_MAX_ENV_BYTES)
		return moat_error_set(err, MOAT_EINPUT, "env.%.*s: value too long (at most %u bytes)", (int)nlen, spec,
				      MOAT_MAX_ENV_BYTES);
	return 0;
}

int moat_config_add_env(moat_config *c, const char *spec, moat_error *err)
{
	if (moat__strv_length(c->env) >= MOAT_MAX_ENV)
		return moat_error_set(err, MOAT_EINPUT, "env: more than %d variables", MOAT_MAX_ENV);
	int r = moat_env_spec_check(spec, err);
	if (r < 0)
		return r;
	return moat__strv_push(&c->env, spec) < 0 ? moat_error_set(err, ENOMEM, "env") : 0;
}

typedef struct limit_range {
	size_t offset;
	const char *field;
	moat_unit kind;
	uint64_t min, max;
	const char *why_min; /* after "at least N" */
	const char *why_max; /* after "at most N" */
} limit_range;

#define RANGE(f, name, kind, min, max, wmin, wmax) \
	{offsetof(moat_limits, f), "limits." name, kind, min, max, wmin, wmax}
static const limit_range ranges[] = {
	RANGE(wall_ms, "wall", MOAT_UNIT_DURATION, 1, MOAT_MAX_DURATION_MS, "", ""),
	RANGE(cpu_ms, "cpu_time", MOAT_UNIT_DURATION, 1, MOAT_MAX_DURATION_MS, "", ""),
	RANGE(memory_bytes, "memory", MOAT_UNIT_SIZE, 1ull << 20, MOAT_MAX_SIZE,
	      ": the sandbox's own processes need that much", ""),
	RANGE(pids, "pids", MOAT_UNIT_COUNT, 1, MOAT_MAX_PIDS, ": the command itself is one",
	      ", the kernel's limit on process ids"),
	RANGE(output_bytes, "output", MOAT_UNIT_SIZE, 0, MOAT_MAX_SIZE, "", ""),
	RANGE(tmp_bytes, "tmp", MOAT_UNIT_SIZE, 4096, MOAT_MAX_SIZE, ": one page", ""),
	RANGE(disk_bytes, "disk", MOAT_UNIT_SIZE, 0, MOAT_MAX_SIZE, "", ""),
	RANGE(disk_inodes, "inodes", MOAT_UNIT_COUNT, 0, MOAT_MAX_INODES, "", ""),
	RANGE(files, "files", MOAT_UNIT_COUNT, MOAT_MIN_FILES, (uint64_t)INT32_MAX,
	      ": the command's stdin, stdout and stderr and the libraries it loads need descriptors",
	      ", the kernel's largest descriptor limit"),
	RANGE(fsize, "fsize", MOAT_UNIT_SIZE, 0, MOAT_MAX_SIZE, "", ""),
	RANGE(cpus_milli, "cpu", MOAT_UNIT_CPUS, 1, MOAT_MAX_CPUS_MILLI, "", ""),
};

const char *moat_limit_label(size_t offset, char *buf, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(ranges); i++) {
		const limit_range *g = &ranges[i];
		if (g->offset == offset) {
			snprintf(buf, len, "%s", g->field);
			return buf;
		}
	}
	snprintf(buf, len, "limits");
	return buf;
}

int moat_limit_check(size_t offset, uint64_t v, moat_error *err)
{
	if (v == MOAT_UNLIMITED)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(ranges); i++) {
		const limit_range *g = &ranges[i];
		if (g->offset != offset)
			continue;
		if (v >= g->min && v <= g->max)
			return 0;
		char name[64], val[48], bound[48];
		moat_limit_label(offset, name, sizeof(name));
		moat_format_limit(g->kind, v, val, sizeof(val));
		if (v < g->min) {
			moat_format_limit(g->kind, g->min, bound, sizeof(bound));
			return moat_error_set(err, MOAT_EINPUT, "%s: %s is too small (at least %s%s)", name, val, bound,
					      g->why_min);
		}
		moat_format_limit(g->kind, g->max, bound, sizeof(bound));
		return moat_error_set(err, MOAT_EINPUT, "%s: %s is too large (at most %s%s; or unlimited)", name, val,
				      bound, g->why_max);
	}
	return 0;
}

int moat_limits_check(const moat_limits *l, moat_error *err)
{
	for (size_t i = 0; i < ELEMENTSOF(ranges); i++) {
		uint64_t v;
		memcpy(&v, (const char *)l + ranges[i].offset, sizeof(v));
		int r = moat_limit_check(ranges[i].offset, v, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int moat_config_validate(const moat_config *c, moat_error *err)
{
	if (!c->argv || !c->argv[0] || !c->argv[0][0])
		return moat_error_set(err, MOAT_EINPUT, "no command given (the run's argv is empty)");
	if (moat__strv_length(c->argv) > MOAT_MAX_ARGS)
		return moat_error_set(err, MOAT_EINPUT, "too many arguments (at most %d)", MOAT_MAX_ARGS);
	if (c->rootfs && (c->rootfs[0] != '/' || strlen(c->rootfs) >= MOAT_MAX_PATH))
		return moat_error_set(err, MOAT_EINPUT, "root.path: %s: must be an absolute host path", c->rootfs);

	for (size_t i = 0; i < c->n_binds; i++) {
		const moat_bind *b = &c->binds[i];
		const char *kind = (b->flags & MOAT_BIND_RW) ? "filesystem.read_write" : "filesystem.read_only";
		if (b->src[0] != '/')
			return moat_error_set(err, MOAT_EINPUT, "%s: %s: host path must be absolute", kind, b->src);
		if (!moat_path_is_clean_absolute(b->dst))
			return moat_error_set(err, MOAT_EINPUT,
					      "%s: %s:%s: sandbox path must be absolute, without '.', '..' or '//'",
					      kind, b->src, b->dst);
		if (moat_path_is_reserved_target(b->dst))
			return moat_error_set(err, MOAT_EINPUT, "%s: %s:%s: moat builds %s itself; a bind may not cover it",
					      kind, b->src, b->dst, b->dst);
		if (c->out_dir && (strcmp(b->dst, "/out") == 0))
			return moat_error_set(err, MOAT_EINPUT, "%s: %s:%s: /out is filesystem.out", kind,
					      b->src, b->dst);
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->binds[j].dst, b->dst) == 0)
				return moat_error_set(err, MOAT_EINPUT, "%s: %s:%s: %s is bound twice", kind, b->src,
						      b->dst, b->dst);
		moat_error perr = {0};
		char what[32];
		snprintf(what, sizeof(what), "%s:", kind);
		_cleanup_close_ int fd = moat__hostpath_open(what, b->src, O_PATH, 0, &perr);
		if (fd < 0) {
			if (perr.code == ENOENT && (b->flags & MOAT_BIND_OPTIONAL))
				continue;
			*err = perr;
			return -perr.code;
		}
	}
	if (c->out_dir) {
		if (c->out_dir[0] != '/')
			return moat_error_set(err, MOAT_EINPUT, "filesystem.out: %s: path must be absolute", c->out_dir);
		struct stat st;
		_cleanup_close_ int fd = moat__hostpath_open("filesystem.out:", c->out_dir, O_PATH, 0, err);
		if (fd < 0)
			return fd;
		if (fstat(fd, &st) < 0)
			return moat_error_set(err, errno, "filesystem.out: %s", c->out_dir);
		if (!S_ISDIR(st.st_mode))
			return moat_error_set(err, MOAT_EINPUT, "filesystem.out: %s: not a directory", c->out_dir);
	}
	if (c->cwd && !moat_path_is_clean_absolute(c->cwd))
		return moat_error_set(err, MOAT_EINPUT, "filesystem.cwd: %s: must be an absolute path inside the sandbox",
				      c->cwd);
	if (c->stdin_path) {
		struct stat st;
		_cleanup_close_ int fd = moat__hostpath_open("stdin:", c->stdin_path, O_PATH, 0, err);
		if (fd < 0)
			return fd;
		if (fstat(fd, &st) < 0)
			return moat_error_set(err, errno, "stdin: %s", c->stdin_path);
		if (S_ISDIR(st.st_mode))
			return moat_error_set(err, MOAT_EINPUT, "stdin: %s: is a directory", c->stdin_path);
	}
	int r = moat_limits_check(&c->limits, err);
	if (r < 0)
		return r;
	if (c->hostname && (strlen(c->hostname) == 0 || strlen(c->hostname) > 64))
		return moat_error_set(err, MOAT_EINPUT, "hostname must be 1 to 64 characters");
	return 0;
}
