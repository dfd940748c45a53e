/*
 * tu_proxy.c -- the loopback TCP proxy that stalls on command
 * (tu_proxy.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "tu_proxy.h"

static tu_proxy *tu_proxy_running[TU_PROXY_MAX_RUNNING];

int tu_proxy_write_all(int fd, const char *buf, ssize_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, (size_t)n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= w;
    }
    return 0;
}

void tu_proxy_close_pair(tu_proxy_pair *p)
{
    if (p->fd[0] >= 0)
        close(p->fd[0]);
    if (p->fd[1] >= 0)
        close(p->fd[1]);
    p->fd[0] = p->fd[1] = -1;
}

void tu_proxy_accept(int lfd, const struct sockaddr *to,
                                   socklen_t tolen, tu_proxy_pair *pairs)
{
    int c = accept(lfd, NULL, NULL), s, i, one = 1;

    if (c < 0)
        return;
    for (i = 0; i < TU_PROXY_MAX_PAIRS && pairs[i].fd[0] >= 0; i++)
        ;
    s = socket(to->sa_family, SOCK_STREAM, 0);
    if (i == TU_PROXY_MAX_PAIRS || s < 0 || connect(s, to, tolen) != 0) {
        close(c);
        if (s >= 0)
            close(s);
        return;
    }
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pairs[i].fd[0] = c;
    pairs[i].fd[1] = s;
    pairs[i].deaf = 0;
}

int tu_proxy_command(int ctl, int ack, int *frozen,
                                   tu_proxy_pair *pairs)
{
    char cmd;
    int i;
    ssize_t n = read(ctl, &cmd, 1);

    if (n < 0 && errno == EINTR)
        return 0;
    if (n != 1)
        return -1;                       /* the parent is gone */
    if (cmd == 'f')
        *frozen = 1;
    else if (cmd == 't')
        *frozen = 0;
    else if (cmd == 'c')
        for (i = 0; i < TU_PROXY_MAX_PAIRS; i++)
            tu_proxy_close_pair(&pairs[i]);
    else if (cmd == 'd')
        for (i = 0; i < TU_PROXY_MAX_PAIRS; i++)
            pairs[i].deaf = pairs[i].fd[0] >= 0;
    return write(ack, &cmd, 1) == 1 ? 0 : -1;
}

