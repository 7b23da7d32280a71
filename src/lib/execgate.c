#include "execgate.h"

#include "util.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void moat__exec_rules_free(moat_exec_rule *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].path);
		moat__strv_free(v[i].args);
	}
	free(v);
}

int moat__exec_rules_copy(const moat_exec_rule *v, size_t n, moat_exec_rule **ret)
{
	*ret = NULL;
	if (!n)
		return 0;
	moat_exec_rule *c = calloc(n, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		c[i].path = strdup(v[i].path);
		if (!c[i].path || (v[i].args && !(c[i].args = moat__strv_copy(v[i].args)))) {
			moat__exec_rules_free(c, n);
			return -ENOMEM;
		}
	}
	*ret = c;
	return 0;
}

bool moat__exec_args_match(char *const *patterns, const char *args, size_t args_len, size_t n_argv)
{
	if (!patterns)
		return true;
	/* Skip argv[0]: the rule names the program by its path. */
	size_t off = 0, i = 0;
	if (n_argv > 0) {
		const char *z = memchr(args, '\0', args_len);
		if (!z)
			return false;
		off = (size_t)(z - args) + 1;
		i = 1;
	}
	for (size_t p = 0; patterns[p]; p++) {
		if (!patterns[p + 1] && strcmp(patterns[p], "*") == 0)
			return true; /* the rest, whatever it is */
		if (i >= n_argv || off >= args_len)
			return false;
		const char *a = args + off;
		const char *z = memchr(a, '\0', args_len - off);
		if (!z || fnmatch(patterns[p], a, 0) != 0)
			return false;
		off = (size_t)(z - args) + 1;
		i++;
	}
	return i == n_argv;
}

bool moat__exec_script_line(const char *buf, size_t n, char *ret_interp, size_t interp_cap, char *ret_arg,
			    size_t arg_cap)
{
	char line[MOAT_EXEC_HEAD_MAX + 1];
	if (n > MOAT_EXEC_HEAD_MAX)
		n = MOAT_EXEC_HEAD_MAX;
	if (n < 2 || buf[0] != '#' || buf[1] != '!' || !interp_cap || !arg_cap)
		return false;
	memcpy(line, buf, n);
	line[n] = '\0';
	char *end = memchr(line, '\n', n);
	bool whole = end != NULL;
	if (end)
		*end = '\0';
	char *i = line + 2 + strspn(line + 2, " \t");
	size_t il = strcspn(i, " \t");
	/* A name cut by the end of what is read is refused by the kernel
	 * (ENOEXEC) rather than run as a shorter one; a shorter file ends
	 * in the NULs of the kernel's zeroed buffer, which end the name. */
	if (!il || (!whole && n == MOAT_EXEC_HEAD_MAX && !i[il]))
		return false;
	char *opt = i[il] ? i + il + 1 : i + il;
	i[il] = '\0';
	opt += strspn(opt, " \t");
	size_t ol = strlen(opt);
	while (ol && (opt[ol - 1] == ' ' || opt[ol - 1] == '\t'))
		opt[--ol] = '\0';
	snprintf(ret_interp, interp_cap, "%s", i);
	snprintf(ret_arg, arg_cap, "%s", opt);
	return true;
}

/* A field of e bytes at p in the file's byte order. */
static uint64_t elf_get(const unsigned char *p, size_t e, bool msb)
{
	uint64_t v = 0;
	for (size_t k = 0; k < e; k++)
		v |= (uint64_t)p[msb ? e - 1 - k : k] << (8 * k);
	return v;
}

