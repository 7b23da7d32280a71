/* Landlock: the filesystem and scope rules of the sandboxed command,
 * applied with raw system calls. They mirror the mounts (a second, kernel-
 * enforced statement of the same layout, which still holds if a mount is
 * wrong) and add what mounts cannot say: where programs may be executed, and
 * that the command may neither signal nor reach abstract sockets of
 * processes outside its own domain (pid 1, the supervisor, the host). TCP is
 * the network namespace's to confine (see the end of moat__landlock_plan).
 * Each ABI adds rights; moat uses what the kernel offers and reports the ABI
 * it used. */
#include "baseroot.h"
#include "confine.h"
#include "landlock-compat.h"
#include "landlock.h"

#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#define LL_READ (MOAT_LL_FS_READ_FILE | MOAT_LL_FS_READ_DIR)
/* Rights that make sense on a regular file rather than a directory. */
#define LL_FILE_RIGHTS                                                                             \
	(MOAT_LL_FS_EXECUTE | MOAT_LL_FS_WRITE_FILE | MOAT_LL_FS_READ_FILE | MOAT_LL_FS_TRUNCATE |   \
	 MOAT_LL_FS_IOCTL_DEV)
/* Output trees (/out, --rw): files, directories and symlinks. No FIFOs,
 * sockets or devices: the host reads these trees after the run, and a FIFO
 * left there would block that read. Symlinks stay allowed because workspaces
 * need them (package managers, git checkouts); the ones that point out of
 * /out are removed by the output clean-up after the run. */
#define LL_WRITE_TREE                                                                              \
	(LL_READ | MOAT_LL_FS_WRITE_FILE | MOAT_LL_FS_REMOVE_DIR | MOAT_LL_FS_REMOVE_FILE |           \
	 MOAT_LL_FS_MAKE_DIR | MOAT_LL_FS_MAKE_REG | MOAT_LL_FS_MAKE_SYM | MOAT_LL_FS_REFER |         \
	 MOAT_LL_FS_TRUNCATE)
/* Scratch (/tmp, /dev/shm): what programs expect of a private tmpfs. */
#define LL_SCRATCH (LL_WRITE_TREE | MOAT_LL_FS_MAKE_SOCK | MOAT_LL_FS_MAKE_FIFO)
/* /dev holds only moat's few nodes; writing and ioctl on them (terminals,
 * /dev/null) is normal, and shells open /dev/null with O_TRUNC. */
#define LL_DEV (LL_READ | MOAT_LL_FS_WRITE_FILE | MOAT_LL_FS_TRUNCATE | MOAT_LL_FS_IOCTL_DEV)

/* ELF interpreters: with an allowlist, execve of an allowed dynamic binary
 * still opens its loader for execution, so the loader must be allowed too. */
static const char *const elf_loaders[] = {
	"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
	"/lib/ld-linux-aarch64.so.1", "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
};

static uint64_t fs_rights_for_abi(int abi)
{
	uint64_t m = (MOAT_LL_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
	if (abi >= 2)
		m |= MOAT_LL_FS_REFER;
	if (abi >= 3)
		m |= MOAT_LL_FS_TRUNCATE;
	if (abi >= 5)
		m |= MOAT_LL_FS_IOCTL_DEV;
	return m;
}

int moat__landlock_abi(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, MOAT_LL_CREATE_RULESET_VERSION);
	return abi > 0 ? (int)abi : 0;
}

static int plan_add(moat_ll_plan *p, const char *path, uint64_t access, bool optional, moat_error *err)
{
	if (p->n_paths >= ELEMENTSOF(p->paths))
		return moat_error_set(err, MOAT_EINPUT, "landlock: too many path rules (at most %zu)",
				      ELEMENTSOF(p->paths));
	p->paths[p->n_paths++] = (moat_ll_path_rule){.path = path, .access = access & p->handled_fs, .optional = optional};
	return 0;
}

