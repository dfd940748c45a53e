'use strict';
// No call blocks the event loop: 8 waits blocked on held locks, each on
// a connection (thread) of the addon's own, while the loop's delay is
// measured (monitorEventLoopDelay and a setInterval probe), and file
// reads (libuv's thread pool, which the waits must not take) stay quick.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { monitorEventLoopDelay } = require('perf_hooks');
const { openDb, uniq, sleep, SCALE } = require('./helper');

test('the event loop: 8 blocked waits leave it responsive (p99 delay bound)', async () => {
  const holder = await openDb();
  const waiter = await openDb({ maxConnections: 9 });   // 8 waits + the first
  const names = Array.from({ length: 8 }, () => uniq('loop'));
  const held = [];
  for (const n of names) held.push(await holder.lock(n, { ttl: 20000 }));
  try {
    const waits = names.map((n) => waiter.lock(n, { ttl: 10000, wait: 30000 }));
    // Observed here too: when an assertion below fails, close() rejects
    // them, and that must not surface as unhandled rejections.
    for (const w of waits) w.catch(() => {});
    // Let the waits reach their connections (all 8 open and blocked).
    const t = Date.now();
    while (waiter.connections < 9 && Date.now() - t < 10000 * SCALE) await sleep(20);
    assert.strictEqual(waiter.connections, 9, 'all 8 waits on connections of their own');

    const h = monitorEventLoopDelay({ resolution: 5 });
    h.enable();
    let worst = 0;
    let last = performance.now();
    const probe = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last - 10);
      last = now;
    }, 10);
    // File reads go through libuv's pool: they must not queue behind waits.
    const fsTimes = [];
    const end = Date.now() + 2000;
    while (Date.now() < end) {
      const t0 = performance.now();
      await fs.promises.readFile(__filename);
      fsTimes.push(performance.now() - t0);
      await sleep(50);
    }
    clearInterval(probe);
    h.disable();
    const p50 = h.percentile(50) / 1e6;
    const p99 = h.percentile(99) / 1e6;
    const max = h.max / 1e6;
    const fsMax = Math.max(...fsTimes);
    console.log(`# event loop delay with 8 blocked waits: p50 ${p50.toFixed(2)} ms, ` +
      `p99 ${p99.toFixed(2)} ms, max ${max.toFixed(2)} ms; setInterval(10 ms) worst lateness ` +
      `${worst.toFixed(2)} ms; fs.readFile worst ${fsMax.toFixed(2)} ms of ${fsTimes.length}`);
    assert.ok(p99 < 100 * SCALE, `p99 event loop delay ${p99} ms`);
    assert.ok(fsMax < 500 * SCALE, `fs.readFile took ${fsMax} ms`);

    // The waits are still blocked; releasing the holds grants them.
    for (const l of held.splice(0)) await l.release();
    const got = await Promise.all(waits);
    for (const l of got) await l.release();
  } finally {
    for (const l of held) await l.release();
    await waiter.close();
    await holder.close();
  }
});