moat_elf_interp moat__exec_elf_interp(moat_exec_read_fn rd, void *ud, char *ret, size_t cap, const char **why)
{
	unsigned char eh[64];
	ssize_t n = rd(ud, eh, sizeof(eh), 0);
	*why = NULL;
	if (n < 4 || memcmp(eh, "\x7f" "ELF", 4) != 0) {
		if (n >= 0)
			return MOAT_ELF_NOT;
		*why = "its ELF header cannot be read";
		return MOAT_ELF_BAD;
	}
	*why = "its ELF header is truncated";
	if (n < 6)
		return MOAT_ELF_BAD;
	bool is64 = eh[4] == 2, msb = eh[5] == 2;
	if ((eh[4] != 1 && eh[4] != 2) || (eh[5] != 1 && eh[5] != 2)) {
		*why = "its ELF header has an unknown class or byte order";
		return MOAT_ELF_BAD;
	}
	/* e_phoff, e_phentsize and e_phnum, where the class puts them. */
	size_t ehsize = is64 ? 64 : 52, phent = is64 ? 56 : 32;
	if ((size_t)n < ehsize)
		return MOAT_ELF_BAD;
	uint64_t phoff = is64 ? elf_get(eh + 32, 8, msb) : elf_get(eh + 28, 4, msb);
	uint64_t entsize = elf_get(eh + (is64 ? 54 : 42), 2, msb), phnum = elf_get(eh + (is64 ? 56 : 44), 2, msb);
	if (phnum == 0)
		return MOAT_ELF_NONE;
	if (entsize != phent) {
		*why = "its program headers are not of its class's size";
		return MOAT_ELF_BAD;
	}
	if (phnum * phent > MOAT_ELF_PHDRS_MAX || phoff > UINT64_MAX - phnum * phent) {
		*why = "its program header table is larger than the kernel reads";
		return MOAT_ELF_BAD;
	}
	size_t size = (size_t)(phnum * phent);
	unsigned char *ph = malloc(size);
	if (!ph) {
		*why = "out of memory";
		return MOAT_ELF_BAD;
	}
	moat_elf_interp r = MOAT_ELF_NONE;
	if (rd(ud, ph, size, phoff) != (ssize_t)size) {
		*why = "its program header table is truncated";
		r = MOAT_ELF_BAD;
	}
	for (size_t k = 0; r != MOAT_ELF_BAD && k < phnum; k++) {
		const unsigned char *p = ph + k * phent;
		if (elf_get(p, 4, msb) != 3 /* PT_INTERP */)
			continue;
		if (r == MOAT_ELF_INTERP) {
			*why = "it has more than one PT_INTERP";
			r = MOAT_ELF_BAD;
			break;
		}
		uint64_t off = is64 ? elf_get(p + 8, 8, msb) : elf_get(p + 4, 4, msb);
		uint64_t len = is64 ? elf_get(p + 32, 8, msb) : elf_get(p + 16, 4, msb);
		*why = "its PT_INTERP is not a path the kernel would open";
		if (len < 2 || len > MOAT_ELF_INTERP_MAX || cap < MOAT_ELF_INTERP_MAX || off > UINT64_MAX - len) {
			r = MOAT_ELF_BAD;
			break;
		}
		if (rd(ud, ret, (size_t)len, off) != (ssize_t)len || ret[len - 1] != '\0' || !ret[0]) {
			r = MOAT_ELF_BAD;
			break;
		}
		r = MOAT_ELF_INTERP;
		*why = NULL;
	}
	free(ph);
	return r;
}

