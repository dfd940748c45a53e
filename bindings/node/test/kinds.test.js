'use strict';
// The other kinds: semaphores (M1), shared/exclusive (M2), leader
// election (M4), versioned records (O1, O2), row-lock transactions (R1,
// R2), one name one meaning (N1).
const test = require('node:test');
const assert = require('node:assert');
const { openDb, uniq, sleep, waitFor, SCALE, ph, driver } = require('./helper');

let db;
test.before(async () => { db = await openDb(); });
test.after(async () => { await db.close(); });

test('M1: never more than N permits held at once', async () => {
  const name = uniq('sem');
  const N = 2;
  let inside = 0;
  let most = 0;
  const seen = new Set();
  const task = async () => {
    for (let i = 0; i < 2; i++) {
      const permit = await db.semaphore(name, N, { ttl: 10000, wait: 60000 });
      inside++;
      most = Math.max(most, inside);
      assert.ok(permit.index >= 0 && permit.index < N);
      assert.strictEqual(permit.kind, 'permit');
      assert.ok(permit.token > 0);
      seen.add(permit.index);
      const live = await db.semaphoreCount(name);
      assert.ok(live >= 1 && live <= N, `live permits ${live}`);
      await sleep(20);
      inside--;
      await permit.release();
    }
  };
  await Promise.all(Array.from({ length: 6 }, task));
  assert.strictEqual(most, N, `at most ${N} at once, and N were used (${most})`);
  assert.deepStrictEqual([...seen].sort(), [0, 1]);
  // All N held: a try is BUSY.
  const a = await db.semaphore(name, N, { ttl: 10000 });
  const b = await db.semaphore(name, N, { ttl: 10000 });
  await assert.rejects(db.semaphore(name, N, { ttl: 10000, wait: 0 }), (e) => e.code === 'BUSY');
  await a.release();
  await b.release();
  assert.strictEqual(await db.semaphoreCount(name), 0);
});

test('M2: readers share, a writer excludes everyone', async () => {
  const name = uniq('rw');
  let readers = 0;
  let writers = 0;
  let mostReaders = 0;
  let bad = 0;
  const reader = async () => {
    for (let i = 0; i < 3; i++) {
      const h = await db.shared(name, { ttl: 10000, wait: 60000 });
      readers++;
      mostReaders = Math.max(mostReaders, readers);
      if (writers) bad++;
      await sleep(15);
      readers--;
      await h.release();
    }
  };
  const writer = async () => {
    for (let i = 0; i < 3; i++) {
      const h = await db.exclusive(name, { ttl: 10000, wait: 60000 });
      assert.strictEqual(h.kind, 'exclusive');
      writers++;
      if (writers > 1 || readers) bad++;
      await sleep(15);
      writers--;
      await h.release();
    }
  };
  await Promise.all([reader(), reader(), reader(), writer(), writer()]);
  assert.strictEqual(bad, 0, 'a writer overlapped a reader or a writer');
  // Two shared holds at once; then an exclusive try is BUSY.
  const r1 = await db.shared(name, { ttl: 10000 });
  const r2 = await db.shared(name, { ttl: 10000, wait: 0 });
  await assert.rejects(db.exclusive(name, { ttl: 10000, wait: 0 }), (e) => e.code === 'BUSY');
  await r1.release();
  await r2.release();
  // N1: the name is a shared/exclusive lock now; a plain lease is refused.
  await assert.rejects(db.tryLock(name, { ttl: 1000 }), (e) => e.code === 'EKIND');
});

test('M4: one leader at a time; resign hands over; term.signal ends with the term', async () => {
  const name = uniq('elect');
  const other = await openDb();
  const a = await db.campaign(name, { ttl: 2000, holder: 'a' });
  const b = await other.campaign(name, { ttl: 2000, holder: 'b' });
  try {
    const leaders = () => [a, b].filter((c) => c.isLeader);
    const first = await waitFor(() => leaders().length === 1 && leaders()[0].term && leaders()[0], 10000, 'a leader');
    const second = first === a ? b : a;
    const term1 = first.term;
    assert.ok(term1.token > 0);
    assert.ok(!term1.signal.aborted);
    assert.strictEqual(second.isLeader, false);
    const info = await db.leader(name);
    assert.strictEqual(info.holder, first === a ? 'a' : 'b');
    assert.strictEqual(info.token, term1.token);
    // Watch: never two leaders at once, until the hand-over.
    let overlap = false;
    const watch = setInterval(() => { if (leaders().length > 1) overlap = true; }, 5);
    const elected = new Promise((resolve) => second.once('elected', resolve));
    const deposed = new Promise((resolve) => first.once('deposed', (term, err) => resolve({ term, err })));
    const t0 = Date.now();
    assert.strictEqual(await first.resign(), true);
    const term2 = await elected;
    const took = Date.now() - t0;
    clearInterval(watch);
    console.log(`# hand-over took ${took} ms`);
    assert.ok(!overlap, 'two leaders at once');
    assert.ok(term1.signal.aborted, 'the old term\'s signal aborted');
    const d = await deposed;
    assert.strictEqual(d.err, null, 'a hand-over is no error');
    assert.ok(term2.token > term1.token, 'terms rise');
    assert.ok(took < 3000 * SCALE, `hand-over took ${took} ms`);
    assert.strictEqual(await first.resign(), false, 'not the leader any more');
  } finally {
    await a.close();
    await b.close();
    await other.close();
  }
});

