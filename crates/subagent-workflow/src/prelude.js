// The workflow API, installed before the script runs. Called once with the host's functions;
// returns `deliver`, which the host calls to settle a call's promise. Everything the script
// sees of the host is here: agent(), parallel(), ask(), log(), console.log(), args.
(function (issue, hostLog, argsJson) {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const pending = new Map();
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const OPTIONS = ['schema', 'model', 'description'];

  function call(kind, payload) {
    // Where the script made the call: a failure's stack names that line.
    const origin = new Error();
    return new Promise((resolve, reject) => {
      const id = issue(kind, stringify(payload));
      pending.set(id, [resolve, reject, origin]);
    });
  }

  function agent(name, prompt, options) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new TypeError("agent(name, prompt, {schema, model, description}): name must be an agent's name");
    }
    if (typeof prompt !== 'string') {
      throw new TypeError(`agent("${name}", prompt): the prompt must be a string`);
    }
    const o = options === undefined || options === null ? {} : options;
    if (!isObject(o)) {
      throw new TypeError(`agent("${name}", prompt, options): options must be an object {schema, model, description}`);
    }
    for (const k of Object.keys(o)) {
      if (!OPTIONS.includes(k)) {
        throw new TypeError(`agent("${name}"): unknown option \`${k}\` (the options are schema, model, description)`);
      }
    }
    if (o.schema !== undefined && !isObject(o.schema)) {
      throw new TypeError(`agent("${name}"): schema must be a JSON Schema object`);
    }
    if (o.model !== undefined && typeof o.model !== 'string') {
      throw new TypeError(`agent("${name}"): model must be a string`);
    }
    if (o.description !== undefined && typeof o.description !== 'string') {
      throw new TypeError(`agent("${name}"): description must be a string`);
    }
    const payload = { name, prompt };
    if (o.schema !== undefined) payload.schema = o.schema;
    if (o.model !== undefined) payload.model = o.model;
    if (o.description !== undefined) payload.description = o.description;
    return call('agent', payload);
  }

  function ask(question) {
    if (typeof question !== 'string' || question.length === 0) {
      throw new TypeError('ask(question): the question must be a non-empty string');
    }
    return call('ask', { question });
  }

  // A failure in parallel() is a value: the Error, with `error` set to its message (so it
  // shows in the JSON of a result too).
  function asError(e) {
    if (e instanceof Error) {
      if (e.error === undefined) e.error = String(e.message);
      return e;
    }
    const err = new Error(String(e));
    err.error = err.message;
    return err;
  }

  function parallel(thunks) {
    if (!Array.isArray(thunks)) {
      return Promise.reject(new TypeError('parallel([() => agent(...), ...]) takes an array of functions'));
    }
    return Promise.all(thunks.map((t, i) => {
      let p;
      try {
        if (typeof t === 'function') p = t();
        else if (t !== null && typeof t === 'object' && typeof t.then === 'function') p = t;
        else throw new TypeError(`parallel: item ${i} is not a function`);
      } catch (e) {
        return asError(e);
      }
      return Promise.resolve(p).then((v) => v, asError);
    }));
  }

  function log(...parts) {
    hostLog(parts.map((p) => {
      if (typeof p === 'string') return p;
      try {
        const s = stringify(p);
        return s === undefined ? String(p) : s;
      } catch (_) {
        return String(p);
      }
    }).join(' '));
  }

  function deliver(id, ok, json) {
    const entry = pending.get(id);
    if (entry === undefined) return;
    pending.delete(id);
    const v = parse(json);
    if (ok) {
      entry[0](v);
      return;
    }
    const e = new Error(v.message);
    e.error = v.message;
    if (v.agent !== undefined) e.agent = v.agent;
    if (v.status !== undefined) e.status = v.status;
    if (v.text !== undefined) e.text = v.text;
    e.stack = entry[2].stack;
    entry[1](e);
  }

  const unavailable = (what) => function () {
    throw new Error(`${what} is not available in a workflow: a resumed run must make the same calls, so scripts get no clock, randomness, network or files (pass such values in args)`);
  };
  const define = (name, value) => Object.defineProperty(globalThis, name, {
    value, writable: false, enumerable: false, configurable: false,
  });
  Math.random = unavailable('Math.random');
  Object.defineProperty(globalThis, 'Date', { get: unavailable('Date'), configurable: false });
  for (const name of ['setTimeout', 'setInterval', 'fetch', 'require']) define(name, unavailable(name));
  define('agent', agent);
  define('parallel', parallel);
  define('ask', ask);
  define('log', log);
  define('console', Object.freeze({ log, info: log, warn: log, error: log }));
  define('args', parse(argsJson));
  return deliver;
})
