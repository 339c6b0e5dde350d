/* SPDX-License-Identifier: MIT */
/*
 * What the host tools that drive DIMMnet-2 boards over the qtest protocol
 * (no guest OS: tools/bench/dn2-bench-qtest.c, tools/soak/dn2-soak.c) need
 * to start them: the child processes (QEMU, dn2-switch), the qtest socket,
 * and the common part of the command lines.  Plain C and POSIX; errors are
 * returned, the callers report them their own way.
 */
#ifndef QTEST_BOARD_H
#define QTEST_BOARD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* CLOCK_MONOTONIC in ns. */
uint64_t qb_now_ns(void);

/* How to start a child: stdout and stderr to out (NULL: /dev/null),
 * appended (append) or truncated; in directory cwd with core dumps allowed
 * (NULL: here, limits unchanged); pinned to CPU cpu (-1: anywhere).  The
 * child is killed when this process dies. */
struct qb_spawn {
    const char *out;
    bool append;
    const char *cwd;
    int cpu;
};

/* fork + exec argv[0]: the child's pid, or -errno when fork failed.  The
 * child exits 127 when the exec fails, 126 when it cannot be pinned. */
pid_t qb_spawn(char *const argv[], const struct qb_spawn *how);

/* A UNIX stream socket listening at path (a file already there is
 * removed): the fd, or -errno (-ENAMETOOLONG for a path too long). */
int qb_listen_unix(const char *path);

/* Appends at argv[*n] the head of the command line of a QEMU whose board
 * is driven over qtest:
 *   QEMU -qtest QTEST -qtest-log none -accel qtest -display none -L FW_DIR
 *        -M q35 -nodefaults -m 64M
 * (QTEST: "unix:PATH" of a qb_listen_unix socket).  The caller adds its
 * -object memory backend, -device dimmnet2,..., anything else, and NULL. */
void qb_qemu_argv(char **argv, int *n, const char *qemu, const char *fw_dir, const char *qtest);

/* Appends at argv[*n] the command line of a dn2-switch listening on
 * 127.0.0.1:port (0: any) that writes its port to ready (see
 * qb_ready_port) and logs quietly:
 *   SWITCH --listen 127.0.0.1:PORT --ready-file READY --quiet
 * listen: the caller's buffer (QB_LISTEN_LEN bytes) for the address. */
#define QB_LISTEN_LEN 32
void qb_switch_argv(char **argv, int *n, const char *sw, char *listen, int port,
                    const char *ready);

/* The port a dn2-switch wrote to its --ready-file, 0 while there is none. */
int qb_ready_port(const char *ready);

/* Send sig to pid and wait up to ms for it to exit, then SIGKILL it and
 * wait.  pid <= 0: nothing. */
void qb_reap(pid_t pid, int sig, unsigned ms);

/* Create (or truncate) the file path with size bytes and map it shared:
 * the SO-DIMM backing of a board (-object memory-backend-file,share=on).
 * NULL with errno set when that fails. */
void *qb_map_file(const char *path, uint64_t size);

#endif
