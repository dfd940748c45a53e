'use strict';
// Stopping a fair wait (contract M3) that has no deadline. A fair wait is
// ONE wait of the C library (slices would lose the waiter's place), so an
// abort, a close() or an exit ends it with sqllock_lease_cancel(): within
// a pause of the library's backoff (L9), its queue row deleted, nothing
// held; the cancel comes from the loop's thread while the wait runs on
// the connection's own thread (E3's one exception), and the handle waits
// fair again afterwards (a late request was withdrawn).
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { Worker } = require('worker_threads');
const { url, openDb, uniq, waitFor, SCALE } = require('./helper');

// An aborted fair wait ends within this (the library's backoff pauses at
// most 0.5 s; generous for a loaded machine).
const BOUND_MS = 10000 * SCALE;

// The queue rows of `name` (NAME 0x1f 'q' + a tag; core/lease_fair.c),
// read with db.list() (sqllock_list()).
async function queueRows(db, name) {
  return (await db.list()).filter((r) => r.name.startsWith(`${name}\x1fq`));
}

const queuedOnce = (db, name, n = 1) =>
  waitFor(async () => (await queueRows(db, name)).length === n, 20000, `${n} queue row(s) of '${name}'`);

test.before(async () => { await (await openDb()).close(); });

test('M3 L9 E3: an aborted fair wait with no deadline ends at once, out of the queue, nothing held; the handle then waits fair again', async () => {
  const name = uniq('fcancel');
  const db = await openDb();
  const waiter = await openDb({ maxConnections: 2 });
  try {
    const holder = await db.lock(name, { ttl: 30000 });
    const ac = new AbortController();
    const reason = new Error('shutting down');
    const wait = waiter.lock(name, { ttl: 30000, fair: true, signal: ac.signal });  // no `wait`: for ever
    await queuedOnce(db, name);
    const t0 = Date.now();
    ac.abort(reason);
    await assert.rejects(wait, (e) => e.name === 'AbortError' && e.cause === reason);
    const ms = Date.now() - t0;
    console.log(`# M3 fair wait aborted in ${ms} ms (${waiter.driver})`);
    assert.ok(ms < BOUND_MS, `the aborted fair wait took ${ms} ms`);
    // Out of the queue, and the lock still the holder's alone.
    assert.deepStrictEqual(await queueRows(db, name), []);
    assert.strictEqual((await db.lookup(name)).owner, holder.owner);
    assert.ok(holder.held);

    // The same handle (same pool, same connection) queues again and is
    // served: nothing left of the cancel ends this wait.
    const again = waiter.lock(name, { ttl: 30000, fair: true });
    await queuedOnce(db, name);
    await holder.release();
    const l = await again;
    assert.ok(l.held && l.token > holder.token);
    assert.strictEqual((await db.lookup(name)).owner, l.owner);
    await l.release();
    assert.deepStrictEqual(await queueRows(db, name), []);
  } finally {
    await waiter.close();
    await db.close();
  }
});

test('M3 L9: a fair wait aborted as it is granted never leaves the lock held', async () => {
  // The release and the abort race: whichever wins, an aborted wait holds
  // nothing (a grant that came first is released before the AbortError),
  // and a wait that resolved holds the lock.
  const db = await openDb();
  const waiter = await openDb({ maxConnections: 2 });
  try {
    let aborted = 0;
    let granted = 0;
    const DELAYS = [-1, -1, -1, 0, 0, 1, 2, 3, 5, 8];
    for (let i = 0; i < DELAYS.length; i++) {
      const name = uniq('frace');
      const holder = await db.lock(name, { ttl: 30000 });
      const ac = new AbortController();
      const wait = waiter.lock(name, { ttl: 30000, fair: true, signal: ac.signal });
      // Its rejection may come while the release below is awaited: a
      // handler now, so that it is not an unhandled rejection then (the
      // outcome is judged below, from `await wait`).
      wait.catch(() => {});
      await queuedOnce(db, name);
      // The abort as the release is sent, or a little after it returned
      // (later each round), so that some rounds abort while the waiter's
      // grant is under way.
      const rel = holder.release();
      if (DELAYS[i] >= 0) {
        await rel;
        await new Promise((r) => setTimeout(r, DELAYS[i]));
      }
      ac.abort();
      await rel;
      let lease = null;
      try {
        lease = await wait;
      } catch (e) {
        assert.strictEqual(e.name, 'AbortError', e.stack);
      }
      if (lease) {
        granted++;
        assert.ok(lease.held);
        assert.strictEqual((await db.lookup(name)).owner, lease.owner);
        await lease.release();
      } else {
        aborted++;
        assert.strictEqual(await db.lookup(name), null, 'an aborted fair wait left the lock held');
      }
      assert.deepStrictEqual(await queueRows(db, name), []);
      // The name is free to anyone now.
      await (await db.lock(name, { ttl: 5000, wait: 0 })).release();
    }
    console.log(`# M3 race: ${aborted} aborted, ${granted} granted first`);
  } finally {
    await waiter.close();
    await db.close();
  }
});

test('M3 L9: close() ends a fair wait with no deadline at once (EMISUSE), out of the queue', async () => {
  const name = uniq('fclose');
  const db = await openDb();
  const waiter = await openDb({ maxConnections: 2 });
  try {
    const holder = await db.lock(name, { ttl: 30000 });
    const wait = waiter.lock(name, { ttl: 30000, fair: true });
    await queuedOnce(db, name);
    const t0 = Date.now();
    const rejected = assert.rejects(wait, (e) => e.code === 'EMISUSE');
    await waiter.close();
    await rejected;
    const ms = Date.now() - t0;
    console.log(`# M3 fair wait ended by close() in ${ms} ms`);
    assert.ok(ms < BOUND_MS, `close() during a fair wait took ${ms} ms`);
    assert.deepStrictEqual(await queueRows(db, name), []);
    assert.strictEqual((await db.lookup(name)).owner, holder.owner);
    await holder.release();
  } finally {
    await waiter.close();
    await db.close();
  }
});

test('M3 L9 E3: a worker ends at once in the middle of a fair wait with no deadline, out of the queue', async () => {
  // worker.terminate() tears the worker's environment down: the addon
  // tells each connection's thread to stop and joins it, so a fair wait
  // that could not be cancelled would hang terminate() for ever.
  const name = uniq('fexit');
  const db = await openDb();
  const holder = await db.lock(name, { ttl: 30000 });
  const w = new Worker(`
    const sqllock = require(${JSON.stringify(path.join(__dirname, '..', 'lib'))});
    (async () => {
      const db = await sqllock.open(${JSON.stringify(url())});
      await db.lock(${JSON.stringify(name)}, { ttl: 30000, fair: true });
      require('worker_threads').parentPort.postMessage('granted');   // must not happen
    })();`, { eval: true });
  let failed = null;
  w.on('message', (m) => { failed = m; });
  w.on('error', (e) => { failed = e; });
  try {
    await queuedOnce(db, name);
    const t0 = Date.now();
    await w.terminate();
    const ms = Date.now() - t0;
    console.log(`# M3 worker terminated during a fair wait in ${ms} ms`);
    assert.ok(ms < BOUND_MS, `terminate() took ${ms} ms`);
    assert.strictEqual(failed, null);
    assert.deepStrictEqual(await queueRows(db, name), []);
    assert.strictEqual((await db.lookup(name)).owner, holder.owner);
  } finally {
    await w.terminate();
    await holder.release();
    await db.close();
  }
});
