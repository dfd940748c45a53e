'use strict';
// Leases: exclusion (L1) across async tasks and across processes, tokens
// (L5), lost (L4, L7), cancellation by AbortSignal, the disposers.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const { sqllock, url, openDb, uniq, sleep, waitFor, SCALE, ph } = require('./helper');

let db;
test.before(async () => { db = await openDb(); });
test.after(async () => { await db.close(); });

test('L1: 16 concurrent async tasks, one holder at a time (exact counter)', async () => {
  const name = uniq('l1');
  let counter = 0;
  let inside = 0;
  let most = 0;
  const tokens = [];
  const task = async () => {
    for (let i = 0; i < 3; i++) {
      const lease = await db.lock(name, { ttl: 10000, wait: 60000 });
      inside++;
      most = Math.max(most, inside);
      const v = counter;             // read, pause, write: a second
      await sleep(2);                // holder would lose an increment
      counter = v + 1;
      tokens.push(lease.token);
      inside--;
      await lease.release();
    }
  };
  await Promise.all(Array.from({ length: 16 }, task));
  assert.strictEqual(counter, 48);
  assert.strictEqual(most, 1);
  // L5: the tokens rise in the order of the grants.
  for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i] > tokens[i - 1], `tokens ${tokens}`);
});

test('L1: 4 processes, one holder at a time (exact counter, no overlap)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqllock-node-l1-'));
  try {
    const out = path.join(dir, 'out');
    const counter = path.join(dir, 'counter');
    const name = uniq('l1p');
    const worker = path.join(__dirname, 'interop_worker.js');
    const n = 5;
    const codes = await Promise.all(Array.from({ length: 4 }, () => new Promise((resolve) => {
      const p = spawn(process.execPath, [worker, 'lock', url(), name, String(n), out, counter, '0', '20'],
        { stdio: ['ignore', 'inherit', 'inherit'] });
      p.on('exit', (code) => resolve(code));
    })));
    assert.deepStrictEqual(codes, [0, 0, 0, 0]);
    assert.strictEqual(parseInt(fs.readFileSync(counter, 'utf8'), 10), 4 * n);
    const lines = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => l.split(' '));
    assert.strictEqual(lines.length, 4 * n);
    const holds = lines.map(([, token, t0, t1, st]) => ({ token: +token, t0: +t0, t1: +t1, st }))
      .sort((a, b) => a.t0 - b.t0);
    for (let i = 1; i < holds.length; i++) {
      assert.ok(holds[i].t0 >= holds[i - 1].t1, `holds overlap: ${JSON.stringify(holds.slice(i - 1, i + 1))}`);
      assert.ok(holds[i].token > holds[i - 1].token, 'tokens rise in the order of the grants (L5)');
    }
    assert.ok(holds.every((h) => h.st === 'OK'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('tryLock: BUSY while held; lease fields; state and remaining (L6)', async () => {
  const name = uniq('try');
  const lease = await db.lock(name, { ttl: '10s' });
  try {
    assert.strictEqual(lease.name, name);
    assert.strictEqual(lease.kind, 'lease');
    assert.match(lease.owner, /^[0-9a-f]{32}$/);
    assert.ok(Number.isSafeInteger(lease.token) && lease.token > 0);
    assert.strictEqual(typeof lease.tokenBigInt, 'bigint');
    assert.strictEqual(lease.state, 'held');
    assert.ok(lease.held && !lease.lost);
    assert.ok(lease.remaining > 5000 && lease.remaining <= 10000, `remaining ${lease.remaining}`);
    await assert.rejects(db.tryLock(name, { ttl: 1000 }), (e) => e.code === 'BUSY');
    await assert.rejects(db.lock(name, { ttl: 1000, wait: 300 }), (e) => e.code === 'TIMEOUT');
    const info = await db.lookup(name);
    assert.strictEqual(info.owner, lease.owner);
    assert.strictEqual(info.token, lease.token);
  } finally {
    await lease.release();
  }
  assert.strictEqual(lease.state, 'not-held');
  assert.strictEqual(lease.remaining, 0);
  assert.ok(lease.signal.aborted);
  assert.strictEqual(await db.lookup(name), null);
  const again = await db.tryLock(name, { ttl: 1000 });
  await again.release();
});

test('AbortSignal cancels a blocked wait within about a second; nothing stays held', async () => {
  const name = uniq('abort');
  const holder = await db.lock(name, { ttl: 10000 });
  const other = await openDb();
  try {
    const ac = new AbortController();
    const t0 = Date.now();
    const waiting = other.lock(name, { ttl: 10000, signal: ac.signal });
    await sleep(300);
    const aborted = Date.now();
    ac.abort(new Error('shutting down'));
    await assert.rejects(waiting, (e) => {
      assert.strictEqual(e.name, 'AbortError');
      assert.strictEqual(e.cause.message, 'shutting down');
      return true;
    });
    const took = Date.now() - aborted;
    console.log(`# abort noticed after ${took} ms (wait began ${aborted - t0} ms before)`);
    assert.ok(took < 1000 * SCALE, `abort took ${took} ms`);
    await holder.release();
    // The aborted waiter holds nothing: a third handle gets it at once.
    const third = await db.tryLock(name, { ttl: 1000 });
    await third.release();
    // An already aborted signal rejects before anything is sent.
    await assert.rejects(other.lock(name, { ttl: 1000, signal: AbortSignal.abort() }),
      (e) => e.name === 'AbortError');
    // An abort racing a grant: whatever the outcome, nothing stays held.
    for (let i = 0; i < 5; i++) {
      const h = await db.lock(name, { ttl: 10000 });
      const ac2 = new AbortController();
      // The outcome is taken at once, so that a rejection is never unhandled.
      const w = other.lock(name, { ttl: 10000, signal: ac2.signal })
        .then((l) => l, (e) => { assert.strictEqual(e.name, 'AbortError'); return null; });
      await sleep(50 + i * 20);
      const rel = h.release();
      ac2.abort();
      await rel;
      const got = await w;
      if (got) await got.release();
      const probe = await db.tryLock(name, { ttl: 1000 });
      await probe.release();
    }
  } finally {
    await other.close();
  }
});

test('L4, L7: a takeover emits lost; the release then says LOST', async () => {
  const name = uniq('lost');
  const lease = await db.lock(name, { ttl: 1500 });
  const lost = new Promise((resolve) => lease.once('lost', resolve));
  // Another owner takes over: the row removed (as an operator's forced
  // release would), then acquired by a second handle.
  const other = await openDb();
  try {
    await other.exec(`DELETE FROM sqllock_lease WHERE name = ${ph(1)}`, [name]);
    const taker = await other.lock(name, { ttl: 10000, wait: 5000 });
    assert.ok(taker.token > lease.token);
    const err = await Promise.race([lost, sleep(5000 * SCALE).then(() => null)]);
    assert.ok(err, 'no lost event within 5 s');
    assert.ok(err instanceof sqllock.SqllockError);
    assert.strictEqual(err.code, 'LOST');
    assert.ok(lease.lost);
    assert.strictEqual(lease.state, 'lost');
    assert.ok(lease.signal.aborted);
    assert.throws(() => lease.check(), (e) => e.code === 'LOST');
    await assert.rejects(lease.release(), (e) => e.code === 'LOST');
    // The taker is unaffected.
    assert.strictEqual(taker.state, 'held');
    await taker.release();
  } finally {
    await other.close();
  }
});

test('L4: a lease that expired unrenewed and was taken over releases LOST', async () => {
  const name = uniq('expire');
  const lease = await db.lock(name, { ttl: 300, renew: false });
  await waitFor(() => lease.remaining === 0, 3000, 'the local deadline');
  const other = await db.lock(name, { ttl: 10000, wait: 5000 });
  await assert.rejects(lease.release(), (e) => e.code === 'LOST');
  assert.ok(lease.lost);
  await other.release();
});

test('close() ends the waits running on the pool (EMISUSE), and closes', async () => {
  const name = uniq('closewait');
  const holder = await db.lock(name, { ttl: 10000 });
  const other = await openDb();
  try {
    const waiting = other.lock(name, { ttl: 10000 }).then(() => null, (e) => e);  // waits for ever
    await waitFor(() => other.connections === 2, 5000, 'the wait on its connection');
    const t0 = Date.now();
    await other.close();
    const err = await waiting;
    assert.ok(err && err.code === 'EMISUSE', `rejected with ${err}`);
    assert.ok(Date.now() - t0 < 2000 * SCALE, `close took ${Date.now() - t0} ms`);
  } finally {
    await holder.release();
  }
});

test('withLock releases after fn, also when fn throws; asyncDispose releases', async () => {
  const name = uniq('with');
  const r = await db.withLock(name, { ttl: 5000 }, async (lease) => {
    assert.strictEqual(lease.state, 'held');
    return 7;
  });
  assert.strictEqual(r, 7);
  await assert.rejects(db.withLock(name, { ttl: 5000 }, async () => { throw new Error('boom'); }), /boom/);
  const lease = await db.tryLock(name, { ttl: 5000 });
  await lease[Symbol.asyncDispose]();       // what `await using` calls
  assert.strictEqual(lease.state, 'not-held');
  await lease[Symbol.asyncDispose]();       // twice is harmless
  const again = await db.tryLock(name, { ttl: 5000 });
  await again.release();
});

test('the pool: waits beyond maxConnections wait for a connection, within their deadline', async () => {
  const small = await openDb({ maxConnections: 2 });
  const name1 = uniq('pool1');
  const name2 = uniq('pool2');
  const h1 = await db.lock(name1, { ttl: 10000 });
  const h2 = await db.lock(name2, { ttl: 10000 });
  try {
    const w1 = small.lock(name1, { ttl: 10000, wait: 20000 });      // takes the one pool connection
    await sleep(100);
    // A second wait finds no connection free, and says so at its deadline.
    await assert.rejects(small.lock(name2, { ttl: 10000, wait: 500 }),
      (e) => e.code === 'TIMEOUT' && /maxConnections=2/.test(e.message));
    // Short calls still run on the first connection meanwhile.
    assert.strictEqual(await small.lookup(uniq('none')), null);
    await h1.release();
    const l1 = await w1;
    await l1.release();
    assert.strictEqual(small.connections, 2);
  } finally {
    await h2.release();
    await small.close();
  }
});

test('G1: guard text in every placeholder style is the library\'s', async () => {
  const lease = await db.lock(uniq('guard'), { ttl: 5000 });
  try {
    for (const style of ['qmark', 'dollar', 'format', 'pyformat', 'named', 'numeric']) {
      for (const first of [1, 3, 12]) {
        const { sql, params } = lease.guard(style, first);
        assert.strictEqual(sql, await db._guardSql(lease.row, lease.token, style, first), `${style} ${first}`);
        if (style === 'named' || style === 'pyformat') {
          assert.deepStrictEqual(params, { sqllock_name: lease.row, sqllock_token: lease.token });
        } else {
          assert.deepStrictEqual(params, [lease.row, lease.token]);
        }
      }
    }
    assert.throws(() => lease.guard('colon'), (e) => e.code === 'EINVAL');
    assert.throws(() => lease.guard('dollar', 0), (e) => e.code === 'EINVAL');
  } finally {
    await lease.release();
  }
  assert.throws(() => lease.guard('qmark'), (e) => e.code === 'ENOTHELD');
});
