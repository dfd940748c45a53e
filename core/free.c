/*
 * free.c -- sqllock_free(), for the memory the library hands out
 * (sqllock_record_get(), sqllock_url_redact()). A file of its own, so that
 * a program that links only a few of the core's files (the fuzz targets
 * of tests/fuzz) can free what they return.
 */
#include <stdlib.h>

#include "internal.h"

void sqllock_free(void *p)
{
    free(p);
}
