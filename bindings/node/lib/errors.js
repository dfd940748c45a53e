'use strict';
// Errors: one class, SqllockError, for every status of the C library's
// table (SQLLOCK_STATUS_MAP, read from the library at load time, so a
// code added there is known here at once), with .code (the status's
// name: 'BUSY', 'TIMEOUT', 'LOST', ...), .status (its number) and
// .retryable (sqllock_retryable()). An aborted wait rejects with
// AbortError, as Node's own APIs do, the signal's reason as its cause.
const native = require('./native');

const byStatus = new Map();     // status -> { name, text, retryable }
const codes = {};               // name -> status
for (const [status, name, text, retryable] of native.statuses()) {
  byStatus.set(status, { name, text, retryable });
  codes[name] = status;
}
Object.freeze(codes);

class SqllockError extends Error {
  constructor(status, message) {
    const info = byStatus.get(status);
    super(message || (info ? info.text : `sqllock status ${status}`));
    this.name = 'SqllockError';
    this.status = status;
    this.code = info ? info.name : 'UNKNOWN';
    this.retryable = info ? info.retryable : false;
  }
}

class AbortError extends Error {
  constructor(message = 'The operation was aborted', options = undefined) {
    super(message, options);
    this.name = 'AbortError';
    this.code = 'ABORT_ERR';
  }
}

function abortError(signal) {
  return new AbortError(undefined, { cause: signal ? signal.reason : undefined });
}

// A native rejection ({ status, message }) as the error the API throws.
function fromNative(e, signal) {
  if (e && typeof e.status === 'number') {
    if (e.status === native.ABORTED) return abortError(signal);
    return new SqllockError(e.status, e.message);
  }
  return e;
}

function invalid(message) {
  return new SqllockError(codes.EINVAL, message);
}

module.exports = { SqllockError, AbortError, abortError, fromNative, invalid, codes };
