'use strict';
// The lease table from outside: db.list(), db.forceRelease() (C5, L4,
// L5), db.reap() (P1, P2, P4) and the reaper thread (P1-P3), their bad
// input, and a reaper's effect on the process's life.
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('child_process');
const path = require('path');
const { sqllock, url, openDb, uniq, waitFor, SCALE } = require('./helper');

let db;
test.before(async () => { db = await openDb(); });
test.after(async () => { await db.close(); });

const mine = async (prefix) => (await db.list()).filter((r) => r.name.startsWith(prefix));

// Waits until the server's clock has passed the row's expiry (P1 judges
// expiry by the server's clock, never ours).
async function expired(name) {
  await waitFor(async () => {
    const r = await db.lookup(name);
    return r === null || r.remaining < 0;
  }, 10000, `'${name}' to expire by the server's clock`);
}

test('list: held leases with token, holder, remaining > 0, in name order; gone after release', async () => {
  const base = uniq('list');
  const leases = [];
  for (const t of ['c', 'a', 'b']) {
    leases.push(await db.lock(`${base}-${t}`, { ttl: 30000, holder: `h-${t}` }));
  }
  const rows = await mine(base);
  assert.deepStrictEqual(rows.map((r) => r.name), [`${base}-a`, `${base}-b`, `${base}-c`]);
  for (const r of rows) {
    const l = leases.find((x) => x.name === r.name);
    assert.ok(r instanceof sqllock.LeaseInfo);
    assert.strictEqual(r.owner, l.owner);
    assert.strictEqual(r.holder, `h-${r.name.slice(-1)}`);
    assert.strictEqual(r.token, l.token);
    assert.strictEqual(r.tokenBigInt, l.tokenBigInt);
    assert.ok(r.remaining > 0 && r.remaining <= 30000, `remaining ${r.remaining}`);
    assert.ok(r.acquiredAt instanceof Date && r.expiresAt instanceof Date);
    assert.ok(r.expiresAt - r.acquiredAt >= 29000, `${r.acquiredAt} .. ${r.expiresAt}`);
    assert.strictEqual(JSON.parse(JSON.stringify(r)).token, l.token);
  }
  for (const l of leases) await l.release();
  assert.deepStrictEqual(await mine(base), []);
});

test('list: N1 a primitive keeps the library row names (BASE \\x1f tag) and its kind marker', async () => {
  const name = uniq('listsem');
  const permit = await db.semaphore(name, 2, { ttl: 30000 });
  const rows = await mine(name);
  const permitRow = rows.find((r) => r.name === `${name}\x1fp${permit.index}`);
  assert.ok(permitRow, `rows ${rows.map((r) => JSON.stringify(r.name))}`);
  assert.strictEqual(permitRow.token, permit.token);
  const marker = rows.find((r) => r.name === name);
  assert.ok(marker && marker.owner === 'sqllock-kind:sem', 'the kind marker row');
  await permit.release();
});

test('C5/L4/L5: forceRelease is BUSY for a live lease without live, frees it with live; the holder hears lost; the next token is larger', async () => {
  const name = uniq('force');
  const lease = await db.lock(name, { ttl: 3000 });          // renewed every 1 s
  const lost = new Promise((resolve) => lease.once('lost', resolve));
  await assert.rejects(db.forceRelease(name), (e) => {
    assert.strictEqual(e.code, 'BUSY');
    assert.ok(e instanceof sqllock.SqllockError);
    assert.strictEqual(e.row.token, lease.token);             // who holds it
    assert.strictEqual(e.row.owner, lease.owner);
    return true;
  });
  await assert.rejects(db.forceRelease(name, { live: true, token: lease.token + 1000 }),
    { code: 'CONFLICT' });
  assert.ok((await db.lookup(name)) !== null, 'refused calls changed nothing');
  const freed = await db.forceRelease(name, { live: true, token: lease.tokenBigInt, who: 'node-test' });
  assert.deepStrictEqual([freed.name, freed.owner, freed.token], [name, lease.owner, lease.token]);
  assert.ok(freed.remaining > 0);
  assert.strictEqual(await db.lookup(name), null);
  // L4: its holder is told at its next renewal (about ttl/3), not silently kept.
  let timer;
  const err = await Promise.race([lost, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('no lost event')), 15000 * SCALE);
  })]);
  clearTimeout(timer);
  assert.strictEqual(err.code, 'LOST');
  assert.ok(lease.lost);
  await lease.release().catch(() => {});                     // over, whatever it says
  // L5: a later grant's token is larger than the forcibly freed one.
  const next = await db.tryLock(name, { ttl: 5000 });
  assert.ok(next.token > lease.token, `${next.token} > ${lease.token}`);
  await next.release();
});

