'use strict';
// What the binding costs: uncontended acquire+release pairs per second,
// one client, each URL, from Node and from C in the same run:
//
//   C        sqllock_lease_try_acquire + sqllock_lease_release on one
//            handle, timed in C on a thread of the addon (no JavaScript
//            in the loop): bench_drivers' "sqllock" scenario;
//   try      await db.tryLock(name, { ttl, renew: false }) then
//            await lease.release(): a new lease handle per pair, two
//            trips through the job queue and the threadsafe function;
//   watched  the same with the watchdog (watch and unwatch per pair).
//
//   SQLLOCK_NODE_ADDON=/tmp/hn/build/sqllock.node \
//     node bindings/node/bench.js --seconds 3 --reps 3 sqlite:///tmp/b.db postgres://...
//
// The ratio is Node's pairs/s over C's (1.0: the binding costs nothing).
const path = require('path');
const sqllock = require(path.join(__dirname, 'lib'));

async function rate(fn, seconds) {
  let n = 0;
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(Math.round(seconds * 1e9));
  for (;;) {
    for (let i = 0; i < 20; i++) await fn();
    n += 20;
    const now = process.hrtime.bigint();
    if (now >= end) return n / (Number(now - t0) / 1e9);
  }
}

async function rateC(db, name, seconds) {
  // Calibrate, then one run of about `seconds`.
  let pairs = 50;
  let us = await db._benchC(name, pairs);
  pairs = Math.max(50, Math.round(pairs * (seconds * 1e6) / Math.max(us, 1)));
  us = await db._benchC(name, pairs);
  return pairs / (us / 1e6);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(argv) {
  let seconds = 3;
  let reps = 3;
  const urls = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--seconds') seconds = Number(argv[++i]);
    else if (argv[i] === '--reps') reps = Number(argv[++i]);
    else urls.push(argv[i]);
  }
  if (!urls.length) {
    console.error('usage: bench.js [--seconds S] [--reps R] URL...');
    return 2;
  }
  console.log(`${'driver'.padEnd(10)} ${'form'.padEnd(8)} ${'pairs/s'.padStart(10)} ` +
    `${'vs C'.padStart(6)}   (median of ${reps} runs of ${seconds} s)`);
  for (const url of urls) {
    const db = await sqllock.open(url, { init: true });
    try {
      const name = `node-bench-${process.pid}`;
      const forms = [
        ['C', null],
        ['try', async () => { const l = await db.tryLock(name, { ttl: 30000, renew: false }); await l.release(); }],
        ['watched', async () => { const l = await db.tryLock(name, { ttl: 30000 }); await l.release(); }],
      ];
      // The forms take turns within each repetition, so that a machine
      // whose load changes meanwhile (a shared one) skews them alike.
      const runs = forms.map(() => []);
      for (const [, fn] of forms) if (fn) await fn();         // warm up
      for (let r = 0; r < reps; r++) {
        for (let f = 0; f < forms.length; f++) {
          const fn = forms[f][1];
          runs[f].push(fn ? await rate(fn, seconds) : await rateC(db, name, seconds));
        }
      }
      const c = median(runs[0]);
      forms.forEach(([form], f) => {
        const m = median(runs[f]);
        console.log(`${db.driver.padEnd(10)} ${form.padEnd(8)} ${m.toFixed(0).padStart(10)} ` +
          `${(m / c).toFixed(2).padStart(6)}   ${runs[f].map((x) => x.toFixed(0)).join(' ')}`);
      });
    } finally {
      await db.close();
    }
  }
  return 0;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; },
  (e) => { console.error(e); process.exitCode = 1; });
