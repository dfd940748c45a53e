/*
 * clock.c -- the clock of local deadlines and a lease's deadline on it,
 * for programs that keep time beside a lease (the tool's `run` tells its
 * guard process when the lease's local deadline passes).
 */
#include <stdatomic.h>

#include "internal.h"

int64_t sqllock_now_us(void)
{
    return sqllock__now_us();
}

int64_t sqllock_lease_deadline_us(const sqllock_lease *lease)
{
    return lease != NULL ? sqllock__lease_deadline(lease) : 0;
}
