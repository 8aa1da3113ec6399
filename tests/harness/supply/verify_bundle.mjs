#!/usr/bin/env node
// node verify_bundle.mjs BUNDLE.json PUBLIC.pem [HEX | sha256:HEX | SIGNED_FILE]
//
// A second reader of key-based Sigstore bundles (v0.3, v0.2), independent of otters: npm
// @sigstore/bundle parses the bundle, @sigstore/verify checks the signature with the one ECDSA P-256
// key given, offline (no transparency log, CT log or timestamp is wanted, or accepted: nothing here
// could check one). Refuses fields the protobuf schema does not have.
//   DSSE envelope: an in-toto statement; prints
//     verified dsse predicateType=TYPE subjects=NAME@sha256:HEX,…
//     and, given a digest, wants it among the subjects.
//   message signature: needs SIGNED_FILE (the signature is over its bytes); prints
//     verified messageSignature sha256:HEX
// Exit 0 verified, 1 not (with "not verified: why"), 2 usage, 3 packages missing (install.sh).
import { readFileSync } from 'node:fs';
import crypto from 'node:crypto';
import { pkg, readBundle, statementOf, subjectArg, verdict } from './common.mjs';

const KEY_BUNDLES = [
  'application/vnd.dev.sigstore.bundle.v0.3+json',
  'application/vnd.dev.sigstore.bundle+json;version=0.3',
  'application/vnd.dev.sigstore.bundle+json;version=0.2',
];

const [bundleFile, keyFile, subject, ...rest] = process.argv.slice(2);
if (!keyFile || rest.length) {
  console.error('usage: node verify_bundle.mjs BUNDLE.json PUBLIC.pem [HEX | sha256:HEX | SIGNED_FILE]');
  process.exit(2);
}

verdict(() => {
  const { Verifier, toSignedEntity, toTrustMaterial } = pkg('@sigstore/verify');
  const { digest, bytes } = subjectArg(subject);
  const bundle = readBundle(bundleFile, KEY_BUNDLES);
  const material = bundle.verificationMaterial;
  if (material.content?.$case !== 'publicKey') throw new Error(`the bundle carries a ${material.content?.$case}, not a public key hint`);
  if (material.tlogEntries.length || material.timestampVerificationData?.rfc3161Timestamps?.length)
    throw new Error('the bundle carries transparency-log entries or timestamps: an offline key check has no trust root for them');

  const key = crypto.createPublicKey(readFileSync(keyFile));
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new Error(`${keyFile} is not an ECDSA P-256 public key`);
  // The key is trusted under whatever hint the bundle gives: a hint only says which key to try.
  const hint = material.content.publicKey.hint;
  const trust = toTrustMaterial(
    { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] },
    { [hint]: { rawBytes: key.export({ type: 'spki', format: 'der' }) } },
  );
  const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });

  if (bundle.content.$case === 'dsseEnvelope') {
    verifier.verify(toSignedEntity(bundle));
    const { statement, names } = statementOf(bundle.content.dsseEnvelope, digest);
    console.log(`verified dsse predicateType=${statement.predicateType} subjects=${names.join(',')}`);
    return;
  }
  const signed = bundle.content.messageSignature;
  if (signed.messageDigest?.algorithm !== 1) throw new Error('messageDigest.algorithm is not SHA2_256');
  const signedDigest = Buffer.from(signed.messageDigest.digest).toString('hex');
  if (digest && digest !== signedDigest) throw new Error(`the message digest is sha256:${signedDigest}, not sha256:${digest}`);
  if (!bytes) throw new Error('a message signature is over the file itself: pass SIGNED_FILE, not a digest');
  verifier.verify(toSignedEntity(bundle, bytes));
  console.log(`verified messageSignature sha256:${signedDigest}`);
});