int moat__landlock_plan(const moat_config *c, int abi, moat_ll_plan *ret, moat_error *err)
{
	moat_ll_plan *p = ret;
	memset(p, 0, sizeof(*p));
	if (abi > MOAT_LANDLOCK_ABI_MAX)
		abi = MOAT_LANDLOCK_ABI_MAX;
	p->abi = abi;
	if (abi <= 0)
		return 0;
	p->handled_fs = fs_rights_for_abi(abi);
	/* TCP is left to the network namespace: see the end of this function. */
	if (abi >= 6)
		p->scoped = MOAT_LL_SCOPE_ABSTRACT_UNIX_SOCKET | MOAT_LL_SCOPE_SIGNAL;
	p->exec_allowlist = c->exec_allow != NULL;

	/* Everything mounted in the sandbox may be read: the mounts decide what
	 * is there. A file reached from outside that tree (an fd leaked in from
	 * the host and reopened through /proc/self/fd) has no rule and is
	 * refused. */
	uint64_t root = LL_READ;
	/* A root given by the caller (an OCI image) holds the programs the
	 * container is for, wherever the image put them, and with a writable
	 * root the container writes its own copy. */
	if (c->rootfs && !p->exec_allowlist)
		root |= MOAT_LL_FS_EXECUTE;
	if (c->rootfs && c->rootfs_writable)
		root |= LL_WRITE_TREE;
	int r = plan_add(p, "/", root, false, err);
	if (r < 0)
		return r;

	if (!p->exec_allowlist) {
		/* Where executables live when no exec allowlist is given:
		 * the base root. */
		for (size_t i = 0; i < ELEMENTSOF(moat__base_system_dirs); i++)
			if ((r = plan_add(p, moat__base_system_dirs[i], LL_READ | MOAT_LL_FS_EXECUTE, true, err)) < 0)
				return r;
	} else {
		for (char **e = c->exec_allow; *e; e++)
			if ((r = plan_add(p, *e, MOAT_LL_FS_READ_FILE | MOAT_LL_FS_EXECUTE, false, err)) < 0)
				return r;
		for (size_t i = 0; i < ELEMENTSOF(elf_loaders); i++)
			if ((r = plan_add(p, elf_loaders[i], MOAT_LL_FS_READ_FILE | MOAT_LL_FS_EXECUTE, true, err)) < 0)
				return r;
	}

	/* Compile-and-run is what the code runner is for, so programs built in
	 * /tmp may run unless an allowlist or exec_deny_tmp says otherwise. */
	uint64_t tmp = LL_SCRATCH;
	if (!p->exec_allowlist && !c->exec_deny_tmp)
		tmp |= MOAT_LL_FS_EXECUTE;
	if ((r = plan_add(p, "/tmp", tmp, true, err)) < 0 || (r = plan_add(p, "/dev", LL_DEV, true, err)) < 0 ||
	    (r = plan_add(p, "/dev/shm", LL_SCRATCH, true, err)) < 0)
		return r;
	/* A workspace is where an agent builds and runs things: with
	 * exec.workspace (the agent profile), /out and writable binds may hold
	 * programs too. Without it nothing the code writes there can run. */
	bool ws_exec = c->exec_workspace && !p->exec_allowlist;
	if (c->out_dir && (r = plan_add(p, "/out", LL_WRITE_TREE | (ws_exec ? MOAT_LL_FS_EXECUTE : 0), false, err)) < 0)
		return r;

	for (size_t i = 0; i < c->n_binds; i++) {
		const moat_bind *b = &c->binds[i];
		uint64_t a = (b->flags & MOAT_BIND_RW) ? LL_WRITE_TREE : LL_READ;
		/* A read-only bind may hold the program to run (a checked-out tool,
		 * the attack suite); a writable one may not, so nothing the code
		 * writes can be executed from it. */
		if (!(b->flags & (MOAT_BIND_RW | MOAT_BIND_NOEXEC)) && !p->exec_allowlist)
			a |= MOAT_LL_FS_EXECUTE;
		if ((b->flags & MOAT_BIND_RW) && !(b->flags & MOAT_BIND_NOEXEC) && ws_exec)
			a |= MOAT_LL_FS_EXECUTE;
		if ((r = plan_add(p, b->dst, a, (b->flags & MOAT_BIND_OPTIONAL) != 0, err)) < 0)
			return r;
	}

	/* No TCP rules. Every sandbox has a network namespace of its own that
	 * holds only loopback (sandbox.c creates it unconditionally), so a TCP
	 * bind or connect there reaches nothing but the sandbox itself and,
	 * with --net proxy, the egress relay. Programs need that loopback: test
	 * suites, language servers, local web servers, multiprocessing
	 * listeners. Landlock's TCP rules match ports, not addresses or
	 * namespaces, and would refuse exactly this traffic, while adding
	 * nothing at the boundary: no route leaves the namespace. The relay's
	 * port cannot be taken over either: the init binds and listens on it
	 * before the command starts, without SO_REUSEPORT, so any other bind of
	 * 127.0.0.1:3128 or of the wildcard address on that port fails with
	 * EADDRINUSE (tests/attacks/tcp_proxy_port_takeover.c). */
	return 0;
}

