#!/usr/bin/env python3
"""Drives `otters lsp` like an editor and measures it: the round trip from a didChange of the
whole text to its publishDiagnostics on the 450-line kubectl Agentfile (client-side, so an upper
bound of the server-side time: it adds both pipe writes and both JSON codecs), and the server's
resident memory after opening 50 documents. Usage: bench/lsp.py OTTERS_BINARY [ROUNDS]"""
import json, os, statistics, subprocess, sys, time

BIN = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CONF = os.path.normpath(os.path.join(ROOT, "../shared/conformance"))
KUBECTL = os.path.join(CONF, "openotters/agents/kubectl/Agentfile")

p = subprocess.Popen([BIN, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

def send(m):
    b = json.dumps(m).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
    p.stdin.flush()

def recv():
    n = None
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit("otters lsp closed its output")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    return json.loads(p.stdout.read(n))

def until(pred):
    while True:
        m = recv()
        if pred(m):
            return m

def rss():
    fields = {}
    with open(f"/proc/{p.pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return fields["VmRSS"], fields["VmHWM"]

send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
until(lambda m: m.get("id") == 1)
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
print("after initialize: VmRSS %s, VmHWM %s" % rss())

text = open(KUBECTL).read()
edited = text.replace("FROM ", "FORM ", 1)
uri = "file://" + KUBECTL
send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
    "uri": uri, "languageId": "agentfile", "version": 0, "text": text}}})
until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
times = []
for v in range(1, ROUNDS + 1):
    t = edited if v % 2 else text
    start = time.perf_counter()
    send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": t}]}})
    until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
          and m["params"].get("version") == v)
    times.append(time.perf_counter() - start)
print("didChange -> publishDiagnostics, kubectl (%d lines), %d rounds: median %.2f ms, p90 %.2f ms"
      % (text.count("\n"), ROUNDS, statistics.median(times) * 1000,
         sorted(times)[int(len(times) * 0.9)] * 1000))

files = []
for d, _, names in os.walk(CONF):
    files += [os.path.join(d, n) for n in names if n == "Agentfile"]
files.sort()
for i in range(50):
    f = files[i % len(files)]
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": "file://%s?copy=%d" % (f, i) if i >= len(files) else "file://" + f,
        "languageId": "agentfile", "version": 1, "text": open(f).read()}}})
    until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
print("50 open documents (%d distinct files of the corpus, %d KiB of text): VmRSS %s, VmHWM %s"
      % (len(files), sum(os.path.getsize(files[i % len(files)]) for i in range(50)) // 1024, *rss()))

send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
until(lambda m: m.get("id") == 2)
send({"jsonrpc": "2.0", "method": "exit"})
print("exit status", p.wait())
