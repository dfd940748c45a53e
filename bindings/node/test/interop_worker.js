'use strict';
// The Node.js process of the interoperability test (tests/interop/run.py;
// the protocol is in tests/interop/worker.c):
//
//   node interop_worker.js ROLE URL NAME N OUT COUNTER PERMITS HOLD_MS
//
// ROLE lock: N leases, each bumping COUNTER (read, pause, write) under the
// lock; sem: N permits of a semaphore of PERMITS; leader: N terms of the
// election NAME. Each hold appends "ROLE TOKEN T0 T1 OK|LOST\n" to OUT in
// one write() of an O_APPEND descriptor. Times: sqllock.nowUs(), the
// library's clock (sqllock_now_us()), as the C and Go workers use.
const fs = require('fs');
const path = require('path');
const sqllock = require(path.join(__dirname, '..', 'lib'));

const WAIT = 120000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function note(out, role, token, t0, t1, lost) {
  const line = `${role} ${token} ${Math.round(t0)} ${Math.round(t1)} ${lost ? 'LOST' : 'OK'}\n`;
  const fd = fs.openSync(out, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT, 0o644);
  try {
    fs.writeSync(fd, line);            // one write: lines stay whole
  } finally {
    fs.closeSync(fd);
  }
}

// Read, pause, write: two holders at once would lose an increment.
async function bump(file, holdMs) {
  let v = 0;
  try {
    v = parseInt(fs.readFileSync(file, 'utf8').trim() || '0', 10);
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  await sleep(holdMs / 2);
  fs.writeFileSync(file, `${v + 1}\n`);
  await sleep(holdMs - Math.floor(holdMs / 2));
}

async function holds(role, url, name, n, out, counter, permits, holdMs) {
  const db = await sqllock.open(url, { maxConnections: 2 });
  try {
    for (let i = 0; i < n; i++) {
      const lease = role === 'lock'
        ? await db.lock(name, { ttl: 10000, wait: WAIT })
        : await db.semaphore(name, permits, { ttl: 10000, wait: WAIT });
      let lost = false;
      lease.on('lost', () => { lost = true; });
      const token = lease.token;
      const t0 = sqllock.nowUs();
      if (role === 'lock') await bump(counter, holdMs);
      else await sleep(holdMs);
      const t1 = sqllock.nowUs();
      lost = lost || lease.lost;
      try {
        await lease.release();
      } catch (e) {
        if (e.code !== 'LOST') throw e;
        lost = true;
      }
      note(out, role, token, t0, t1, lost);
    }
  } finally {
    await db.close();
  }
}

async function leader(url, name, n, out, holdMs) {
  const deadline = Date.now() + WAIT;
  const cand = await sqllock.campaign(url, name, { ttl: 3000 });
  try {
    const terms = cand[Symbol.asyncIterator]();
    for (let done = 0; done < n; done++) {
      const left = deadline - Date.now();
      let timer;
      const next = await Promise.race([
        terms.next(),
        new Promise((r) => { timer = setTimeout(() => r(null), Math.max(0, left)); }),
      ]);
      clearTimeout(timer);
      if (next === null || next.done) {
        throw new Error(`${done} of ${n} terms within ${WAIT} ms`);
      }
      const term = next.value;
      const t0 = sqllock.nowUs();       // after being told it leads
      await sleep(holdMs);
      const t1 = sqllock.nowUs();
      let lost = !cand.isLeader || term.signal.aborted;
      try {
        if (!await cand.resign()) lost = true;
      } catch (e) {
        if (e.code !== 'LOST') throw e;
        lost = true;
      }
      note(out, 'leader', term.token, t0, t1, lost);
    }
  } finally {
    await cand.close();
  }
}

async function main(argv) {
  if (argv.length !== 8) {
    process.stderr.write('usage: interop_worker.js ROLE URL NAME N OUT COUNTER PERMITS HOLD_MS\n');
    return 2;
  }
  const [role, url, name, nText, out, counter, permitsText, holdText] = argv;
  const n = parseInt(nText, 10);
  const permits = parseInt(permitsText, 10);
  const holdMs = parseInt(holdText, 10);
  if (role === 'leader') await leader(url, name, n, out, holdMs);
  else if (role === 'lock' || role === 'sem') await holds(role, url, name, n, out, counter, permits, holdMs);
  else {
    process.stderr.write(`unknown role ${role}\n`);
    return 2;
  }
  return 0;
}

const timer = setTimeout(() => {
  process.stderr.write('interop Node.js worker: still running after 130 s\n');
  process.exit(1);
}, 130000);
timer.unref();

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
}, (e) => {
  process.stderr.write(`interop Node.js worker: ${e && e.stack ? e.stack : e}\n`);
  process.exitCode = 1;
});
