// Command sqllock-bench measures what the Go binding costs against the C
// library: uncontended acquire+release pairs per second, one client, in
// the same process on the same database, printed as ratios to the C
// figure of the same run.
//
//	sqllock-bench [-seconds 3] [-reps 3] URL...
//
// Forms (each the median of -reps runs of -seconds):
//
//	c         the C loop through cgo: one sqllock_lease, try_acquire +
//	          release (bench_drivers' "sqllock" scenario), no watchdog;
//	go        db.TryLock(ctx, name, NoRenew()) + lease.Release(ctx): a
//	          lease handle made and freed per pair, no watchdog;
//	watched   db.TryLock(ctx, name) + Release: the watchdog on (watch,
//	          unwatch and a cgo.Handle per pair).
//
// A shared machine's load moves pairs/s a lot between runs (the forms run
// in turn in each round, so the load falls on all alike); "cpu us/pair",
// the process's user+system CPU per pair, moves much less and says what
// the binding itself costs.
package main

/*
#cgo pkg-config: sqllock
#include <stdlib.h>
#include <sqllock.h>

// Pairs of try_acquire + release on one lease for `us` microseconds;
// -status on a failure.
static int64_t c_pairs(const char *url, const char *name, int64_t us,
                       int64_t *took_us)
{
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int64_t n = 0, end;
    int rc = sqllock_open(url, NULL, &db);
    o.ttl_ms = 30000;
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_new(db, name, &o, &l);
    int64_t start = sqllock_now_us();
    end = start + us;
    while (rc == SQLLOCK_OK && sqllock_now_us() < end) {
        for (int i = 0; i < 20 && rc == SQLLOCK_OK; i++) {
            rc = sqllock_lease_try_acquire(l);
            if (rc == SQLLOCK_OK)
                rc = sqllock_lease_release(l);
            n++;
        }
    }
    *took_us = sqllock_now_us() - start;
    sqllock_lease_free(l);
    sqllock_close(db);
    return rc == SQLLOCK_OK ? n : -rc;
}
*/
import "C"

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"syscall"
	"time"
	"unsafe"

	"sqllock.dev/sqllock"
)

func main() {
	seconds := flag.Float64("seconds", 3, "length of one run")
	reps := flag.Int("reps", 3, "runs per form (the median is shown)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: sqllock-bench [-seconds S] [-reps N] URL...")
		os.Exit(2)
	}
	d := time.Duration(*seconds * float64(time.Second))
	fmt.Printf("%-8s %-8s %10s %8s %12s %8s   (medians of %d runs of %v; pairs/s of each run)\n",
		"driver", "form", "pairs/s", "vs C", "cpu us/pair", "vs C", *reps, d)
	for _, url := range flag.Args() {
		if err := bench(url, d, *reps); err != nil {
			fmt.Fprintln(os.Stderr, "sqllock-bench:", err)
			os.Exit(1)
		}
	}
}

func bench(url string, d time.Duration, reps int) error {
	db, err := sqllock.Open(url, sqllock.InitSchema())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	name := fmt.Sprintf("go-bench-%d", os.Getpid())
	goPair := func(opts ...sqllock.LockOption) func() error {
		return func() error {
			l, err := db.TryLock(ctx, name, append(opts, sqllock.TTL(30*time.Second))...)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}
	}
	forms := []struct {
		name string
		run  func() (float64, error)
	}{
		{"c", func() (float64, error) { return cRate(url, name, d) }},
		{"go", func() (float64, error) { return goRate(goPair(sqllock.NoRenew()), d) }},
		{"watched", func() (float64, error) { return goRate(goPair(), d) }},
	}
	// Rounds of every form in turn, so that the load of a shared machine
	// falls on all of them alike.
	runs := make([][]float64, len(forms))
	cpus := make([][]float64, len(forms))
	for i := 0; i < reps; i++ {
		for j, f := range forms {
			c0 := cpuUs()
			r, err := f.run()
			if err != nil {
				return fmt.Errorf("%s %s: %w", db.Driver(), f.name, err)
			}
			runs[j] = append(runs[j], r)
			cpus[j] = append(cpus[j], (cpuUs()-c0)/(r*d.Seconds()))
		}
	}
	cMedian, cCPU := median(runs[0]), median(cpus[0])
	for j, f := range forms {
		m, cpu := median(runs[j]), median(cpus[j])
		fmt.Printf("%-8s %-8s %10.0f %8.2f %12.0f %8.2f  ", db.Driver(), f.name, m, m/cMedian,
			cpu, cpu/cCPU)
		for _, r := range runs[j] {
			fmt.Printf(" %.0f", r)
		}
		fmt.Println()
	}
	return nil
}

func cRate(url, name string, d time.Duration) (float64, error) {
	cu, cn := C.CString(url), C.CString(name)
	defer C.free(unsafe.Pointer(cu))
	defer C.free(unsafe.Pointer(cn))
	var took C.int64_t
	n := int64(C.c_pairs(cu, cn, C.int64_t(d.Microseconds()), &took))
	if n < 0 {
		return 0, sqllock.Sentinel(int(-n))
	}
	return float64(n) / (float64(took) / 1e6), nil
}

func goRate(pair func() error, d time.Duration) (float64, error) {
	if err := pair(); err != nil { // warm up
		return 0, err
	}
	n := 0
	start := time.Now()
	end := start.Add(d)
	for time.Now().Before(end) {
		for i := 0; i < 20; i++ {
			if err := pair(); err != nil {
				return 0, err
			}
		}
		n += 20
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// cpuUs is the process's user+system CPU time so far, in microseconds.
func cpuUs() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
