/* The exec gate, the pure part: which execve an exec.approve rule holds
 * for a person, and whether the memory an execve's path and argv are read
 * from is memory no one else can change under the check. The part that
 * reads the stopped process and answers the kernel is in filetrail.c (the
 * gate shares the trail's seccomp listener); docs/approvals.md tells the
 * design and what it rules out. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* exec.approve rules a policy may list. */
#define MOAT_EXEC_APPROVE_MAX 64
/* Argument patterns one rule may give. */
#define MOAT_EXEC_APPROVE_ARGS_MAX 64

/* One exec.approve rule: the program (an absolute path inside the
 * sandbox) and, when args is not NULL, glob patterns for argv[1], argv[2],
 * ... (fnmatch, no special meaning for '/'); a last pattern "*" stands
 * for the rest of the arguments, none included. */
typedef struct moat_exec_rule {
	char *path;
	char **args;
} moat_exec_rule;

void moat__exec_rules_free(moat_exec_rule *v, size_t n);
/* A deep copy (*ret NULL when n is 0). -ENOMEM. */
int moat__exec_rules_copy(const moat_exec_rule *v, size_t n, moat_exec_rule **ret);

/* Whether argv (n_argv NUL-terminated strings one after another in
 * args[0..args_len), argv[0] first) matches the patterns (NULL: any). */
bool moat__exec_args_match(char *const *patterns, const char *args, size_t args_len, size_t n_argv);

/* What the kernel reads of a file to tell its format (BINPRM_BUF_SIZE). */
#define MOAT_EXEC_HEAD_MAX 256

/* Reads a file's first n bytes (at most MOAT_EXEC_HEAD_MAX: what the
 * kernel reads) as binfmt_script does: a "#!" line names the interpreter
 * (after blanks, up to a blank or the line's end) and at most one argument
 * for it (the rest of the line, blanks trimmed at both ends; "" for none).
 * Returns true with both filled (NUL-terminated, cut to the caps), false
 * when the kernel would not run it as a script: no "#!", no interpreter,
 * or an interpreter name that runs past what the kernel reads. */
bool moat__exec_script_line(const char *buf, size_t n, char *ret_interp, size_t interp_cap, char *ret_arg,
			    size_t arg_cap);

/* What an ELF file's program headers say of its loader. */
typedef enum moat_elf_interp {
	MOAT_ELF_NOT,	 /* not an ELF file (no "\x7fELF"): not the ELF loader's business */
	MOAT_ELF_NONE,	 /* an ELF file without PT_INTERP: nothing else is mapped */
	MOAT_ELF_INTERP, /* PT_INTERP names a loader: the kernel starts it with the same argv */
	MOAT_ELF_BAD,	 /* headers the gate cannot read as surely as the kernel: deny */
} moat_elf_interp;

/* Reads up to n bytes at off of the file being looked at: the count read
 * (short at its end), or -1. */
typedef ssize_t (*moat_exec_read_fn)(void *ud, void *buf, size_t n, uint64_t off);

/* The kernel's caps: an ELF's program headers take at most this many
 * bytes (elf_read_phdrs allows one page; the gate reads up to 64 KiB and
 * so never misses one the kernel reads), and PT_INTERP holds 2..PATH_MAX
 * bytes, its last a NUL. */
#define MOAT_ELF_PHDRS_MAX 65536
#define MOAT_ELF_INTERP_MAX 4096

/* Reads an ELF file's header and program headers (32 or 64 bit, either
 * byte order, whatever the machine) through rd, as binfmt_elf does to
 * find the loader: MOAT_ELF_INTERP with ret (cap bytes, at least
 * MOAT_ELF_INTERP_MAX) the path PT_INTERP names, up to its first NUL, as
 * the kernel opens it. Anything odd is MOAT_ELF_BAD with *why: a
 * truncated header or table, an unknown class or byte order, a program
 * header size that is not the class's, a table over the cap, a PT_INTERP
 * out of bounds, not NUL-terminated, empty, or more than one of them (the
 * kernel takes the first; a file with two is not one to guess about). */
moat_elf_interp moat__exec_elf_interp(moat_exec_read_fn rd, void *ud, char *ret, size_t cap, const char **why);

/* Decides about a private mapping of a file (its device "MM:mm", inode and
 * name from the maps line): true when the file cannot change under the
 * check (the caller's judgement: a read-only mount). */
typedef bool (*moat_maps_file_ok)(void *ud, const char *dev, uint64_t inode, const char *name);

/* Whether [addr, addr + len) lies wholly in mappings of a process (maps:
 * the text of /proc/PID/maps) whose content no one but the process can
 * change: private anonymous ones (an anonymous mapping, the heap, the
 * stack), and private mappings of files file_ok accepts (NULL: none). A
 * shared mapping can be written through another mapping of it; a private
 * file-backed one reads the file's pages until first written, so a write
 * to the file shows through. false with *why naming the reason otherwise. */
bool moat__maps_private(const char *maps, uint64_t addr, uint64_t len, moat_maps_file_ok file_ok, void *ud,
			const char **why);

/* Whether the mount mnt_id of a process's mount namespace (mountinfo: the
 * text of /proc/PID/mountinfo) is one the process cannot write through,
 * itself or through another mount: read-only, and no writable mount of the
 * same filesystem shows any part of it (a writable bind whose root in the
 * filesystem is inside this mount's root, or holds it: the workspace bound
 * read-write and a folder of it bound read-only elsewhere, say). A read-only
 * superblock makes every mount of it read-only. false with *why otherwise,
 * and when the mount is not listed. */
bool moat__mount_unwritable(const char *mountinfo, uint64_t mnt_id, const char **why);