test('M4: a leadership taken away is reported: deposed with LOST, term.signal aborted', async () => {
  const name = uniq('depose');
  const c = await db.campaign(name, { ttl: 1500, resignHold: 60000 });
  try {
    const term = await waitFor(() => c.isLeader && c.term, 10000, 'the leadership');
    const deposed = new Promise((resolve) => c.once('deposed', (t, err) => resolve({ t, err })));
    // The leadership row removed behind the leader's back (an operator's
    // forced release): its next renewal finds it gone.
    await db.exec(`DELETE FROM sqllock_lease WHERE name = ${ph(1)}`, [`${name}\x1fleader`]);
    const d = await Promise.race([deposed, sleep(5000 * SCALE).then(() => null)]);
    assert.ok(d, 'no deposed event within 5 s');
    assert.strictEqual(d.t, term);
    assert.ok(d.err && (d.err.code === 'LOST' || d.err.code === 'TIMEOUT'), `err ${d.err}`);
    assert.ok(term.signal.aborted);
    assert.strictEqual(term.signal.reason, d.err);
  } finally {
    await c.close();
  }
});

test('renew(ttl) makes the new ttl the lease\'s', async () => {
  const lease = await db.lock(uniq('renew'), { ttl: 2000 });
  try {
    assert.ok(lease.remaining <= 2000);
    await lease.renew(20000);
    assert.ok(lease.remaining > 10000, `remaining ${lease.remaining}`);
    await lease.renew();
    assert.ok(lease.remaining > 10000);
  } finally {
    await lease.release();
  }
  await assert.rejects(lease.renew(), (e) => e.code === 'ENOTHELD');
});

test('M4: the async iterator yields terms; close ends it', async () => {
  const name = uniq('iter');
  const c = await db.campaign(name, { ttl: 2000 });
  const terms = [];
  for await (const term of c) {
    terms.push(term);
    assert.ok(c.isLeader);
    await c.close();
  }
  assert.strictEqual(terms.length, 1);
  assert.strictEqual(c.isLeader, false);
});

test('O1, O2: records; update retries conflicts (8 tasks, exact count)', async () => {
  const key = uniq('rec');
  assert.strictEqual(await db.get(key), null);
  await db.create(key, 'a');
  await assert.rejects(db.create(key, 'b'), (e) => e.code === 'CONFLICT');
  const r = await db.get(key);
  assert.strictEqual(r.value.toString(), 'a');
  assert.strictEqual(r.version, 1);
  assert.strictEqual(await db.cas(key, 1, 'b'), 2);
  await assert.rejects(db.cas(key, 1, 'c'), (e) => e.code === 'CONFLICT');
  await db.delete(key, 2);
  assert.strictEqual(await db.get(key), null);

  const counter = uniq('count');
  const other = await openDb();
  let attempts = 0;
  try {
    await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? db : other).update(counter, async (old) => {
      await sleep(2);
      return String(Number(old ? old.toString() : '0') + 1);
    }, { maxAttempts: 100 }).then((u) => { attempts += u.attempts; })));
  } finally {
    await other.close();
  }
  assert.strictEqual((await db.get(counter)).value.toString(), '8');
  assert.ok(attempts >= 8);
});

test('O1, R1: records inside a transaction commit or roll back with it', async () => {
  const key = uniq('txrec');
  await db.create(key, '1');
  // Rolled back: the record is as it was.
  await assert.rejects(db.transaction(async (tx) => {
    await tx.lock(key);
    const u = await tx.update(key, (old) => String(Number(old.toString()) + 1));
    assert.strictEqual(u.version, 2);
    assert.strictEqual((await tx.get(key)).value.toString(), '2');
    throw new Error('roll back');
  }), /roll back/);
  assert.deepStrictEqual(await db.get(key), { value: Buffer.from('1'), version: 1 });
  // Committed: the write and a created record are there.
  const made = uniq('txnew');
  await db.transaction(async (tx) => {
    await tx.lock([key, made]);
    assert.strictEqual(await tx.cas(key, 1, '5'), 2);
    await assert.rejects(tx.cas(key, 1, '6'), (e) => e.code === 'CONFLICT');
    assert.strictEqual(await tx.get(made), null);
    await tx.create(made, 'x');
  }, { lockTimeout: 30000 });
  assert.deepStrictEqual(await db.get(key), { value: Buffer.from('5'), version: 2 });
  assert.strictEqual((await db.get(made)).value.toString(), 'x');
  await db.transaction(async (tx) => { await tx.delete(made, 1); }, { lockTimeout: 30000 });
  assert.strictEqual(await db.get(made), null);
});

test('R1, R2: row-lock transactions: locks held to commit, NOWAIT, rollback', async () => {
  const a = uniq('row');
  const b = uniq('row');
  const other = await openDb();
  try {
    await db.transaction(async (tx) => {
      assert.deepStrictEqual(await tx.lock([b, a]), [true, true]);
      // Another transaction cannot lock them meanwhile (NOWAIT fails).
      await assert.rejects(other.transaction(async (tx2) => { await tx2.lock(a, { mode: 'nowait' }); }),
        (e) => e.code === 'ELOCKED' || e.code === 'EDBBUSY');
    }, { lockTimeout: 2000 });
    // Committed: free again. (On SQLite a transaction locks the whole
    // file, and the suite's other files write to it at the same time: there
    // NOWAIT may rightly find one of them, so the check waits, bounded.)
    const free = driver() === 'sqlite' ? {} : { mode: 'nowait' };
    await other.transaction(async (tx2) => { await tx2.lock(a, free); }, { lockTimeout: 30000 });
    // A throw rolls back and rethrows.
    await assert.rejects(db.transaction(async (tx) => { await tx.lock(a); throw new Error('no'); }), /no/);
    const tx = await db.begin();
    await tx.lock([a]);
    await tx.rollback();
    await assert.rejects(tx.commit(), (e) => e.code === 'EMISUSE');
  } finally {
    await other.close();
  }
});
