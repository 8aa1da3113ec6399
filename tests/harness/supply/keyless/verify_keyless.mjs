#!/usr/bin/env node
// node verify_keyless.mjs BUNDLE.json TRUSTED_ROOT.json --identity SAN --issuer ISSUER [HEX | sha256:HEX | SIGNED_FILE]
//                        [--tlog-threshold N] [--ctlog-threshold N] [--timestamp-threshold N] [--tsa-threshold N]
//
// A second reader of keyless Sigstore bundles (v0.3, v0.2), independent of otters: npm
// @sigstore/bundle parses the bundle, @sigstore/verify checks it against the trusted root (the one
// serve.mjs wrote), offline. It wants, as @sigstore/verify's defaults do: the certificate chaining to a
// trusted CA, an SCT from a trusted CT log, a transparency-log entry whose promise or inclusion proof
// verifies with a trusted log key and whose body matches the bundle, a verified time inside the
// certificate's validity, and the signature. On top of that, the certificate's SAN must EQUAL
// --identity (@sigstore/verify alone matches it as an unanchored regular expression) and its OIDC
// issuer extension equal --issuer. A DSSE bundle holds an in-toto statement, which must name the digest
// given; a message signature needs SIGNED_FILE. The thresholds (default 1, 1, 1 and 0) are how many
// transparency-log entries, SCTs, verified times and RFC 3161 timestamps must be there.
// Exit 0 "verified keyless …", 1 "not verified: why", 2 usage, 3 packages missing (install.sh).
import { readFileSync } from 'node:fs';
import { pkg, readBundle, statementOf, subjectArg, verdict } from '../common.mjs';

const KEYLESS_BUNDLES = [
  'application/vnd.dev.sigstore.bundle.v0.3+json',
  'application/vnd.dev.sigstore.bundle+json;version=0.3',
  'application/vnd.dev.sigstore.bundle+json;version=0.2',
];

function usage(why) {
  if (why) console.error(why);
  console.error('usage: node verify_keyless.mjs BUNDLE.json TRUSTED_ROOT.json --identity SAN --issuer ISSUER [HEX | sha256:HEX | SIGNED_FILE] '
    + '[--tlog-threshold N] [--ctlog-threshold N] [--timestamp-threshold N] [--tsa-threshold N]');
  process.exit(2);
}

const positional = [];
const o = { tlog: 1, ctlog: 1, timestamp: 1, tsa: 0 };
const THRESHOLDS = { '--tlog-threshold': 'tlog', '--ctlog-threshold': 'ctlog', '--timestamp-threshold': 'timestamp', '--tsa-threshold': 'tsa' };
const args = process.argv.slice(2);
while (args.length) {
  const a = args.shift();
  if (a === '--identity' || a === '--issuer') {
    if (!args.length) usage(`${a} wants a value`);
    o[a.slice(2)] = args.shift();
  } else if (a in THRESHOLDS) {
    if (!/^\d+$/.test(args[0] ?? '')) usage(`${a} wants a whole number`);
    o[THRESHOLDS[a]] = Number(args.shift());
  } else if (a.startsWith('--')) usage(`unknown option ${a}`);
  else positional.push(a);
}
if (positional.length < 2 || positional.length > 3) usage();
if (o.identity === undefined || o.issuer === undefined) usage('--identity and --issuer are both required');
const [bundleFile, rootFile, subject] = positional;

const literally = (text) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`);

verdict(() => {
  const { Verifier, toSignedEntity, toTrustMaterial } = pkg('@sigstore/verify');
  const { TrustedRoot } = pkg('@sigstore/protobuf-specs');
  const { digest, bytes } = subjectArg(subject);
  const rootJSON = JSON.parse(readFileSync(rootFile, 'utf8'));
  if (!String(rootJSON.mediaType).startsWith('application/vnd.dev.sigstore.trustedroot'))
    throw new Error(`${rootFile} is not a Sigstore trusted root (mediaType ${JSON.stringify(rootJSON.mediaType)})`);
  const trust = toTrustMaterial(TrustedRoot.fromJSON(rootJSON));

  const bundle = readBundle(bundleFile, KEYLESS_BUNDLES);
  const held = bundle.verificationMaterial.content?.$case;
  if (held !== 'certificate' && held !== 'x509CertificateChain') throw new Error(`the bundle carries a ${held}, not a certificate: it is not keyless`);

  const stamps = bundle.verificationMaterial.timestampVerificationData?.rfc3161Timestamps?.length ?? 0;
  if (stamps < o.tsa) throw new Error(`${stamps} RFC 3161 timestamp(s), fewer than ${o.tsa}`);
  const verifier = new Verifier(trust, { tlogThreshold: o.tlog, ctlogThreshold: o.ctlog, timestampThreshold: o.timestamp });
  const policy = { subjectAlternativeName: literally(o.identity), extensions: { issuer: o.issuer } };
  if (bundle.content.$case !== 'dsseEnvelope' && !bytes) throw new Error('a message signature is over the file itself: pass SIGNED_FILE');
  const entity = bundle.content.$case === 'dsseEnvelope' ? toSignedEntity(bundle) : toSignedEntity(bundle, bytes);
  const signer = verifier.verify(entity, policy);
  const san = signer.identity?.subjectAlternativeName;
  const issuer = signer.identity?.extensions?.issuer;
  if (san !== o.identity) throw new Error(`the certificate is for ${JSON.stringify(san)}, not ${JSON.stringify(o.identity)}`);
  if (issuer !== o.issuer) throw new Error(`the certificate's issuer is ${JSON.stringify(issuer)}, not ${JSON.stringify(o.issuer)}`);

  const entries = bundle.verificationMaterial.tlogEntries.map((e) => `${e.kindVersion?.kind}/${e.kindVersion?.version}`);
  const about = `san=${san} issuer=${issuer} tlog=[${entries.join(',')}] rfc3161=${stamps}`;
  if (bundle.content.$case === 'dsseEnvelope') {
    const { statement, names } = statementOf(bundle.content.dsseEnvelope, digest);
    console.log(`verified keyless dsse predicateType=${statement.predicateType} subjects=${names.join(',')} ${about}`);
  } else {
    const signed = Buffer.from(bundle.content.messageSignature.messageDigest.digest).toString('hex');
    if (digest && signed !== digest) throw new Error(`the message digest is sha256:${signed}, not sha256:${digest}`);
    console.log(`verified keyless messageSignature sha256:${signed} ${about}`);
  }
});
