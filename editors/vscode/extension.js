// The Agentfile extension: starts `otters lsp` over stdio for Agentfiles and restarts it on demand.
// Highlighting comes from syntaxes/agentfile.tmLanguage.json; everything else (diagnostics, hover,
// completion, code actions, outline, folding, formatting) from the otters language server.
'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

/** @type {LanguageClient | undefined} */
let client;

/**
 * How to start the server: `<otters.path> lsp`, speaking LSP over stdin/stdout.
 * @param {string | undefined} configured the `otters.path` setting
 */
function serverOptions(configured) {
  const command = configured && configured.trim() !== '' ? configured.trim() : 'otters';
  const run = { command, args: ['lsp'], transport: TransportKind.stdio };
  return { run, debug: run };
}

/** Which documents the server handles: Agentfiles on disk and unsaved ones. */
function clientOptions() {
  return {
    documentSelector: [
      { scheme: 'file', language: 'agentfile' },
      { scheme: 'untitled', language: 'agentfile' },
    ],
    synchronize: {
      // A change to the `otters` settings is announced; the server then asks for them
      // (workspace/configuration), as it does at start.
      configurationSection: 'otters',
      // otters.toml (lint configuration) and Agentfile.lock (pinned digests) change what the
      // server reports.
      fileEvents: vscode.workspace.createFileSystemWatcher('**/{otters.toml,Agentfile.lock}'),
    },
  };
}

async function start() {
  const configured = vscode.workspace.getConfiguration('otters').get('path');
  client = new LanguageClient(
    'otters',
    'otters language server',
    serverOptions(configured),
    clientOptions(),
  );
  try {
    await client.start();
  } catch (err) {
    vscode.window.showErrorMessage(
      `Could not start \`${serverOptions(configured).run.command} lsp\`: ${err && err.message ? err.message : err}. ` +
        'Install otters or set "otters.path".',
    );
  }
}

async function stop() {
  if (client) {
    const running = client;
    client = undefined;
    await running.stop();
  }
}

/** @param {import('vscode').ExtensionContext} context */
async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('otters.restartServer', async () => {
      await stop();
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration('otters.path')) {
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
