'use strict';
// Loads the addon (sqllock.node, N-API over libsqllock). In this order:
// $SQLLOCK_NODE_ADDON (a build directory's, as run_tests.sh sets it), the
// package's own prebuilt copy (npm pack puts it beside package.json), then
// build/sqllock.node of the source tree (see README.md, "Install").
const path = require('path');

function load() {
  const root = path.join(__dirname, '..');
  const candidates = process.env.SQLLOCK_NODE_ADDON
    ? [process.env.SQLLOCK_NODE_ADDON]
    : [path.join(root, 'sqllock.node'), path.join(root, 'build', 'sqllock.node')];
  const tried = [];
  for (const file of candidates) {
    try {
      return require(path.resolve(file));
    } catch (e) {
      tried.push(`${file}: ${e.message.split('\n')[0]}`);
    }
  }
  const err = new Error('sqllock: cannot load the addon (build it with ' +
    'bindings/node/build.sh, or set SQLLOCK_NODE_ADDON); tried:\n  ' +
    tried.join('\n  '));
  err.code = 'SQLLOCK_NO_ADDON';
  throw err;
}

module.exports = load();
