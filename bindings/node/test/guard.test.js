'use strict';
// G1: a guarded write of the application's own, on its own connection
// and in its own transaction, commits while the lease is held and
// changes nothing after a takeover. PostgreSQL through `pg`, MySQL and
// MariaDB through `mysql2` (both from npm); SQLite through the library's
// own connection (db.exec): no npm SQLite client installs offline on
// Node 20 (better-sqlite3 needs its install script: a download or
// node-gyp with Node's headers from the network).
const test = require('node:test');
const assert = require('node:assert');
const { url, driver, openDb, uniq, ph } = require('./helper');

// The application's connection: { query(sql, params) -> affected rows,
// begin(), commit(), close(), style }.
async function appConnection() {
  const u = url();
  if (driver() === 'postgres') {
    const { Client } = require('pg');
    const c = new Client({ connectionString: u });
    await c.connect();
    return {
      style: 'dollar',
      query: async (sql, params) => (await c.query(sql, params)).rowCount,
      begin: () => c.query('BEGIN'),
      commit: () => c.query('COMMIT'),
      close: () => c.end(),
    };
  }
  if (driver() === 'mysql') {
    const mysql = require('mysql2/promise');
    const c = await mysql.createConnection(u.replace(/^mariadb:/, 'mysql:'));
    return {
      style: 'qmark',
      query: async (sql, params) => (await c.query(sql, params))[0].affectedRows,
      begin: () => c.query('START TRANSACTION'),
      commit: () => c.query('COMMIT'),
      close: () => c.end(),
    };
  }
  return null;
}

test('G1: a guarded write commits while held, changes 0 rows after a takeover', async () => {
  const db = await openDb();
  const other = await openDb();
  const table = `node_guard_${process.pid}`;
  const app = await appConnection();
  // Statements on the application's connection, or (SQLite) the
  // library's own, which commits each.
  const run = app
    ? (sql, params) => app.query(sql, params)
    : async (sql, params) => (await db.exec(sql, params)).affected;
  try {
    await run(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)`, []);
    await run(`INSERT INTO ${table} (id, v) VALUES (1, 0)`, []);
    const name = uniq('guard');
    const lease = await db.lock(name, { ttl: 10000 });
    const style = app ? app.style : 'qmark';
    const write = async () => {
      const g = lease.guard(style, 2);
      const sql = `UPDATE ${table} SET v = v + 1 WHERE id = ${style === 'dollar' ? '$1' : '?'} AND ${g.sql}`;
      if (!app) return run(sql, [1, ...g.params]);
      await app.begin();
      const n = await app.query(sql, [1, ...g.params]);
      await app.commit();
      return n;
    };
    assert.strictEqual(await write(), 1, 'the guarded write while held');
    // A takeover: the row removed, another owner acquires the name.
    await other.exec(`DELETE FROM sqllock_lease WHERE name = ${ph(1)}`, [name]);
    const taker = await other.lock(name, { ttl: 10000, wait: 5000 });
    assert.strictEqual(await write(), 0, 'the stale holder\'s guarded write changes nothing');
    const check = app
      ? await app.query(`UPDATE ${table} SET v = v WHERE id = 1 AND v = 1`, [])
      : (await db.exec(`SELECT v FROM ${table} WHERE id = 1`)).first;
    assert.strictEqual(Number(check), 1, 'v is 1: only the first write happened');
    await taker.release();
    await lease.release().catch((e) => assert.strictEqual(e.code, 'LOST'));
  } finally {
    await run(`DROP TABLE ${table}`, []).catch(() => {});
    if (app) await app.close();
    await other.close();
    await db.close();
  }
});