test('C5: NOTFOUND without a row, EKIND for a kind marker, a permit row by its list name', async () => {
  const name = uniq('force2');
  await assert.rejects(db.forceRelease(name), { code: 'NOTFOUND' });
  const permit = await db.semaphore(name, 1, { ttl: 30000, renew: false });
  await assert.rejects(db.forceRelease(name, { live: true }), { code: 'EKIND' });
  const freed = await db.forceRelease(`${name} [p0]`, { live: true });
  assert.strictEqual(freed.name, `${name}\x1fp0`);
  assert.strictEqual(freed.token, permit.token);
  await assert.rejects(permit.release(), { code: 'LOST' });   // L4
});

test('P1/P4: reap deletes expired leases (past the grace) and leaves a live one; the reaped holder releases LOST (L4)', async () => {
  const base = uniq('reap');
  const gone = [];
  for (let i = 0; i < 3; i++) gone.push(await db.lock(`${base}-x${i}`, { ttl: 200, renew: false }));
  const live = await db.lock(`${base}-live`, { ttl: 30000 });
  for (const l of gone) await expired(l.name);
  await db.reap({ grace: '1h', batch: 1 });                  // none of mine is that old
  assert.strictEqual((await mine(base)).length, 4);
  const n = await db.reap();
  assert.ok(n >= 3, `reaped ${n}`);
  assert.deepStrictEqual((await mine(base)).map((r) => r.name), [`${base}-live`]);
  assert.ok(live.held);
  for (const l of gone) await assert.rejects(l.release(), { code: 'LOST' });
  await live.release();
});

test('P2: three handles reaping at once, batch 2: every expired row goes, no error, the live one stays', async () => {
  const base = uniq('reap3');
  const others = [await openDb(), await openDb()];
  try {
    for (let i = 0; i < 9; i++) await db.lock(`${base}-x${i}`, { ttl: 150, renew: false });
    const live = await db.lock(`${base}-live`, { ttl: 30000 });
    for (let i = 0; i < 9; i++) await expired(`${base}-x${i}`);
    const counts = await Promise.all([db, ...others].map((d) => d.reap({ batch: 2 })));
    assert.ok(counts.every((c) => Number.isInteger(c) && c >= 0), `counts ${counts}`);
    assert.deepStrictEqual((await mine(base)).map((r) => r.name), [`${base}-live`]);
    await live.release();
  } finally {
    for (const d of others) await d.close();
  }
});

test('P1-P3: startReaper reaps an expired row within a deadline, leaves a live one, stops promptly (twice is fine)', async () => {
  const base = uniq('reaper');
  const dead = await db.lock(`${base}-x`, { ttl: 200, renew: false });
  const live = await db.lock(`${base}-live`, { ttl: 30000 });
  await expired(dead.name);
  const reaper = await sqllock.startReaper(url(), { every: '100ms', batch: 10 });
  assert.ok(reaper instanceof sqllock.Reaper && reaper.running);
  try {
    await waitFor(async () => reaper.stats().reaped >= 1 && (await db.lookup(dead.name)) === null,
      10000, 'the reaper to delete the expired row');
    const st = reaper.stats();
    assert.ok(st.passes >= 1, JSON.stringify(st));
    assert.strictEqual(typeof st.lastError, 'string');
    assert.strictEqual(typeof st.lastStatus, 'number');
    assert.ok((await db.lookup(live.name)) !== null && live.held, 'P1: the live lease stays');
  } finally {
    const t0 = Date.now();
    await reaper.stop();
    assert.ok(Date.now() - t0 < 5000 * SCALE, `P3: stop took ${Date.now() - t0} ms`);
  }
  await reaper.stop();                                        // idempotent
  assert.strictEqual(reaper.running, false);
  assert.throws(() => reaper.stats(), { code: 'EMISUSE' });
  await live.release();
});

test('startReaper: a bad URL or an unreachable server rejects with a SqllockError', async () => {
  await assert.rejects(sqllock.startReaper('nosuch://x/y'),
    (e) => e instanceof sqllock.SqllockError && e.code === 'ESCHEME');
  await assert.rejects(sqllock.startReaper('postgres://127.0.0.1:1/x', { connectTimeout: 2000 }),
    (e) => e instanceof sqllock.SqllockError && e.code !== 'OK');
  await assert.rejects(sqllock.startReaper(null), TypeError);
});

