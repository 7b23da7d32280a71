// moat eval harness for JavaScript (Node.js), MultiPL-E's layout.
//
// Runs inside the sandbox, started as `node -e <this file>`, and reads its
// request on stdin:
//   NONCE '\n' ENTRY_POINT '\n' LEN '\n' CODE(LEN bytes) TEST
// CODE (prompt and completion) and TEST each run as a script of their own in
// this context (so that a completion cannot swallow the test into a comment
// or a string); TEST calls the function itself (MultiPL-E), or, with an
// ENTRY_POINT, defines check(candidate), which is then called. Only after
// that returns does the harness write '\n' moat-eval:NONCE pass '\n' on a
// private copy of stdout and exit at once; a thrown assertion is reported
// as "fail", anything else as "error".
//
// The sample never learns the nonce through the language: stdin is read
// whole and replaced by /dev/null before its code runs, the nonce lives
// only in this function's closure, and every function used after the
// sample ran was taken before it ran. A sample that exits first
// (process.exit, a signal) leaves no report, which moat counts as a
// failure. Node has no audit hooks: unlike the Python harness, this one does
// not stop a sample that reads its own memory through /proc/self/mem
// (docs/eval.md).
'use strict';
(function () {
  const fs = require('fs');
  const vm = require('vm');
  const writeSync = fs.writeSync;
  const reallyExit = process.reallyExit.bind(process);
  const BufferFrom = Buffer.from;
  const BufferConcat = Buffer.concat;
  const String_ = String;

  const data = fs.readFileSync(0);
  fs.closeSync(0);
  fs.openSync('/dev/null', 'r'); // the lowest free descriptor: 0
  let at = 0;
  const field = () => {
    const nl = data.indexOf(10, at);
    const s = data.subarray(at, nl).toString('utf8');
    at = nl + 1;
    return s;
  };
  const tag = BufferFrom('\nmoat-eval:' + field() + ' ');
  const entry = field();
  const n = parseInt(field(), 10);
  const code = data.subarray(at, at + n).toString('utf8');
  const test = data.subarray(at + n).toString('utf8');
  data.fill(0);
  // stdout itself: a sample that closes or redirects it only loses its own
  // report.
  const out = 1;

  function describe(e) {
    try {
      const name = e && typeof e === 'object' && typeof e.name === 'string' ? e.name : typeof e;
      let msg = '';
      try {
        msg = e && typeof e.message === 'string' ? e.message : String_(e);
      } catch (_) {}
      return name + (msg ? ': ' + msg.slice(0, 200) : '');
    } catch (_) {
      return 'exception';
    }
  }

  function report(word, detail) {
    let line;
    try {
      line = BufferConcat([tag, BufferFrom(word + (detail ? ' ' + detail.replace(/\n/g, ' ') : '') + '\n')]);
    } catch (_) {
      line = BufferConcat([tag, BufferFrom(word + '\n')]);
    }
    let off = 0;
    while (off < line.length) {
      try {
        off += writeSync(out, line, off, line.length - off);
      } catch (_) {
        break;
      }
    }
    reallyExit(0);
  }

  globalThis.require = require;
  let script, testScript;
  try {
    script = new vm.Script(code, {filename: 'completion.js'});
    testScript = new vm.Script(test, {filename: 'test.js'});
  } catch (e) {
    report('error', describe(e));
  }
  try {
    script.runInThisContext();
    testScript.runInThisContext();
    const check = globalThis.check;
    if (typeof check === 'function') {
      if (!entry) report('error', 'the test defines check but the problem has no entry_point');
      check(globalThis[entry]);
    }
  } catch (e) {
    const assertion = e && typeof e === 'object' && (e.code === 'ERR_ASSERTION' || e.name === 'AssertionError');
    report(assertion ? 'fail' : 'error', describe(e));
  }
  report('pass');
})();