void moat__landlock_describe(const moat_ll_plan *p, char *buf, size_t len)
{
	if (p->abi <= 0) {
		snprintf(buf, len, "none");
		return;
	}
	snprintf(buf, len, "fs%s%s", p->exec_allowlist ? "(exec-allowlist)" : "", p->scoped ? ",scope" : "");
}

static int add_path_rule(int ruleset, const moat_ll_path_rule *rule, moat_error *err)
{
	_cleanup_close_ int fd = open(rule->path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && rule->optional)
			return 0;
		return moat_error_set(err, errno, "landlock: open %s", rule->path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "landlock: stat %s", rule->path);
	uint64_t access = rule->access;
	/* The kernel refuses directory rights on a file rule. */
	if (!S_ISDIR(st.st_mode))
		access &= LL_FILE_RIGHTS;
	if (!access)
		return 0;
	struct moat_ll_path_beneath_attr attr = {.allowed_access = access, .parent_fd = fd};
	if (syscall(__NR_landlock_add_rule, ruleset, MOAT_LL_RULE_PATH_BENEATH, &attr, 0) < 0)
		return moat_error_set(err, errno, "landlock: rule for %s", rule->path);
	return 0;
}

int moat__landlock_apply(const moat_config *c, moat_isolation *iso, moat_error *err)
{
	int abi = moat__landlock_abi();
	iso->landlock_abi = 0;
	if (abi <= 0)
		return 0; /* Reported as landlock_abi 0; `require: [landlock]` refuses. */

	/* The plan is a few kilobytes: keep it off the stack of the last
	 * process before execve. */
	_cleanup_free_ moat_ll_plan *plan = calloc(1, sizeof(*plan));
	if (!plan)
		return moat_error_set(err, ENOMEM, "landlock");
	int r = moat__landlock_plan(c, abi, plan, err);
	if (r < 0)
		return r;

	struct moat_ll_ruleset_attr attr = {
		.handled_access_fs = plan->handled_fs,
		.scoped = plan->scoped,
	};
	/* Pass only the fields this ABI knows: older kernels refuse a larger
	 * struct. */
	size_t size = plan->abi >= 6 ? sizeof(attr) : plan->abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
	_cleanup_close_ int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, size, 0);
	if (ruleset < 0)
		return moat_error_set(err, errno, "landlock: create ruleset (ABI %d)", plan->abi);

	for (size_t i = 0; i < plan->n_paths; i++)
		if ((r = add_path_rule(ruleset, &plan->paths[i], err)) < 0)
			return r;

	/* Landlock needs no_new_privs (or CAP_SYS_ADMIN); caps.c has set it. */
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return moat_error_set(err, errno, "landlock: set no_new_privs");
	if (syscall(__NR_landlock_restrict_self, ruleset, 0) < 0)
		return moat_error_set(err, errno, "landlock: restrict self");

	iso->landlock_abi = plan->abi;
	moat__landlock_describe(plan, iso->landlock_rules, sizeof(iso->landlock_rules));
	return 0;
}
