/*
 * proctree.c -- a process and every descendant it has, found by reading
 * /proc/<pid>/stat, signalled together: what the guard kills when the
 * job must stop (DESIGN X1), orphans re-parented to it included.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "guard.h"

/* One process as /proc shows it. */
typedef struct proc_ent {
    pid_t pid;
    pid_t ppid;
    int zombie;
} proc_ent;

/* Reads the parent and state of /proc/<name>; 0 on success. */
static int read_stat(const char *name, proc_ent *e)
{
    char path[64], buf[512];
    const char *p;
    ssize_t n;
    int fd;
    long ppid;
    char state;

    snprintf(path, sizeof path, "/proc/%s/stat", name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "PID (COMM) STATE PPID ...": COMM may hold spaces and ')'. */
    p = strrchr(buf, ')');
    if (p == NULL || sscanf(p + 1, " %c %ld", &state, &ppid) != 2)
        return -1;
    e->pid = (pid_t)strtol(name, NULL, 10);
    e->ppid = (pid_t)ppid;
    e->zombie = state == 'Z' || state == 'X';
    return 0;
}

/* Every process /proc lists now, in *out (free it); -1 without /proc or
 * memory. */
static int scan_procs(proc_ent **out, size_t *count)
{
    DIR *dir = opendir("/proc");
    struct dirent *d;
    proc_ent *all = NULL, e;
    size_t n = 0, cap = 0;

    *out = NULL;
    *count = 0;
    if (dir == NULL)
        return -1;
    while ((d = readdir(dir)) != NULL) {
        if (d->d_name[0] < '1' || d->d_name[0] > '9'
            || read_stat(d->d_name, &e) != 0)
            continue;
        if (n == cap) {
            size_t ncap = cap != 0 ? cap * 2 : 256;
            proc_ent *grown = realloc(all, ncap * sizeof *grown);

            if (grown == NULL) {
                free(all);
                closedir(dir);
                return -1;
            }
            all = grown;
            cap = ncap;
        }
        all[n++] = e;
    }
    closedir(dir);
    *out = all;
    *count = n;
    return 0;
}

int cli_guard_signal_tree(pid_t root, int sig)
{
    proc_ent *all;
    pid_t *desc;
    size_t n, i, k, nd = 0;
    int live = 0, grew;

    if (scan_procs(&all, &n) != 0)
        return 0;
    desc = malloc((n + 1) * sizeof *desc);
    if (desc == NULL) {
        free(all);
        return 0;
    }
    /* Descendants, level by level: a pass adds the children of those
     * found so far, until a pass adds none. */
    desc[nd++] = root;
    do {
        grew = 0;
        for (i = 0; i < n; i++) {
            if (all[i].pid == 0)
                continue;
            for (k = 0; k < nd; k++)
                if (all[i].ppid == desc[k])
                    break;
            if (k == nd)
                continue;
            desc[nd++] = all[i].pid;
            if (!all[i].zombie) {
                live++;
                if (sig != 0)
                    kill(all[i].pid, sig);
            }
            all[i].pid = 0;
            grew = 1;
        }
    } while (grew);
    free(desc);
    free(all);
    return live;
}
