// moat judge harness for JavaScript (Node.js, CommonJS).
//
// Runs inside the sandbox: reads one request line on stdin,
//   {"nonce": "...", "function": "solve", "args": [...]}
// loads the submission given as argv[2], calls the function (exported, or
// declared at the top level of the file) with the arguments, awaits it when
// it returns a promise, and prints one line on stdout,
//   moat-result:NONCE {"value": V}      or      moat-result:NONCE {"error": "..."}
// then exits at once.
//
// This file is not trusted and needs no secret: the submission runs in the
// same process and may read or patch anything here. The verdict comes from
// moat, which compares V with the expected value; that value never enters
// the sandbox, so tampering with the harness gains nothing.
'use strict';

// Taken before the submission runs, so that rebinding globals it can reach
// does not change how the reply is written.
const fs = require('fs');
const Module = require('module');
const writeSync = fs.writeSync;
const stringify = JSON.stringify;
const exit = process.exit.bind(process);

let nonce = '';

function reply(obj) {
  let body;
  try {
    body = stringify(obj, (k, v) => {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError(`${v} has no JSON form`);
      if (typeof v === 'bigint') throw new TypeError('a BigInt has no JSON form');
      return v === undefined ? null : v;
    });
  } catch (e) {
    body = stringify({ error: `the result is not JSON: ${e && e.message}` });
  }
  let data = Buffer.from(`\nmoat-result:${nonce} ${body}\n`);
  while (data.length) data = data.subarray(writeSync(1, data));
  exit(0);
}

function fail(e) {
  const name = e && e.name ? e.name : 'Error';
  const msg = e && e.message !== undefined ? e.message : String(e);
  if (e && e.stack) process.stderr.write(`${e.stack}\n`);
  reply({ error: `${name}: ${msg}` });
}

function main() {
  const line = fs.readFileSync(0, 'utf8').split('\n', 1)[0];
  const req = JSON.parse(line);
  nonce = req.nonce;
  const fn = req.function;
  if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(fn)) throw new Error('bad function name');
  const file = process.argv[2];
  const source = fs.readFileSync(file, 'utf8');
  // A function declared at the top level of a CommonJS file is not
  // exported; the line appended here hands it over when it exists.
  const m = new Module(file, null);
  m.filename = file;
  m.paths = Module._nodeModulePaths('/');
  m._compile(`${source}\n;module.exports.__moat_fn = typeof ${fn} === 'function' ? ${fn} : undefined;\n`, file);
  const exported = m.exports && typeof m.exports[fn] === 'function' ? m.exports[fn] : undefined;
  const f = exported || m.exports.__moat_fn;
  if (typeof f !== 'function') return reply({ error: `the submission defines no function ${fn}` });
  const value = f(...req.args);
  if (value && typeof value.then === 'function') {
    value.then((v) => reply({ value: v }), fail);
  } else {
    reply({ value });
  }
}

process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
try {
  main();
} catch (e) {
  fail(e);
}