test('E2: bad input gets a clear error, never a crash', async () => {
  await assert.rejects(db.reap({ batch: -1 }), { code: 'EINVAL', message: /batch/ });
  await assert.rejects(db.reap({ batch: 0 }), { code: 'EINVAL' });
  await assert.rejects(db.reap({ batch: 2 ** 40 }), { code: 'EINVAL', message: /batch/ });
  await assert.rejects(db.reap({ batch: 1.5 }), TypeError);
  await assert.rejects(db.reap({ grace: -1 }), { code: 'EINVAL', message: /grace/ });
  await assert.rejects(db.reap({ grace: 'soon' }), { code: 'EINVAL', message: /grace/ });
  await assert.rejects(db.reap({ grace: Infinity }), { code: 'EINVAL' });
  await assert.rejects(db.forceRelease(''), { code: 'EINVAL' });
  await assert.rejects(db.forceRelease(null), TypeError);
  await assert.rejects(db.forceRelease('x'.repeat(100000)), { code: 'EINVAL' });
  await assert.rejects(db.forceRelease('a', { token: -1 }), { code: 'EINVAL', message: /token/ });
  await assert.rejects(db.forceRelease('a', { token: 1.5 }), { code: 'EINVAL', message: /token/ });
  await assert.rejects(db.forceRelease('a', { who: 5 }), TypeError);
  await assert.rejects(db.forceRelease('a', null), TypeError);
  await assert.rejects(sqllock.startReaper(url(), { batch: -1 }), { code: 'EINVAL', message: /batch/ });
  await assert.rejects(sqllock.startReaper(url(), { grace: -1 }), { code: 'EINVAL', message: /grace/ });
  await assert.rejects(sqllock.startReaper(url(), { every: 0 }), { code: 'EINVAL', message: /every/ });
  await assert.rejects(sqllock.startReaper(url(), { every: 'never' }), { code: 'EINVAL' });
  const closed = await openDb();
  await closed.close();
  await assert.rejects(closed.list(), { code: 'EMISUSE' });
  await assert.rejects(closed.reap(), { code: 'EMISUSE' });
  await assert.rejects(closed.forceRelease('a'), { code: 'EMISUSE' });
});

// A child node process running `body` (with sqllock and the URL in
// scope): its exit code and signal, and what it printed. Fails when it
// does not end by itself within the deadline.
function child(body) {
  const code = `const sqllock = require(${JSON.stringify(path.join(__dirname, '..', 'lib'))});
    const url = process.argv[1];
    (async () => { ${body} })().catch((e) => { console.error(e); process.exit(9); });`;
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', code, url()], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`the child did not end: ${out}`)); },
      30000 * SCALE);
    p.on('exit', (status, signal) => { clearTimeout(timer); resolve({ status, signal, out }); });
  });
}

test('P3/E4: a reaper never keeps the process alive; one left running ends cleanly at exit (also process.exit, a worker)', async () => {
  const results = await Promise.all([
    // stopped: the process ends once the loop is empty
    child(`const r = await sqllock.startReaper(url, { every: '50ms' });
      await r.stop(); await r.stop(); console.log('stopped');`),
    // never stopped: not kept alive, the cleanup hook stops it
    child(`const r = await sqllock.startReaper(url, { every: '50ms' });
      r.stats(); console.log('left running');`),
    // process.exit() with it running
    child(`await sqllock.startReaper(url, { every: '50ms' });
      console.log('exit'); process.exit(3);`),
    // a worker's environment goes away with it running
    child(`const { Worker } = require('worker_threads');
      const w = new Worker(\`const sqllock = require(\${JSON.stringify(require.resolve(${JSON.stringify(path.join(__dirname, '..', 'lib'))}))});
        sqllock.startReaper(\${JSON.stringify(url)}, { every: '50ms' }).then(() => process.exit(0));\`, { eval: true });
      const code = await new Promise((r) => w.on('exit', r));
      console.log('worker', code);`),
  ]);
  const want = [[0, 'stopped'], [0, 'left running'], [3, 'exit'], [0, 'worker 0']];
  results.forEach((r, i) => {
    assert.strictEqual(r.signal, null, `child ${i} died of ${r.signal}: ${r.out}`);
    assert.deepStrictEqual([r.status, r.out.trim()], want[i], `child ${i}`);
  });
});
