/*
 * tu_proxy.h -- a loopback TCP proxy for the tests that need a network
 * that stalls (issue 7, fault 4).
 *
 * The proxy listens on 127.0.0.1 on a free port and forwards every
 * connection it accepts to one target host:port. The test can tell it to
 *
 *   freeze  stop forwarding in both directions and stop accepting new
 *           connections, keeping every socket open: the client's bytes
 *           sit in socket buffers and the kernel still acknowledges them,
 *           so to the client the server simply never answers (neither
 *           keepalives nor a TCP user timeout notice anything);
 *   thaw    forward again (new connections that waited are accepted);
 *   cut     close every current connection (the client sees EOF);
 *   deafen  on every current connection, pass the client's bytes on but
 *           drop the server's answers: the statement runs, and its answer
 *           is lost (new connections are not affected).
 *
 * It runs in a forked child process, so that it works the same under
 * valgrind and the sanitizers and never shares memory or locks with the
 * library under test. The child uses only system calls on stack and
 * static buffers (no malloc, no stdio), so forking it is safe even when
 * the test already runs threads. Each command is acknowledged, so it has
 * taken effect when the call returns. tu_proxy_stop() kills and reaps
 * the child; tu_proxy_stop_all() does that for every proxy still running
 * (for a teardown after a failed test); on Linux the child also dies with
 * its parent.
 *
 * Include after test_util.h.
 */
#ifndef SQLLOCK_TU_PROXY_H
#define SQLLOCK_TU_PROXY_H

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#define TU_PROXY_MAX_PAIRS 48
#define TU_PROXY_MAX_RUNNING 8

typedef struct tu_proxy {
    pid_t pid;                 /* the child, or 0 */
    int port;                  /* where it listens on 127.0.0.1 */
    int ctl;                   /* commands to the child */
    int ack;                   /* its answers */
} tu_proxy;

static tu_proxy *tu_proxy_running[TU_PROXY_MAX_RUNNING];

/* One forwarded connection: the client's socket and the target's. */
typedef struct tu_proxy_pair {
    int fd[2];
    int deaf;                  /* drop what the target sends */
} tu_proxy_pair;

/* Writes all of buf; 0, or -1 when the peer is gone. */
static inline int tu_proxy_write_all(int fd, const char *buf, ssize_t n)
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

static inline void tu_proxy_close_pair(tu_proxy_pair *p)
{
    if (p->fd[0] >= 0)
        close(p->fd[0]);
    if (p->fd[1] >= 0)
        close(p->fd[1]);
    p->fd[0] = p->fd[1] = -1;
}

/* Accepts one client and connects it to the target. */
static inline void tu_proxy_accept(int lfd, const struct sockaddr *to,
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

/* Runs a command from the parent; 0 to go on, -1 to end. */
static inline int tu_proxy_command(int ctl, int ack, int *frozen,
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

/* The child's loop: the listening socket, the control pipe and, unless
 * frozen, every forwarded socket, in one poll(). */
static inline void tu_proxy_main(int lfd, int ctl, int ack,
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

/* Resolves host:port of the target. 0, or -1. */
static inline int tu_proxy_resolve(const char *host, int port,
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

/* Sends one command and waits for its acknowledgement. 0, or -1. */
static inline int tu_proxy_send(tu_proxy *p, char cmd)
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

static inline int tu_proxy_freeze(tu_proxy *p) { return tu_proxy_send(p, 'f'); }
static inline int tu_proxy_thaw(tu_proxy *p) { return tu_proxy_send(p, 't'); }
static inline int tu_proxy_cut(tu_proxy *p) { return tu_proxy_send(p, 'c'); }
static inline int tu_proxy_deafen(tu_proxy *p) { return tu_proxy_send(p, 'd'); }

/* Kills and reaps the child and closes the pipes. Harmless twice. */
static inline void tu_proxy_stop(tu_proxy *p)
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

/* Stops every proxy still running: for a teardown after a test failed
 * between its start and its stop. */
static inline void tu_proxy_stop_all(void)
{
    int i;

    for (i = 0; i < TU_PROXY_MAX_RUNNING; i++)
        if (tu_proxy_running[i] != NULL)
            tu_proxy_stop(tu_proxy_running[i]);
}

/* Starts a proxy to host:port. 0, or -1 (errno tells). `p` must stay
 * valid until tu_proxy_stop(). */
static inline int tu_proxy_start(tu_proxy *p, const char *host, int port)
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

/* Starts a proxy to the host and port of `url`
 * ("scheme://user:pass@host:port/db?query") and writes into out[] the
 * same URL with 127.0.0.1:<proxy port> in their place. 0, or -1. */
static inline int tu_proxy_for_url(tu_proxy *p, const char *url, char *out,
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

#endif /* SQLLOCK_TU_PROXY_H */
