'use strict';
// Fair waiting (contract M3): waiters of db.lock(name, { fair: true })
// are served in the order they queued, and a fair try is BUSY while one
// waits.
const test = require('node:test');
const assert = require('node:assert');
const { openDb, uniq, waitFor, ph, SCALE } = require('./helper');

// The live queue rows of `name` (NAME 0x1f 'q' + 16 hex digits, one per
// fair waiter; core/lease_fair.c), counted by a range of the lease table.
async function queued(db, name) {
  const r = await db.exec(`SELECT COUNT(*) FROM sqllock_lease WHERE name >= ${ph(1)} AND name < ${ph(2)}`,
    [`${name}\x1fq`, `${name}\x1fr`]);
  return Number(r.first);
}

test('M3: fair waiters are served in arrival order; a fair try is BUSY meanwhile', async () => {
  const name = uniq('fair');
  const db = await openDb();
  // Each waiter on a database handle of its own (its own connections), as
  // separate clients would be.
  const others = await Promise.all([0, 1, 2, 3].map(() => openDb({ maxConnections: 2 })));
  try {
    const holder = await db.lock(name, { ttl: 30000 });
    const order = [];
    const waits = [];
    for (let i = 0; i < 4; i++) {
      waits.push((async () => {
        const lease = await others[i].lock(name, { ttl: 30000, wait: 60000 * SCALE, fair: true });
        order.push(i);
        await lease.release();
      })());
      // The next waiter queues only once this one's queue row is there:
      // arrival order is then unambiguous (FIFO holds between enqueues
      // that did not overlap).
      await waitFor(async () => (await queued(db, name)) === i + 1, 20000, `waiter ${i} queued`);
    }
    await assert.rejects(db.lock(name, { ttl: 30000, wait: 0, fair: true }), (e) => e.code === 'BUSY');
    await holder.release();
    await Promise.all(waits);
    assert.deepStrictEqual(order, [0, 1, 2, 3]);
    assert.strictEqual(await queued(db, name), 0);
  } finally {
    await Promise.all(others.map((d) => d.close()));
    await db.close();
  }
});

test('M3: fair is a plain lease\'s option; a fair lock uncontended is granted at once', async () => {
  const name = uniq('fair1');
  const db = await openDb();
  try {
    const l = await db.lock(name, { ttl: 5000, fair: true });
    assert.ok(l.held && l.token > 0);
    await l.release();
    await assert.rejects(db.semaphore(name, 2, { fair: true }), (e) => e.code === 'EINVAL');
    await assert.rejects(db.lockMany([name], { fair: true }), (e) => e.code === 'EUNSUPPORTED');
  } finally {
    await db.close();
  }
});
