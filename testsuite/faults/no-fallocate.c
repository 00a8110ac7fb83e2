/* Run a program on which fallocate(2) fails with EOPNOTSUPP, as on a file
   system without it: a seccomp filter answers the system call so.  Used by
   the continuous full-fs check for the runtime's fallback (the region
   written with zeros).  Usage: no-fallocate PROGRAM [ARG]...; exit 77 if
   the filter cannot be installed.  */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int
main (int argc, char **argv)
{
  struct sock_filter f[] = {
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_fallocate, 0, 1),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EOPNOTSUPP & SECCOMP_RET_DATA)),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = { sizeof f / sizeof f[0], f };
  if (argc < 2)
    return 2;
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
      || prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    {
      perror ("no-fallocate: seccomp");
      return 77;
    }
  execvp (argv[1], argv + 1);
  perror ("no-fallocate: exec");
  return 127;
}
