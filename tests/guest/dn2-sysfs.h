/* SPDX-License-Identifier: MIT */
/* Reading one-line sysfs/procfs attributes in the guest test programs. */
#ifndef DN2_SYSFS_H
#define DN2_SYSFS_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Read the first line of path into buf without its trailing newline and
 * blanks.  -1 when the file cannot be opened (buf then says why). */
static inline int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n;

    buf[0] = 0;
    if (!f) {
        snprintf(buf, len, "(%s)", strerror(errno));
        return -1;
    }
    if (!fgets(buf, (int)len, f)) {
        buf[0] = 0;
    }
    fclose(f);
    n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) {
        buf[--n] = 0;
    }
    return 0;
}

#endif
