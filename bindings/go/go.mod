module sqllock.dev/sqllock

go 1.19
