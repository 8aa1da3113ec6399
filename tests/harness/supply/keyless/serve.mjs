#!/usr/bin/env node
// node serve.mjs DIR
//
// Stand-ins for the public Sigstore services, on 127.0.0.1 only, for keyless signing tests that must
// not reach the internet. Built on npm @sigstore/mock (its CA, CT log, transparency log and
// timestamp authority), each service on its own free port:
//   Fulcio  POST /api/v2/signingCert   a certificate for a P-256 key, with an embedded SCT
//   Rekor   POST /api/v1/log/entries   dsse 0.0.1 and hashedrekord 0.0.1 entries, with a signed entry
//                                      timestamp and a one-leaf inclusion proof with its checkpoint
//   TSA     POST /api/v1/timestamp     JSON request ({artifactHash, hashAlgorithm, certificates, nonce})
// It refuses what the real services refuse, so a client that gets this wrong fails here too:
//   Fulcio  a token that is not a JWT, whose aud lacks "sigstore", without iss or sub, without a
//           numeric exp or expired, with an unverified email; a key that is not P-256; a missing or
//           wrong proof of possession (an ECDSA-SHA256 signature by the key over the token's email
//           claim, or its sub claim when it has no email).
//   Rekor   a dsse entry whose envelope signatures the given verifiers do not verify; it stores the
//           body real Rekor stores (envelope and payload hashes, the signatures with their verifier),
//           which is what verifiers compare with the bundle.
// Every certificate's SAN is a URI (the mock CA writes no rfc822Name), and its issuer extension is the
// token's iss. The timestamps are whole seconds (@sigstore/core reads no other fraction than three
// digits, and DER drops trailing zeros).
//
// On start it writes, into DIR:
//   trusted_root.json  the Sigstore TrustedRoot (protobuf-JSON) of this instance: CA, Rekor key, CT
//                      log key, TSA chain; every start makes new keys
//   env                export FULCIO_URL=… REKOR_URL=… TSA_URL=… TRUSTED_ROOT=… KEYLESS_MOCK_PID=…
//   requests.log       one JSON line per request: service, method, path, status, why it was refused
// then prints "keyless mock ready: fulcio=URL rekor=URL tsa=URL" and serves until it is killed. Each
// refused request is logged on stderr (service, path, status, why).
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pkg, sha256 } from '../common.mjs';

const dir = process.argv[2];
if (!dir || process.argv.length > 3) {
  console.error('usage: node serve.mjs DIR');
  process.exit(2);
}
const mock = pkg('@sigstore/mock');
const specs = pkg('@sigstore/protobuf-specs');
fs.mkdirSync(dir, { recursive: true });
const requestLog = path.join(dir, 'requests.log');
fs.writeFileSync(requestLog, '');

class Refused extends Error {}
const refuse = (why) => { throw new Refused(why); };
const p256 = () => crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const wholeSeconds = () => new Date(Math.floor(Date.now() / 1000) * 1000);
const since = new Date(wholeSeconds().getTime() - 60_000);

function parseJSON(body, what) {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return refuse(`${what} is not JSON`);
  }
}

// ---- Fulcio ------------------------------------------------------------------------------------------
const ctLog = await mock.initializeCTLog(p256());
const ca = await mock.initializeCA(p256(), ctLog);
const issueBySub = mock.fulcioHandler(ca, { strict: true, subjectClaim: 'sub' });
const issueByEmail = mock.fulcioHandler(ca, { strict: true, subjectClaim: 'email' });

function claimsOf(token) {
  if (typeof token !== 'string') refuse('credentials.oidcIdentityToken is missing');
  const parts = token.split('.');
  if (parts.length !== 3) refuse('the identity token is not a JWT');
  try {
    JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    return JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    return refuse('the identity token\'s header or claims are not base64url JSON');
  }
}

