'use strict';
// The addon never keeps a process alive with nothing pending, shuts down
// cleanly at exit (also in the middle of a wait, also with a campaign and
// a watched lease), and closes a Database that was dropped unclosed.
const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { spawn } = require('child_process');
const { url, openDb, uniq, SCALE } = require('./helper');

const lib = JSON.stringify(path.join(__dirname, '..', 'lib'));

// The schema, before any child uses the database.
test.before(async () => { await (await openDb()).close(); });

// Runs `code` in a child node; resolves { code, ms, stderr }.
function child(code, args = []) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, [...args, '-e', code], {
      env: { ...process.env, SQLLOCK_TEST_URL: url() },
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let stderr = '';
    p.stderr.on('data', (d) => { stderr += d; });
    const killer = setTimeout(() => p.kill('SIGKILL'), 30000 * SCALE);
    p.on('exit', (status, signal) => {
      clearTimeout(killer);
      resolve({ code: status, signal, ms: Date.now() - t0, stderr });
    });
  });
}

test('a process with an open db and nothing pending exits by itself', async () => {
  const r = await child(`
    const sqllock = require(${lib});
    (async () => {
      const db = await sqllock.open(process.env.SQLLOCK_TEST_URL);
      const l = await db.lock(${JSON.stringify(uniq('idle'))}, { ttl: 5000 });
      await l.release();
      // no close: the loop has nothing left to do
    })();`);
  assert.strictEqual(r.code, 0, r.stderr);
  assert.ok(r.ms < 10000 * SCALE, `took ${r.ms} ms`);
});

test('exit while a lease is held and watched, a wait blocks and a campaign runs', async () => {
  const name = uniq('exit');
  const holder = await openDb();
  const held = await holder.lock(name, { ttl: 10000 });
  try {
    const r = await child(`
      const sqllock = require(${lib});
      (async () => {
        const db = await sqllock.open(process.env.SQLLOCK_TEST_URL);
        const mine = await db.lock(${JSON.stringify(uniq('held'))}, { ttl: 5000 });
        const c = await db.campaign(${JSON.stringify(uniq('camp'))}, { ttl: 2000 });
        db.lock(${JSON.stringify(name)}, { ttl: 5000 }).catch(() => {});
        setTimeout(() => process.exit(3), 500);
      })();`);
    assert.strictEqual(r.code, 3, r.stderr);
    assert.strictEqual(r.signal, null);
  } finally {
    await held.release();
    await holder.close();
  }
});

test('a campaign keeps the process alive until closed', async () => {
  const r = await child(`
    const sqllock = require(${lib});
    (async () => {
      const c = await sqllock.campaign(process.env.SQLLOCK_TEST_URL, ${JSON.stringify(uniq('alive'))}, { ttl: 2000 });
      const t = await c[Symbol.asyncIterator]().next();
      setTimeout(async () => { await c.close(); console.log('# closed after a term'); }, 300);
    })();`);
  assert.strictEqual(r.code, 0, r.stderr);
});

test('a Database dropped without close() is closed when collected', async () => {
  const r = await child(`
    const sqllock = require(${lib});
    const fs = require('fs');
    const threads = () => fs.readdirSync('/proc/self/task').length;
    (async () => {
      const before = threads();
      for (let i = 0; i < 20; i++) {
        const db = await sqllock.open(process.env.SQLLOCK_TEST_URL);
        const l = await db.lock('gc-' + process.pid + '-' + i, { ttl: 5000 });
        await l.release();
      }
      const during = threads();
      // Each dropped handle's finalizer closes it on its thread; the
      // thread ends and is joined (its connection and renewer with it).
      for (let i = 0; i < 40 && threads() > before + 2; i++) {
        global.gc();
        await new Promise((r) => setTimeout(r, 50));
      }
      const after = threads();
      console.log('# threads: ' + before + ' before, ' + during + ' with 20 handles, ' + after + ' after gc');
      if (after > before + 2) process.exit(4);
    })();`, ['--expose-gc']);
  assert.strictEqual(r.code, 0, r.stderr);
  assert.strictEqual(r.signal, null);
});
