'use strict';
// Several names at once (contract L12): db.lockMany() takes all or none,
// each name with its own lease and token, and two of them with the names
// in opposite orders never deadlock.
const test = require('node:test');
const assert = require('node:assert');
const { openDb, uniq, sleep, waitFor, SCALE } = require('./helper');

let db;
test.before(async () => { db = await openDb(); });
test.after(async () => { await db.close(); });

test('L12: all or none; own tokens; release; asyncDispose', async () => {
  const a = uniq('many-a');
  const b = uniq('many-b');
  const set = await db.lockMany([b, a], { ttl: 10000 });
  assert.deepStrictEqual(set.names, [b, a]);
  assert.ok(set.held && !set.lost);
  const t = set.tokens;
  assert.ok(t[a] > 0 && t[b] > 0 && t[a] !== t[b], JSON.stringify(t));
  for (const l of set) assert.strictEqual((await db.lookup(l.name)).owner, l.owner);
  await set.release();
  assert.ok(!set.held);
  assert.strictEqual(await db.lookup(a), null);
  assert.strictEqual(await db.lookup(b), null);
  await assert.rejects(set.release(), (e) => e.code === 'ENOTHELD');

  // None: b held elsewhere, so a must not be taken either.
  const other = await openDb({ maxConnections: 2 });
  try {
    const hb = await other.lock(b, { ttl: 10000 });
    await assert.rejects(db.lockMany([a, b], { ttl: 10000, wait: 0 }), (e) => e.code === 'BUSY');
    await assert.rejects(db.lockMany([a, b], { ttl: 10000, wait: 300 }), (e) => e.code === 'TIMEOUT');
    assert.strictEqual(await db.lookup(a), null, 'nothing taken when one name is held');
    // A waiting lockMany gets both once b is released.
    const p = db.lockMany([a, b], { ttl: 10000, wait: 30000 * SCALE });
    await sleep(100);
    await hb.release();
    const s2 = await p;
    assert.ok(s2.held);
    await s2[Symbol.asyncDispose]();
    assert.ok(!s2.held);
    assert.strictEqual(await db.lookup(b), null);
  } finally {
    await other.close();
  }
});

test('L12: an aborted lockMany leaves nothing held', async () => {
  const a = uniq('many-ab');
  const b = uniq('many-bb');
  const other = await openDb({ maxConnections: 2 });
  try {
    const hb = await other.lock(b, { ttl: 10000 });
    const ac = new AbortController();
    const p = db.lockMany([a, b], { ttl: 10000, signal: ac.signal });
    await sleep(100);
    ac.abort(new Error('stop'));
    await assert.rejects(p, (e) => e.name === 'AbortError');
    assert.strictEqual(await db.lookup(a), null);
    await hb.release();
  } finally {
    await other.close();
  }
});

test('L12: 2 x 20 crossing lockMany never deadlock; exact counter under both', async () => {
  const a = uniq('cross-a');
  const b = uniq('cross-b');
  const d2 = await openDb();
  let counter = 0;
  let inside = 0;
  let overlap = 0;
  const run = async (handle, names) => {
    for (let i = 0; i < 20; i++) {
      const set = await handle.lockMany(names, { ttl: 10000, wait: 60000 * SCALE });
      if (++inside > 1) overlap++;
      const v = counter;
      await sleep(1);
      counter = v + 1;
      inside--;
      await set.release();
    }
  };
  try {
    await Promise.all([run(db, [a, b]), run(d2, [b, a]), run(db, [b, a]), run(d2, [a, b])]);
  } finally {
    await d2.close();
  }
  assert.strictEqual(overlap, 0);
  assert.strictEqual(counter, 80);
});

test('L12: bad input is refused clearly', async () => {
  await assert.rejects(db.lockMany('a'), TypeError);
  await assert.rejects(db.lockMany([]), (e) => e.code === 'EINVAL');
  await assert.rejects(db.lockMany(['x', 7]), TypeError);
  await assert.rejects(db.lockMany(['', 'b']), (e) => e.code === 'EINVAL');
  const n = uniq('dup');
  await assert.rejects(db.lockMany([n, n]), (e) => e.code === 'EINVAL');
  await assert.rejects(db.lockMany(Array.from({ length: 65 }, (_, i) => `${n}-${i}`)), (e) => e.code === 'EINVAL');
  await assert.rejects(db.lockMany([n], { ttl: 0 }), (e) => e.code === 'EINVAL');
});

test('L12, L4: a lease of a set taken over is reported LOST alone; the set releases the rest', async () => {
  const a = uniq('many-la');
  const b = uniq('many-lb');
  const set = await db.lockMany([a, b], { ttl: 300, renew: false });
  const lostOnes = [];
  set.on('lost', (err, lease) => lostOnes.push([err.code, lease.name]));
  const other = await openDb({ maxConnections: 2 });
  try {
    // a expires unrenewed and is taken over (L2); b too expires, but
    // nobody takes it, so its row is still this owner's.
    const [la, lb] = set.leases;
    const taken = await waitFor(() => other.tryLock(a, { ttl: 10000 }).catch((e) => {
      if (e.code === 'BUSY') return null;
      throw e;
    }), 20000, 'the takeover of a');
    await assert.rejects(set.release(), (e) => e.code === 'LOST' && e.message.includes(a));
    assert.ok(la.lost && !la.held, 'a: lost');
    assert.ok(!lb.lost && !lb.held, 'b: released, not lost');
    assert.deepStrictEqual(lostOnes, [['LOST', a]]);
    await taken.release();
  } finally {
    await other.close();
  }
});