async function fulcio(body) {
  const request = parseJSON(body, 'the request');
  const claims = claimsOf(request?.credentials?.oidcIdentityToken);
  if (![].concat(claims.aud ?? []).includes('sigstore')) refuse(`the token's audience ${JSON.stringify(claims.aud)} lacks "sigstore"`);
  for (const claim of ['iss', 'sub']) if (typeof claims[claim] !== 'string' || !claims[claim]) refuse(`the token has no ${claim} claim`);
  if (typeof claims.exp !== 'number') refuse('the token has no numeric exp claim');
  if (claims.exp * 1000 <= Date.now()) refuse('the token has expired');
  const byEmail = claims.email !== undefined;
  if (byEmail && claims.email_verified !== true) refuse('the token\'s email is not verified');
  const wanted = request.publicKeyRequest;
  if (!wanted) refuse('publicKeyRequest is missing');
  let key;
  try {
    key = crypto.createPublicKey(wanted.publicKey?.content);
  } catch {
    refuse('publicKeyRequest.publicKey.content is not a PEM public key');
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    refuse('this CA certifies ECDSA P-256 keys only');
  const proof = Buffer.from(wanted.proofOfPossession ?? '', 'base64');
  const challenge = byEmail ? claims.email : claims.sub;
  if (!proof.length || !crypto.verify('sha256', Buffer.from(challenge), key, proof))
    refuse(`proofOfPossession is not the key's signature over the token's ${byEmail ? 'email' : 'sub'} claim`);
  return (byEmail ? issueByEmail : issueBySub).fn(body.toString('utf8'));
}

// ---- Rekor -------------------------------------------------------------------------------------------
const rekorKey = p256();
let rekorLog;

function keyFromBase64Pem(value, where) {
  const pem = Buffer.from(value ?? '', 'base64').toString('utf8');
  try {
    return { pem, key: pem.includes('CERTIFICATE') ? new crypto.X509Certificate(pem).publicKey : crypto.createPublicKey(pem) };
  } catch {
    return refuse(`${where} is not base64 of a PEM certificate or key`);
  }
}

const pae = (type, payload) => Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(type)} ${type} ${payload.length} `), payload]);
const hash = (bytes) => ({ algorithm: 'sha256', value: sha256(bytes).toString('hex') });

// The body real Rekor keeps for a proposed entry (after the checks it makes).
function storedBody(entry) {
  const { kind, apiVersion, spec } = entry ?? {};
  if (kind === 'dsse' && apiVersion === '0.0.1') {
    const proposed = spec?.proposedContent;
    if (typeof proposed?.envelope !== 'string') refuse('dsse: spec.proposedContent.envelope must be the envelope as a JSON string');
    const envelope = parseJSON(Buffer.from(proposed.envelope), 'dsse: the envelope');
    const verifiers = (proposed.verifiers ?? []).map((v, i) => keyFromBase64Pem(v, `dsse: verifiers[${i}]`));
    if (!verifiers.length) refuse('dsse: proposedContent.verifiers is empty');
    if (!envelope.signatures?.length) refuse('dsse: the envelope has no signature');
    const payload = Buffer.from(envelope.payload ?? '', 'base64');
    const signed = pae(envelope.payloadType ?? '', payload);
    const signatures = envelope.signatures.map((s) => {
      const by = verifiers.find((v) => crypto.verify('sha256', signed, v.key, Buffer.from(s.sig ?? '', 'base64')));
      if (!by) refuse('dsse: an envelope signature is not verified by any of the verifiers');
      return { signature: s.sig, verifier: Buffer.from(by.pem).toString('base64') };
    });
    signatures.sort((a, b) => a.signature.localeCompare(b.signature));
    return { apiVersion, kind, spec: { envelopeHash: hash(Buffer.from(proposed.envelope)), payloadHash: hash(payload), signatures } };
  }
  if (kind === 'hashedrekord' && apiVersion === '0.0.1') {
    const digest = spec?.data?.hash;
    if (digest?.algorithm !== 'sha256' || !/^[0-9a-f]{64}$/.test(digest.value ?? '')) refuse('hashedrekord: spec.data.hash must be a sha256 in lowercase hex');
    if (!spec.signature?.content) refuse('hashedrekord: spec.signature.content is missing');
    keyFromBase64Pem(spec.signature.publicKey?.content, 'hashedrekord: spec.signature.publicKey.content');
    return { apiVersion, kind, spec: { data: { hash: { algorithm: 'sha256', value: digest.value } },
      signature: { content: spec.signature.content, publicKey: { content: spec.signature.publicKey.content } } } };
  }
  return refuse(`entries of kind ${JSON.stringify(kind)} version ${JSON.stringify(apiVersion)} are not taken here (dsse 0.0.1, hashedrekord 0.0.1)`);
}

const rekor = async (body) => rekorLog.fn(JSON.stringify(storedBody(parseJSON(body, 'the proposed entry'))));

// ---- timestamp authority ------------------------------------------------------------------------------
const tsa = await mock.initializeTSA(p256());
tsa.getCurrentTime = wholeSeconds;
const timestamps = mock.tsaHandler(tsa, { strict: true });
const timestamp = async (body) => {
  const request = parseJSON(body, 'the timestamp request');
  if (typeof request.artifactHash !== 'string' || !request.artifactHash) refuse('artifactHash (base64) is missing');
  return timestamps.fn(body.toString('utf8'));
};

// ---- HTTP ---------------------------------------------------------------------------------------------
function listen(service, routes) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      const route = routes[`${req.method} ${req.url.split('?')[0]}`];
      let answer;
      try {
        answer = route ? await route(Buffer.concat(chunks)) : { statusCode: 404, response: `the mock ${service} has no ${req.method} ${req.url}` };
      } catch (e) {
        answer = e instanceof Refused ? { statusCode: 400, response: e.message } : { statusCode: 500, response: String(e.stack) };
      }
      const refusal = answer.statusCode >= 300 ? String(answer.response).split('\n')[0] : undefined;
      const entry = { service, method: req.method, path: req.url, status: answer.statusCode, refusal };
      fs.appendFileSync(requestLog, `${JSON.stringify(entry)}\n`);
      // On stderr, refusals only: they are what a failing test needs to see.
      if (refusal) console.error(`mock ${service}: ${req.method} ${req.url} -> ${answer.statusCode} ${refusal}`);
      res.writeHead(answer.statusCode, { 'Content-Type': answer.contentType ?? 'text/plain' });
      res.end(answer.response);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const servers = {
  fulcio: await listen('Fulcio', { 'POST /api/v2/signingCert': fulcio }),
  rekor: await listen('Rekor', { 'POST /api/v1/log/entries': rekor }),
  tsa: await listen('TSA', { 'POST /api/v1/timestamp': timestamp }),
};
const base = (server) => `http://127.0.0.1:${server.address().port}`;
const urls = { fulcio: base(servers.fulcio), rekor: base(servers.rekor), tsa: `${base(servers.tsa)}/api/v1/timestamp` };
// The log names its checkpoints after its host, so it is made once the port is known.
rekorLog = mock.rekorHandler(await mock.initializeTLog(urls.rekor, rekorKey), { strict: true });

