// Checks the extension's manifest and client without VS Code: `vscode` is replaced by a stub, and
// the language client by a recorder, so the test sees which server the extension starts (and how)
// and for which documents.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');

const extensionDir = path.resolve(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(extensionDir, 'package.json'), 'utf8'));

/** Loads extension.js with `vscode` stubbed; returns the module and what it did. */
function loadExtension(settings) {
  const record = { clients: [], commands: {}, errors: [] };
  const vscode = {
    workspace: {
      getConfiguration: (section) => ({ get: (key) => settings[`${section}.${key}`] }),
      createFileSystemWatcher: (glob) => ({ glob }),
      onDidChangeConfiguration: () => ({ dispose() {} }),
    },
    commands: {
      registerCommand: (name, fn) => {
        record.commands[name] = fn;
        return { dispose() {} };
      },
    },
    window: { showErrorMessage: (m) => record.errors.push(m) },
  };
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, started: 0, stopped: 0 });
      record.clients.push(this);
    }
    async start() {
      this.started++;
      if (settings.failStart) throw new Error('spawn otters ENOENT');
    }
    async stop() {
      this.stopped++;
    }
  }
  // vscode-languageclient/node itself needs the real `vscode`; the transport constant is what
  // the client passes through, so the recorder keeps the real value.
  const stubs = {
    vscode,
    'vscode-languageclient/node': { LanguageClient, TransportKind: { stdio: 0, ipc: 1, pipe: 2, socket: 3 } },
  };
  const original = Module._load;
  Module._load = function load(request, parent, isMain) {
    if (Object.prototype.hasOwnProperty.call(stubs, request)) return stubs[request];
    return original.call(this, request, parent, isMain);
  };
  try {
    const file = require.resolve(path.join(extensionDir, manifest.main));
    delete require.cache[file];
    return { ext: require(file), record };
  } finally {
    Module._load = original;
  }
}

function fakeContext() {
  return { subscriptions: [] };
}

test('manifest: the agentfile language for Agentfile and *.agentfile, with its grammar', () => {
  const [lang] = manifest.contributes.languages;
  assert.equal(lang.id, 'agentfile');
  assert.deepEqual(lang.filenames, ['Agentfile']);
  assert.deepEqual(lang.extensions, ['.agentfile']);
  // The first-line marker: any file starting with it is an Agentfile; Docker's is not.
  const first = new RegExp(lang.firstLine);
  assert.ok(first.test('# syntax=openotters/agentfile:1'));
  assert.ok(first.test('#syntax=openotters/agentfile'));
  assert.ok(!first.test('# syntax=docker/dockerfile:1'));
  // Marketplace/Open VSX fields.
  assert.equal(manifest.repository.url, 'https://github.com/openotters/otters');
  assert.ok(manifest.publisher && manifest.categories.includes('Programming Languages'));
  const config = JSON.parse(fs.readFileSync(path.join(extensionDir, lang.configuration), 'utf8'));
  assert.equal(config.comments.lineComment, '#');
  const [grammar] = manifest.contributes.grammars;
  assert.equal(grammar.language, 'agentfile');
  const tm = JSON.parse(fs.readFileSync(path.join(extensionDir, grammar.path), 'utf8'));
  assert.equal(tm.scopeName, grammar.scopeName);
  assert.equal(grammar.embeddedLanguages['meta.embedded.block.markdown'], 'markdown');
  assert.ok(fs.existsSync(path.join(extensionDir, manifest.main)));
  assert.ok(manifest.dependencies['vscode-languageclient'], 'the client is a runtime dependency');
  // Every pinned version is exact, so package-lock.json and the manifest agree on what is tested.
  for (const deps of [manifest.dependencies, manifest.devDependencies]) {
    for (const [name, version] of Object.entries(deps)) assert.match(version, /^\d+\.\d+\.\d+$/, name);
  }
});

test('activation starts `otters lsp` over stdio for agentfile documents', async () => {
  const { ext, record } = loadExtension({});
  await ext.activate(fakeContext());
  assert.equal(record.clients.length, 1);
  const c = record.clients[0];
  assert.equal(c.started, 1);
  assert.deepEqual(c.serverOptions.run, { command: 'otters', args: ['lsp'], transport: 0 });
  assert.deepEqual(c.serverOptions.debug, c.serverOptions.run);
  assert.deepEqual(
    c.clientOptions.documentSelector.map((s) => `${s.scheme}:${s.language}`),
    ['file:agentfile', 'untitled:agentfile'],
  );
  assert.equal(c.clientOptions.synchronize.fileEvents.glob, '**/{otters.toml,Agentfile.lock}');
  assert.equal(c.clientOptions.synchronize.configurationSection, 'otters');
  // The settings the server reads (crates/otters-lsp/src/settings.rs) are contributed.
  const props = manifest.contributes.configuration.properties;
  for (const key of ['targets', 'capabilities', 'buildArgs', 'run']) {
    assert.ok(props[`otters.${key}`], `otters.${key} is a setting`);
  }
  assert.deepEqual(record.errors, []);
});

test('otters.path picks the executable; restart stops the old client and starts a new one', async () => {
  const { ext, record } = loadExtension({ 'otters.path': ' /opt/otters/bin/otters ' });
  await ext.activate(fakeContext());
  assert.equal(record.clients[0].serverOptions.run.command, '/opt/otters/bin/otters');
  assert.deepEqual(record.clients[0].serverOptions.run.args, ['lsp']);
  await record.commands['otters.restartServer']();
  assert.equal(record.clients.length, 2);
  assert.equal(record.clients[0].stopped, 1);
  assert.equal(record.clients[1].started, 1);
  await ext.deactivate();
  assert.equal(record.clients[1].stopped, 1);
  assert.ok(manifest.contributes.commands.some((c) => c.command === 'otters.restartServer'));
});

test('a server that cannot start is reported, naming the command', async () => {
  const { ext, record } = loadExtension({ failStart: true });
  await ext.activate(fakeContext());
  assert.equal(record.errors.length, 1);
  assert.match(record.errors[0], /`otters lsp`.*ENOENT.*otters\.path/);
});
