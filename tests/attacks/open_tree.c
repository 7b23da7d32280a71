/* ATTACK: clone a mount tree with open_tree(OPEN_TREE_CLONE) | LAYER: seccomp (open_tree) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("open_tree clone of /", syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */ | O_CLOEXEC));
}
