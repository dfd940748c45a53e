/*
 * main.c -- the oversell demo as a program of its own, the same code as
 * `sqllock demo` (demo.c):
 *
 *     example_demo [--db URL] [--workers N] [--stock N]
 *
 * Without --db it sells on a fresh temporary SQLite file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

/* Reads the value of option argv[*i] into *out, in [1, max]. */
static int int_arg(int argc, char **argv, int *i, int max, int *out)
{
    char *end;
    long v;

    if (*i + 1 >= argc) {
        fprintf(stderr, "example_demo: %s needs a value\n", argv[*i]);
        return 0;
    }
    v = strtol(argv[++*i], &end, 10);
    if (*end != '\0' || v < 1 || v > max) {
        fprintf(stderr, "example_demo: %s: not a number from 1 to %d\n",
                argv[*i - 1], max);
        return 0;
    }
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    demo_config cfg = { NULL, DEMO_DEFAULT_WORKERS, DEMO_DEFAULT_STOCK,
                        "example_demo" };
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
            cfg.url = argv[++i];
        } else if (strcmp(argv[i], "--workers") == 0) {
            if (!int_arg(argc, argv, &i, DEMO_MAX_WORKERS, &cfg.workers))
                return 64;
        } else if (strcmp(argv[i], "--stock") == 0) {
            if (!int_arg(argc, argv, &i, DEMO_MAX_STOCK, &cfg.stock))
                return 64;
        } else {
            fprintf(stderr, "usage: example_demo [--db URL] [--workers N] "
                    "[--stock N]\n");
            return 64;
        }
    }
    return demo_run(&cfg, NULL);
}
