/* Landlock definitions newer than the kernel headers Debian 12 ships (which
 * know ABI 1 and 2). The values are the kernel's UAPI (include/uapi/linux/
 * landlock.h); the structs are ours so that the fields added by ABI 4 and 6
 * exist whatever the installed header says. */
#pragma once

#include <stdint.h>
#include <sys/syscall.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

#define MOAT_LL_CREATE_RULESET_VERSION (1u << 0)

/* ABI 1 */
#define MOAT_LL_FS_EXECUTE (1ull << 0)
#define MOAT_LL_FS_WRITE_FILE (1ull << 1)
#define MOAT_LL_FS_READ_FILE (1ull << 2)
#define MOAT_LL_FS_READ_DIR (1ull << 3)
#define MOAT_LL_FS_REMOVE_DIR (1ull << 4)
#define MOAT_LL_FS_REMOVE_FILE (1ull << 5)
#define MOAT_LL_FS_MAKE_CHAR (1ull << 6)
#define MOAT_LL_FS_MAKE_DIR (1ull << 7)
#define MOAT_LL_FS_MAKE_REG (1ull << 8)
#define MOAT_LL_FS_MAKE_SOCK (1ull << 9)
#define MOAT_LL_FS_MAKE_FIFO (1ull << 10)
#define MOAT_LL_FS_MAKE_BLOCK (1ull << 11)
#define MOAT_LL_FS_MAKE_SYM (1ull << 12)
/* ABI 2 */
#define MOAT_LL_FS_REFER (1ull << 13)
/* ABI 3 */
#define MOAT_LL_FS_TRUNCATE (1ull << 14)
/* ABI 5 */
#define MOAT_LL_FS_IOCTL_DEV (1ull << 15)

/* ABI 4 */
#define MOAT_LL_NET_BIND_TCP (1ull << 0)
#define MOAT_LL_NET_CONNECT_TCP (1ull << 1)

/* ABI 6 */
#define MOAT_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ull << 0)
#define MOAT_LL_SCOPE_SIGNAL (1ull << 1)

#define MOAT_LL_RULE_PATH_BENEATH 1
#define MOAT_LL_RULE_NET_PORT 2

struct moat_ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;             /* ABI 6 */
};

struct moat_ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct moat_ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};