void tu_proxy_main(int lfd, int ctl, int ack,
                                 const struct sockaddr *to, socklen_t tolen)
{
    tu_proxy_pair pairs[TU_PROXY_MAX_PAIRS];
    struct pollfd pfd[2 + 2 * TU_PROXY_MAX_PAIRS];
    int owner[2 + 2 * TU_PROXY_MAX_PAIRS];
    char buf[16384];
    int frozen = 0, i, n;

    for (i = 0; i < TU_PROXY_MAX_PAIRS; i++)
        pairs[i].fd[0] = pairs[i].fd[1] = -1;
    for (;;) {
        n = 0;
        pfd[n].fd = ctl;
        pfd[n++].events = POLLIN;
        if (!frozen) {
            pfd[n].fd = lfd;
            pfd[n++].events = POLLIN;
            for (i = 0; i < TU_PROXY_MAX_PAIRS; i++) {
                if (pairs[i].fd[0] < 0)
                    continue;
                owner[n] = 2 * i;
                pfd[n].fd = pairs[i].fd[0];
                pfd[n++].events = POLLIN;
                owner[n] = 2 * i + 1;
                pfd[n].fd = pairs[i].fd[1];
                pfd[n++].events = POLLIN;
            }
        }
        if (poll(pfd, (nfds_t)n, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        if (pfd[0].revents != 0) {
            if (tu_proxy_command(ctl, ack, &frozen, pairs) != 0)
                return;
            continue;                    /* the command may change it all */
        }
        if (frozen)
            continue;
        if (pfd[1].revents & POLLIN)
            tu_proxy_accept(lfd, to, tolen, pairs);
        for (i = 2; i < n; i++) {
            tu_proxy_pair *p = &pairs[owner[i] / 2];
            int side = owner[i] % 2;
            ssize_t got;

            if (pfd[i].revents == 0 || p->fd[side] < 0)
                continue;
            got = recv(p->fd[side], buf, sizeof buf, 0);
            if (got < 0 && errno == EINTR)
                continue;
            if (got > 0 && side == 1 && p->deaf)
                continue;                /* the answer is lost */
            if (got <= 0 || tu_proxy_write_all(p->fd[1 - side], buf, got))
                tu_proxy_close_pair(p);  /* one side ended: end both */
        }
    }
}

int tu_proxy_resolve(const char *host, int port,
                                   struct sockaddr_storage *to,
                                   socklen_t *tolen)
{
    struct addrinfo hints, *res = NULL;
    char service[16];

    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(host, service, &hints, &res) != 0 || res == NULL)
        return -1;
    memcpy(to, res->ai_addr, res->ai_addrlen);
    *tolen = (socklen_t)res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int tu_proxy_send(tu_proxy *p, char cmd)
{
    char got = 0;

    if (p->pid <= 0 || write(p->ctl, &cmd, 1) != 1)
        return -1;
    while (read(p->ack, &got, 1) != 1) {
        if (errno != EINTR)
            return -1;
    }
    return got == cmd ? 0 : -1;
}

int tu_proxy_freeze(tu_proxy *p) { return tu_proxy_send(p, 'f'); }

int tu_proxy_thaw(tu_proxy *p) { return tu_proxy_send(p, 't'); }

int tu_proxy_cut(tu_proxy *p) { return tu_proxy_send(p, 'c'); }

int tu_proxy_deafen(tu_proxy *p) { return tu_proxy_send(p, 'd'); }

void tu_proxy_stop(tu_proxy *p)
{
    int i;

    if (p == NULL || p->pid <= 0)
        return;
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    close(p->ctl);
    close(p->ack);
    p->pid = 0;
    for (i = 0; i < TU_PROXY_MAX_RUNNING; i++)
        if (tu_proxy_running[i] == p)
            tu_proxy_running[i] = NULL;
}

void tu_proxy_stop_all(void)
{
    int i;

    for (i = 0; i < TU_PROXY_MAX_RUNNING; i++)
        if (tu_proxy_running[i] != NULL)
            tu_proxy_stop(tu_proxy_running[i]);
}

int tu_proxy_start(tu_proxy *p, const char *host, int port)
{
    struct sockaddr_storage to;
    struct sockaddr_in sin;
    socklen_t tolen = 0, len = sizeof sin;
    int lfd, ctl[2], ack[2], one = 1, i;

    memset(p, 0, sizeof *p);
    if (tu_proxy_resolve(host, port, &to, &tolen) != 0)
        return -1;
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        return -1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = 0;                    /* a free port, chosen here */
    if (bind(lfd, (struct sockaddr *)&sin, sizeof sin) != 0 ||
        listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sin, &len) != 0 ||
        pipe(ctl) != 0) {
        close(lfd);
        return -1;
    }
    if (pipe(ack) != 0) {
        close(lfd);
        close(ctl[0]);
        close(ctl[1]);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    p->pid = fork();
    if (p->pid == 0) {
#if defined(__linux__)
        prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
        close(ctl[1]);
        close(ack[0]);
        tu_proxy_main(lfd, ctl[0], ack[1], (struct sockaddr *)&to, tolen);
        _exit(0);
    }
    close(lfd);
    close(ctl[0]);
    close(ack[1]);
    if (p->pid < 0) {
        close(ctl[1]);
        close(ack[0]);
        p->pid = 0;
        return -1;
    }
    p->ctl = ctl[1];
    p->ack = ack[0];
    p->port = ntohs(sin.sin_port);
    for (i = 0; i < TU_PROXY_MAX_RUNNING; i++)
        if (tu_proxy_running[i] == NULL) {
            tu_proxy_running[i] = p;
            break;
        }
    return 0;
}

int tu_proxy_for_url(tu_proxy *p, const char *url, char *out,
                                   size_t size)
{
    const char *auth = strstr(url, "://"), *end, *at, *colon;
    char host[256];
    int port;

    if (auth == NULL)
        return -1;
    auth += 3;
    end = auth + strcspn(auth, "/?");
    at = auth;
    for (colon = auth; colon < end; colon++)
        if (*colon == '@')
            at = colon + 1;
    colon = memchr(at, ':', (size_t)(end - at));
    if (colon == NULL || (size_t)(colon - at) >= sizeof host)
        return -1;
    memcpy(host, at, (size_t)(colon - at));
    host[colon - at] = '\0';
    port = atoi(colon + 1);
    if (port <= 0 || tu_proxy_start(p, host, port) != 0)
        return -1;
    if (snprintf(out, size, "%.*s127.0.0.1:%d%s", (int)(at - url), url,
                 p->port, end) >= (int)size) {
        tu_proxy_stop(p);
        return -1;
    }
    return 0;
}
