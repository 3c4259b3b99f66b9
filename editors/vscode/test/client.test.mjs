// The extension's language client configuration, checked without VS Code:
// extension.js is loaded with stand-ins for the `vscode` API and for
// vscode-languageclient/node that record what the extension asks for.
//
//   node --test client.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Module, { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const extDir = path.join(here, '..');
const require = createRequire(import.meta.url);

// fakes builds a fresh `vscode` and `vscode-languageclient/node` pair.
function fakes(settings, { failStart = false } = {}) {
  const state = { clients: [], errors: [], listeners: [], settings };
  class LanguageClient {
    constructor(id, name, server, client) {
      Object.assign(this, { id, name, server, client, started: false, stopped: false });
      state.clients.push(this);
    }
    async start() {
      if (failStart) throw new Error('spawn agentc ENOENT');
      this.started = true;
    }
    async stop() { this.stopped = true; }
  }
  const vscode = {
    workspace: {
      getConfiguration: (section) => {
        assert.equal(section, 'agentc');
        return { get: (key, def) => (key in state.settings ? state.settings[key] : def) };
      },
      createFileSystemWatcher: (glob) => ({ glob }),
      onDidChangeConfiguration: (cb) => { state.listeners.push(cb); return { dispose() {} }; },
    },
    window: { showErrorMessage: (msg) => { state.errors.push(msg); } },
  };
  const lc = { LanguageClient, TransportKind: { stdio: 0, ipc: 1, pipe: 2, socket: 3 } };
  return { state, vscode, lc };
}

// load requires a fresh copy of extension.js wired to the fakes.
function load(f) {
  const entry = path.join(extDir, 'extension.js');
  delete require.cache[require.resolve(entry)];
  const orig = Module._load;
  Module._load = function (request, parent, isMain) {
    if (request === 'vscode') return f.vscode;
    if (request === 'vscode-languageclient/node') return f.lc;
    return orig.call(this, request, parent, isMain);
  };
  try {
    return require(entry);
  } finally {
    Module._load = orig;
  }
}

const context = () => ({ subscriptions: [] });

test('activate starts `agentc lsp` over stdio for agent documents', async () => {
  const f = fakes({});
  const ext = load(f);
  const ctx = context();
  await ext.activate(ctx);
  assert.equal(f.state.clients.length, 1);
  const c = f.state.clients[0];
  assert.equal(c.id, 'agentc');
  assert.deepEqual(c.server, { command: 'agentc', args: ['lsp'], transport: 0 });
  assert.deepEqual(c.client.documentSelector, [
    { scheme: 'file', language: 'agent' },
    { scheme: 'untitled', language: 'agent' },
  ]);
  assert.deepEqual(c.client.synchronize.fileEvents, { glob: '**/*.agent' });
  assert.ok(c.started);
  assert.equal(ctx.subscriptions.length, 1);
  await ext.deactivate();
  assert.ok(c.stopped);
});

test('agentc.path names the binary', async () => {
  const f = fakes({ path: '/opt/agentc/bin/agentc' });
  await load(f).activate(context());
  assert.equal(f.state.clients[0].server.command, '/opt/agentc/bin/agentc');
  assert.deepEqual(f.state.clients[0].server.args, ['lsp']);
});

test('agentc.lsp.enabled = false starts nothing', async () => {
  const f = fakes({ 'lsp.enabled': false });
  await load(f).activate(context());
  assert.equal(f.state.clients.length, 0);
});

test('changing agentc.path restarts the server with the new binary', async () => {
  const f = fakes({});
  await load(f).activate(context());
  f.state.settings.path = '/usr/local/bin/agentc';
  await f.state.listeners[0]({ affectsConfiguration: (s) => s === 'agentc.path' });
  assert.equal(f.state.clients.length, 2);
  assert.ok(f.state.clients[0].stopped);
  assert.equal(f.state.clients[1].server.command, '/usr/local/bin/agentc');
  // An unrelated setting leaves the server alone.
  await f.state.listeners[0]({ affectsConfiguration: () => false });
  assert.equal(f.state.clients.length, 2);
});

test('a missing binary is reported once, naming agentc.path', async () => {
  const f = fakes({ path: 'nowhere/agentc' }, { failStart: true });
  await load(f).activate(context());
  assert.equal(f.state.errors.length, 1);
  assert.match(f.state.errors[0], /nowhere\/agentc lsp/);
  assert.match(f.state.errors[0], /agentc\.path/);
});

test('the manifest wires extension.js and pins the client library', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(extDir, 'package.json'), 'utf8'));
  const lock = JSON.parse(fs.readFileSync(path.join(extDir, 'package-lock.json'), 'utf8'));
  assert.equal(pkg.main, './extension.js');
  assert.ok(pkg.activationEvents.includes('onLanguage:agent'));
  const want = pkg.dependencies['vscode-languageclient'];
  assert.match(want, /^\d+\.\d+\.\d+$/, 'an exact version');
  assert.equal(lock.packages['node_modules/vscode-languageclient'].version, want);
  assert.equal(lock.packages[''].dependencies['vscode-languageclient'], want);
  const props = pkg.contributes.configuration.properties;
  assert.equal(props['agentc.path'].default, 'agentc');
  assert.equal(props['agentc.lsp.enabled'].default, true);
});
