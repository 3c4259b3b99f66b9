// The agentc extension's code: it starts `agentc lsp` (the language server
// inside the agentc binary) for .agent files through vscode-languageclient,
// and restarts it when agentc.path or agentc.lsp.enabled change. Without
// the binary it reports the problem once and the grammar still works.
'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

// clientOptions and serverOptions are what the test checks: the command is
// `<agentc.path> lsp` over stdio, for agent documents on disk and unsaved.
function serverOptions(config) {
  const command = config.get('path') || 'agentc';
  return { command, args: ['lsp'], transport: TransportKind.stdio };
}

function clientOptions() {
  return {
    documentSelector: [
      { scheme: 'file', language: 'agent' },
      { scheme: 'untitled', language: 'agent' },
    ],
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher('**/*.agent') },
  };
}

async function start() {
  const config = vscode.workspace.getConfiguration('agentc');
  if (!config.get('lsp.enabled', true)) return;
  client = new LanguageClient('agentc', 'agentc', serverOptions(config), clientOptions());
  try {
    await client.start();
  } catch (err) {
    client = undefined;
    vscode.window.showErrorMessage(
      `agentc: cannot start "${serverOptions(config).command} lsp" (${err && err.message ? err.message : err}); set agentc.path`);
  }
}

async function stop() {
  const c = client;
  client = undefined;
  if (c) await c.stop();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration('agentc.path') || e.affectsConfiguration('agentc.lsp.enabled')) {
        await stop();
        await start();
      }
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate, serverOptions, clientOptions };
