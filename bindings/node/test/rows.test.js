'use strict';
// Row locks on the application's own rows (contract R1, R2, R4, R5):
// tx.lockRows(table, keys) on a table the test creates, as
// bindings/python/tests/test_rows.py does. On SQLite a row lock is the
// database's write lock (R5): the same API, coarser.
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { spawn } = require('child_process');
const { url, openDb, driver, SCALE } = require('./helper');

const lib = JSON.stringify(path.join(__dirname, '..', 'lib'));
// A table of this process's own: test runs may share the database.
const TABLE = `node_inv_${process.pid}`;
const INV = { table: TABLE, keyColumn: 'id', versionColumn: 'version' };
const LOCK_TIMEOUT = 30000 * SCALE;

let db;
test.before(async () => {
  db = await openDb();
  await db.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (id INTEGER PRIMARY KEY, ` +
    'qty INTEGER NOT NULL, version INTEGER NOT NULL)');
  await db.exec(`DELETE FROM ${TABLE}`);
  await db.exec(`INSERT INTO ${TABLE} (id, qty, version) VALUES (1, 0, 1)`);
  await db.exec(`INSERT INTO ${TABLE} (id, qty, version) VALUES (2, 0, 1)`);
});
test.after(async () => {
  await db.exec(`DROP TABLE ${TABLE}`);
  await db.close();
});

const qty = async (handle, id) =>
  Number((await handle.exec(`SELECT qty FROM ${TABLE} WHERE id = ${id}`)).first);

// Read, pause, write under the row lock: two holders at once would lose
// an increment (the application's classic SELECT ... FOR UPDATE flow, R4).
async function bump(handle, id) {
  await handle.transaction(async (tx) => {
    assert.deepStrictEqual(await tx.lockRows(INV, [id]), [true]);
    const v = Number((await tx.exec(`SELECT qty FROM ${TABLE} WHERE id = ${id}`)).first);
    await new Promise((r) => setTimeout(r, 1));
    await tx.exec(`UPDATE ${TABLE} SET qty = ${v + 1} WHERE id = ${id}`);
  }, { lockTimeout: LOCK_TIMEOUT });
}

test('R4: lockRows locks the application\'s row; its own SQL commits with it', async () => {
  const before = await qty(db, 2);
  await bump(db, 2);
  assert.strictEqual(await qty(db, 2), before + 1);
  // A missing key: NOTFOUND; a throw in the function rolls back.
  await assert.rejects(db.transaction((tx) => tx.lockRows(INV, [99])), (e) => e.code === 'NOTFOUND');
  await assert.rejects(db.transaction(async (tx) => {
    await tx.lockRows(INV, [2]);
    await tx.exec(`UPDATE ${TABLE} SET qty = 1000 WHERE id = 2`);
    throw new Error('roll back');
  }), /roll back/);
  assert.strictEqual(await qty(db, 2), before + 1);
});

test('R1: NOWAIT fails at once while another transaction holds the row; SKIP takes the free ones', async () => {
  const other = await openDb();
  try {
    await db.transaction(async (tx) => {
      assert.deepStrictEqual(await tx.lockRows(INV, 1), [true]);
      await assert.rejects(other.transaction((tx2) => tx2.lockRows(INV, [1], { mode: 'nowait' })),
        (e) => e.code === 'ELOCKED' || e.code === 'EDBBUSY');
      const got = await other.transaction((tx2) => tx2.lockRows(INV, [2, 1], { mode: 'skip' }));
      // SQLite (R5): the write lock is the database's, so every key or none.
      assert.deepStrictEqual(got, driver() === 'sqlite' ? [false, false] : [true, false]);
    }, { lockTimeout: LOCK_TIMEOUT });
  } finally {
    await other.close();
  }
});

test('R1: 8 async tasks x 5 increments under lockRows: exact counter', async () => {
  const start = await qty(db, 1);
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (let i = 0; i < 5; i++) await bump(db, 1);
  }));
  assert.strictEqual(await qty(db, 1), start + 40);
});

test('R1: 3 processes x 8 increments under lockRows: exact counter', async () => {
  const start = await qty(db, 1);
  const code = `
    const sqllock = require(${lib});
    (async () => {
      const db = await sqllock.open(process.env.SQLLOCK_TEST_URL, { maxConnections: 2 });
      for (let i = 0; i < 8; i++) {
        await db.transaction(async (tx) => {
          await tx.lockRows(${JSON.stringify(INV)}, [1]);
          const v = Number((await tx.exec('SELECT qty FROM ${TABLE} WHERE id = 1')).first);
          await new Promise((r) => setTimeout(r, 2));
          await tx.exec('UPDATE ${TABLE} SET qty = ' + (v + 1) + ' WHERE id = 1');
        }, { lockTimeout: ${LOCK_TIMEOUT} });
      }
      await db.close();
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const runs = Array.from({ length: 3 }, () => new Promise((resolve) => {
    const p = spawn(process.execPath, ['-e', code], {
      env: { ...process.env, SQLLOCK_TEST_URL: url() }, stdio: ['ignore', 'inherit', 'pipe'],
    });
    let stderr = '';
    p.stderr.on('data', (d) => { stderr += d; });
    const killer = setTimeout(() => p.kill('SIGKILL'), 120000 * SCALE);
    p.on('exit', (status) => { clearTimeout(killer); resolve({ status, stderr }); });
  }));
  for (const r of await Promise.all(runs)) assert.strictEqual(r.status, 0, r.stderr);
  assert.strictEqual(await qty(db, 1), start + 24);
});

test('lockRows: bad input is refused clearly', async () => {
  await db.transaction(async (tx) => {
    await assert.rejects(tx.lockRows('inv', [1]), TypeError);
    await assert.rejects(tx.lockRows(INV, [1.5]), TypeError);
    await assert.rejects(tx.lockRows(INV, [1], { mode: 'later' }), (e) => e.code === 'EINVAL');
    await assert.rejects(tx.lockRows({ table: 'no such; table', keyColumn: 'id' }, [1]), (e) => e.code === 'EINVAL');
  });
});
