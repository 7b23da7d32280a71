/* Capabilities: the sandboxed command starts with nothing. Every set is
 * emptied and the securebits are locked so that neither execve of a setuid
 * binary nor uid 0 inside the user namespace can bring a capability back. */
#include "confine.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* The securebits we lock. SECBIT_NOROOT stops uid 0 from gaining the full
 * permitted set at execve; KEEP_CAPS is left off and locked so a setuid()
 * always clears the sets; NO_CAP_AMBIENT_RAISE forbids refilling the ambient
 * set. NO_SETUID_FIXUP stays off (the kernel keeps clearing capabilities on
 * uid changes) and is locked too. */
#define MOAT_SECUREBITS                                                                            \
	(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | \
	 SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

static int caps_get(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	if (syscall(SYS_capget, &hdr, data) < 0)
		return moat__neg_errno();
	return 0;
}

/* Empties the bounding set. PR_CAPBSET_DROP fails with EINVAL past the
 * last capability the kernel knows, which ends the walk without reading
 * /proc/sys/kernel/cap_last_cap (masked or absent inside the sandbox).
 * Dropping one not in the set is no error, so each is dropped without
 * being read first (a system call less per capability, on every
 * command's start); one that cannot be dropped is read to tell whether
 * it is there at all. */
static int bounding_drop(moat_error *err)
{
	for (unsigned long cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		int e = errno;
		if (e == EINVAL)
			break;
		int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (r == 0)
			continue;
		if (r < 0 && errno == EINVAL)
			break;
		return moat_error_set(err, e, "drop bounding capability %lu", cap);
	}
	return 0;
}

int moat__caps_drop(moat_isolation *iso, moat_error *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return moat_error_set(err, errno, "set no_new_privs");
	iso->no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1;

	/* Securebits and the bounding set both need CAP_SETPCAP, so they go
	 * first, while the effective set still holds it. */
	int cur = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (cur < 0)
		return moat_error_set(err, errno, "read securebits");
	if ((cur & MOAT_SECUREBITS) != MOAT_SECUREBITS &&
	    prctl(PR_SET_SECUREBITS, (unsigned long)(cur | MOAT_SECUREBITS), 0, 0, 0) < 0)
		return moat_error_set(err, errno, "lock securebits");

	int r = bounding_drop(err);
	if (r < 0)
		return r;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return moat_error_set(err, errno, "clear ambient capabilities");

	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2] = {{0}};
	if (syscall(SYS_capset, &hdr, data) < 0)
		return moat_error_set(err, errno, "clear capability sets");

	/* Report what the kernel now says, not what was asked. */
	r = caps_get(data);
	if (r < 0)
		return moat_error_set(err, r, "read capability sets");
	bool empty = true;
	for (int i = 0; i < 2; i++)
		if (data[i].effective || data[i].permitted || data[i].inheritable)
			empty = false;
	if (prctl(PR_CAPBSET_READ, 0, 0, 0, 0) != 0 || prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 0, 0, 0) > 0)
		empty = false;
	if (!empty)
		return moat_error_set(err, EPERM, "capabilities still held after dropping them");
	iso->caps_dropped = true;
	return 0;
}
