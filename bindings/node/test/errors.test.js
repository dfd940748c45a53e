'use strict';
// E1, E2: every status of the C table is a SqllockError with its code;
// bad input gets a clear error and never crashes.
const test = require('node:test');
const assert = require('node:assert');
const native = require('../lib/native');
const { sqllock, url, openDb, uniq } = require('./helper');

test('E1: every status of the C table maps to SqllockError with its code', () => {
  const table = native.statuses();
  assert.ok(table.length >= 27, `only ${table.length} statuses`);
  const names = new Set();
  // Walk the whole range: each code the library names is known here.
  for (let status = 0; status < 200; status++) {
    const row = table.find((r) => r[0] === status);
    const e = new sqllock.SqllockError(status);
    assert.ok(e instanceof Error);
    assert.strictEqual(e.status, status);
    if (row) {
      assert.strictEqual(e.code, row[1]);
      assert.strictEqual(e.message, row[2]);
      assert.strictEqual(sqllock.codes[row[1]], status);
      names.add(row[1]);
    } else {
      assert.strictEqual(e.code, 'UNKNOWN');
    }
  }
  for (const want of ['OK', 'BUSY', 'TIMEOUT', 'LOST', 'CONFLICT', 'NOTFOUND', 'EINVAL',
    'EURL', 'ESCHEME', 'ECONNECT', 'ENOTHELD', 'EMISUSE', 'ELOCKED', 'EKIND']) {
    assert.ok(names.has(want), `status ${want} is missing`);
  }
  assert.strictEqual(new sqllock.SqllockError(sqllock.codes.BUSY).retryable, true);
  assert.strictEqual(new sqllock.SqllockError(sqllock.codes.LOST).retryable, false);
});

async function rejectsCode(promise, code, re) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof sqllock.SqllockError, `not a SqllockError: ${e}`);
    assert.strictEqual(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return true;
  });
}

test('E2: bad URLs, unknown schemes and a dead server are refused clearly', async () => {
  await rejectsCode(sqllock.open('nosuch://x/y'), 'ESCHEME');
  await rejectsCode(sqllock.open('postgres://u@[::1/x'), 'EURL');
  await rejectsCode(sqllock.open('sqlite::memory:'), 'EURL');
  await rejectsCode(sqllock.open(''), 'EURL');
  await assert.rejects(sqllock.open(42), TypeError);
  // A port nobody listens on: ECONNECT, quickly, no password in it.
  await rejectsCode(sqllock.open('postgres://u:secretpw@127.0.0.1:1/db', { connectTimeout: 2000 }),
    'ECONNECT');
  await assert.rejects(sqllock.open('postgres://u:secretpw@127.0.0.1:1/db', { connectTimeout: 2000 }),
    (e) => !e.message.includes('secretpw'));
  await rejectsCode(sqllock.open(url(), { maxConnections: 0 }), 'EINVAL');
  await rejectsCode(sqllock.open(url(), { connectTimeout: 'soon' }), 'EINVAL', /connectTimeout/);
});

test('E2: bad names and ttls are EINVAL; a closed db is EMISUSE', async () => {
  const db = await openDb();
  try {
    await rejectsCode(db.lock('', { ttl: 1000 }), 'EINVAL');
    await rejectsCode(db.lock('x'.repeat(256), { ttl: 1000 }), 'EINVAL');
    await rejectsCode(db.lock('bad\nname', { ttl: 1000 }), 'EINVAL');
    await rejectsCode(db.lock('nul\0name', { ttl: 1000 }), 'EINVAL', /NUL/);
    await assert.rejects(db.lock(null, { ttl: 1000 }), TypeError);
    await assert.rejects(db.lock(undefined), TypeError);
    await rejectsCode(db.lock(uniq('t'), { ttl: 0 }), 'EINVAL', /ttl/);
    await rejectsCode(db.lock(uniq('t'), { ttl: -5 }), 'EINVAL', /ttl/);
    await rejectsCode(db.lock(uniq('t'), { ttl: '0s' }), 'EINVAL', /ttl/);
    await rejectsCode(db.lock(uniq('t'), { ttl: '5 seconds' }), 'EINVAL');
    await assert.rejects(db.lock(uniq('t'), { ttl: 1000, signal: {} }), TypeError);
    await rejectsCode(db.semaphore(uniq('s'), 0, { ttl: 1000 }), 'EINVAL');
    await rejectsCode(db.semaphore('x'.repeat(201), 2, { ttl: 1000 }), 'EINVAL');
    await rejectsCode(db.get(''), 'EINVAL');
    // The handle still works after all that.
    const lease = await db.lock(uniq('ok'), { ttl: 1000 });
    await lease.release();
    await rejectsCode(lease.release(), 'ENOTHELD');
  } finally {
    await db.close();
  }
  await rejectsCode(db.lock(uniq('t'), { ttl: 1000 }), 'EMISUSE', /closed/);
  await rejectsCode(db.get('k'), 'EMISUSE');
  await db.close(); // twice is harmless
});

test('durations: numbers are ms, texts as sqllock_parse_duration()', () => {
  assert.strictEqual(sqllock.parseDuration('1m30s'), 90000);
  assert.strictEqual(sqllock.parseDuration('250ms'), 250);
  assert.throws(() => sqllock.parseDuration('1.5ms'), (e) => e.code === 'EINVAL');
  assert.throws(() => sqllock.parseDuration('30m1h'), /largest first|order/);
  assert.ok(sqllock.nowUs() > 0);
});