// ---- trust material ------------------------------------------------------------------------------------
const der = (key) => key.export({ type: 'spki', format: 'der' });
const log = (url, spki, logId) => ({
  baseUrl: url,
  hashAlgorithm: specs.HashAlgorithm.SHA2_256,
  publicKey: { rawBytes: spki, keyDetails: specs.PublicKeyDetails.PKIX_ECDSA_P256_SHA_256, validFor: { start: since } },
  logId: { keyId: logId },
});
const until = (certificate) => new Date(new crypto.X509Certificate(certificate).validTo);
const trustedRoot = specs.TrustedRoot.toJSON({
  mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
  certificateAuthorities: [{
    subject: { organization: 'sigstore.mock', commonName: 'sigstore' },
    uri: urls.fulcio,
    certChain: { certificates: [{ rawBytes: ca.rootCertificate }] },
    validFor: { start: since, end: until(ca.rootCertificate) },
  }],
  tlogs: [log(urls.rekor, der(rekorKey.publicKey), sha256(der(rekorKey.publicKey)))],
  ctlogs: [log(urls.fulcio, ctLog.publicKey, Buffer.from(ctLog.logID))],
  timestampAuthorities: [{
    subject: { organization: 'sigstore.mock', commonName: 'tsa' },
    uri: urls.tsa,
    certChain: { certificates: [{ rawBytes: tsa.intCertificate }, { rawBytes: tsa.rootCertificate }] },
    validFor: { start: since, end: until(tsa.rootCertificate) },
  }],
});
const rootFile = path.resolve(dir, 'trusted_root.json');
fs.writeFileSync(rootFile, `${JSON.stringify(trustedRoot, null, 2)}\n`);
const vars = { FULCIO_URL: urls.fulcio, REKOR_URL: urls.rekor, TSA_URL: urls.tsa, TRUSTED_ROOT: rootFile, KEYLESS_MOCK_PID: process.pid };
fs.writeFileSync(path.join(dir, 'env'), Object.entries(vars).map(([k, v]) => `export ${k}=${v}\n`).join(''));

const stop = () => {
  for (const server of Object.values(servers)) server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
console.log(`keyless mock ready: fulcio=${urls.fulcio} rekor=${urls.rekor} tsa=${urls.tsa}`);