bool moat__maps_private(const char *maps, uint64_t addr, uint64_t len, moat_maps_file_ok file_ok, void *ud,
			const char **why)
{
	uint64_t at = addr, end = addr + len;
	if (end < addr) {
		*why = "the range wraps around";
		return false;
	}
	*why = "it is not in mapped memory";
	if (!len)
		return true;
	/* The lines are in address order: walk them, each covering the next
	 * part of the range until all of it is covered. */
	for (const char *l = maps; l && *l;) {
		const char *nl = strchr(l, '\n');
		char line[512];
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, l, n);
		line[n] = '\0';
		l = nl ? nl + 1 : NULL;
		uint64_t lo, hi, offset, inode;
		char perms[8], dev[16];
		int name_at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %15s %" SCNu64 " %n", &lo, &hi, perms, &offset,
			   dev, &inode, &name_at) < 6)
			continue;
		if (hi <= at || lo > at)
			continue;
		const char *name = name_at > 0 && (size_t)name_at <= n ? line + name_at : "";
		if (strlen(perms) < 4 || perms[3] != 'p') {
			*why = "it is in a shared mapping (another mapping of the same memory can change it)";
			return false;
		}
		bool anon = inode == 0 && (name[0] == '\0' || strcmp(name, "[heap]") == 0 ||
					   strncmp(name, "[stack", 6) == 0 || strncmp(name, "[anon:", 6) == 0);
		if (anon && perms[1] != 'w') {
			/* Anonymous and read-only: nothing is there to change it,
			 * but nothing sane execs from it either. */
			*why = "it is in a read-only anonymous mapping";
			return false;
		}
		if (!anon && (inode == 0 || name[0] != '/' || !file_ok || !file_ok(ud, dev, inode, name))) {
			*why = "it is in a mapping of a file the sandbox may write (its pages are the file's until "
			       "written)";
			return false;
		}
		at = hi;
		if (at >= end)
			return true;
	}
	return false;
}

/* One line of mountinfo, the fields the check needs. */
typedef struct {
	uint64_t id;
	char dev[32];
	char root[4096];
	bool rw; /* the mount's own flag and its superblock's: both rw */
} mi_line;

static bool has_opt(const char *opts, const char *o)
{
	size_t n = strlen(o);
	for (const char *p = opts; p && *p;) {
		if (strncmp(p, o, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

/* Parses "ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS...] - TYPE SOURCE SUPER". */
static bool mi_parse(const char *l, size_t n, mi_line *m)
{
	char line[8192], opts[1024], super[1024];
	if (n >= sizeof(line))
		return false;
	memcpy(line, l, n);
	line[n] = '\0';
	unsigned long long id, parent;
	char point[4096];
	if (sscanf(line, "%llu %llu %31s %4095s %4095s %1023s", &id, &parent, m->dev, m->root, point, opts) != 6)
		return false;
	const char *dash = strstr(line, " - ");
	if (!dash || sscanf(dash + 3, "%*s %*s %1023s", super) != 1)
		return false;
	m->id = id;
	m->rw = has_opt(opts, "rw") && has_opt(super, "rw");
	return true;
}

/* Whether root a (a path in a filesystem, as mountinfo escapes it) is b or
 * a folder b lies in. */
static bool root_holds(const char *a, const char *b)
{
	size_t n = strlen(a);
	if (strcmp(a, "/") == 0)
		return true;
	return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}

bool moat__mount_unwritable(const char *mountinfo, uint64_t mnt_id, const char **why)
{
	mi_line me, other;
	bool found = false;
	/* Every line must parse: one skipped could be the writable alias. */
	for (const char *l = mountinfo; l && *l && !found;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (!mi_parse(l, n, &me)) {
			*why = "the process's mount table cannot be read";
			return false;
		}
		found = me.id == mnt_id;
		l = nl ? nl + 1 : NULL;
	}
	*why = "its mount is not in the process's mount table";
	if (!found)
		return false;
	if (me.rw) {
		*why = "it is on a writable mount";
		return false;
	}
	for (const char *l = mountinfo; l && *l;) {
		const char *nl = strchr(l, '\n'), *at = l;
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		l = nl ? nl + 1 : NULL;
		if (!mi_parse(at, n, &other)) {
			*why = "the process's mount table cannot be read";
			return false;
		}
		if (!other.rw || strcmp(other.dev, me.dev) != 0)
			continue;
		if (root_holds(other.root, me.root) || root_holds(me.root, other.root)) {
			*why = "its read-only mount shows files a writable mount of the same filesystem also shows";
			return false;
		}
	}
	*why = NULL;
	return true;
}

