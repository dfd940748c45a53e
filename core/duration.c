/*
 * duration.c -- sqllock_parse_duration_why(): the duration parser of
 * core/util.c with its reason, for a tool's messages.
 */
#include "internal.h"

int sqllock_parse_duration_why(const char *text, int64_t *ms,
                               const char **why)
{
    return sqllock__parse_duration(text, ms, why);
}
