/* ATTACK: moat started with its stderr closed: look for a host descriptor (a cgroup folder, a policy file) that moat opened into the free slot and handed on as the sandbox's stdio | LAYER: moat opens 0, 1 and 2 on /dev/null before anything else, so nothing it opens (the audit log) takes their place (main.c) | REF: - */
/* RUN: --audit @TDIR@/audit-stdio-stderr.jsonl */
/* CLOSE: 2 */
#include "stdio_closed.h"
