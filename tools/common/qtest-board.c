/* SPDX-License-Identifier: MIT */
/* Starting qtest-driven DIMMnet-2 boards and their switch: see qtest-board.h. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "qtest-board.h"

uint64_t qb_now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

pid_t qb_spawn(char *const argv[], const struct qb_spawn *how)
{
    pid_t pid = fork();

    if (pid < 0) {
        return -errno;
    }
    if (pid == 0) {
        int fd = open(how->out ? how->out : "/dev/null",
                      O_WRONLY | O_CREAT | (how->append ? O_APPEND : O_TRUNC), 0644);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (how->cwd) {
            struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
            if (chdir(how->cwd) == 0) {
                setrlimit(RLIMIT_CORE, &rl);
            }
        }
        if (how->cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(how->cpu, &set);
            if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                _exit(126);
            }
        }
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

int qb_listen_unix(const char *path)
{
    struct sockaddr_un a;
    int fd, e;

    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(a.sun_path)) {
        return -ENAMETOOLONG;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) {
        return -errno;
    }
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0) {
        e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

void qb_qemu_argv(char **argv, int *n, const char *qemu, const char *fw_dir, const char *qtest)
{
    argv[(*n)++] = (char *)qemu;
    argv[(*n)++] = "-qtest";
    argv[(*n)++] = (char *)qtest;
    argv[(*n)++] = "-qtest-log";    /* the default logs every command to stderr */
    argv[(*n)++] = "none";
    argv[(*n)++] = "-accel";
    argv[(*n)++] = "qtest";
    argv[(*n)++] = "-display";
    argv[(*n)++] = "none";
    argv[(*n)++] = "-L";
    argv[(*n)++] = (char *)fw_dir;
    argv[(*n)++] = "-M";
    argv[(*n)++] = "q35";
    argv[(*n)++] = "-nodefaults";
    argv[(*n)++] = "-m";
    argv[(*n)++] = "64M";
}

void qb_switch_argv(char **argv, int *n, const char *sw, char *listen, int port,
                    const char *ready)
{
    snprintf(listen, QB_LISTEN_LEN, "127.0.0.1:%d", port);
    argv[(*n)++] = (char *)sw;
    argv[(*n)++] = "--listen";
    argv[(*n)++] = listen;
    argv[(*n)++] = "--ready-file";
    argv[(*n)++] = (char *)ready;
    argv[(*n)++] = "--quiet";
}

int qb_ready_port(const char *ready)
{
    FILE *f = fopen(ready, "r");
    int port = 0;

    if (!f) {
        return 0;
    }
    if (fscanf(f, "%d", &port) != 1 || port <= 0) {
        port = 0;
    }
    fclose(f);
    return port;
}

void qb_reap(pid_t pid, int sig, unsigned ms)
{
    uint64_t end = qb_now_ns() + (uint64_t)ms * 1000000ull;

    if (pid <= 0) {
        return;
    }
    kill(pid, sig);
    while (qb_now_ns() < end) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            return;
        }
        usleep(2000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

void *qb_map_file(const char *path, uint64_t size)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    void *p;
    int e;

    if (fd < 0) {
        return NULL;
    }
    if (ftruncate(fd, (off_t)size) < 0) {
        e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    e = errno;
    close(fd);
    errno = e;
    return p == MAP_FAILED ? NULL : p;
}
