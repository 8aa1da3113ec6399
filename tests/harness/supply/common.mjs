// What the harness's Node scripts share: the packages install.sh put under $OTTERS_HARNESS/npm, the
// reading of a bundle (upstream parser plus a check for fields it does not know), and the optional
// third argument of the verifiers (a sha256 or the signed file).
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import crypto from 'node:crypto';
import path from 'node:path';

export const harnessRoot = process.env.OTTERS_HARNESS || '/tmp/otters-harness';
const npmDir = path.join(harnessRoot, 'npm');

/** `require` of an installed package; names install.sh when the package is not there. */
export function pkg(name) {
  const req = createRequire(path.join(npmDir, 'package.json'));
  try {
    return req(name);
  } catch (e) {
    if (e.code !== 'MODULE_NOT_FOUND') throw e;
    console.error(`${name} is not installed under ${npmDir}: run bash tests/harness/supply/install.sh (.ci/install does)`);
    process.exit(3);
  }
}

export const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest();
export const INTOTO = 'application/vnd.in-toto+json';
export const STATEMENT_TYPES = new Set(['https://in-toto.io/Statement/v1', 'https://in-toto.io/Statement/v0.1']);

/**
 * The optional last argument: `HEX`, `sha256:HEX` or the path of the signed file. Returns
 * `{ digest, bytes }`, `digest` lowercase hex, `bytes` only for a file.
 */
export function subjectArg(arg) {
  if (arg === undefined) return {};
  const m = /^(?:sha256:)?([0-9a-fA-F]{64})$/.exec(arg);
  if (m) return { digest: m[1].toLowerCase() };
  if (!existsSync(arg)) throw new Error(`${arg}: neither a sha256 digest nor a file`);
  const bytes = readFileSync(arg);
  return { digest: sha256(bytes).toString('hex'), bytes };
}

// Paths of `raw` whose non-empty value did not survive the protobuf round trip: fields a strict
// protobuf-JSON reader (cosign, sigstore-go) refuses.
function dropped(raw, kept, at) {
  if (raw === null || typeof raw !== 'object') return [];
  const out = [];
  for (const [key, value] of Object.entries(raw)) {
    const here = at ? `${at}.${key}` : key;
    const empty = value === null || value === '' || value === 0 || (Array.isArray(value) && !value.length);
    if (empty) continue;
    if (kept === null || typeof kept !== 'object' || !(key in kept)) out.push(here);
    else out.push(...dropped(value, kept[key], here));
  }
  return out;
}

/** Reads a Sigstore bundle with @sigstore/bundle; refuses the media types outside `allowed` and unknown fields. */
export function readBundle(file, allowed) {
  const { bundleFromJSON, bundleToJSON } = pkg('@sigstore/bundle');
  const raw = JSON.parse(readFileSync(file, 'utf8'));
  if (!allowed.includes(raw.mediaType)) throw new Error(`mediaType ${JSON.stringify(raw.mediaType)} is not one of ${allowed.join(', ')}`);
  const bundle = bundleFromJSON(raw);
  const unknown = dropped(raw, bundleToJSON(bundle), '');
  if (unknown.length) throw new Error(`fields no protobuf-JSON reader knows: ${unknown.join(', ')}`);
  return bundle;
}

/**
 * The in-toto statement of a DSSE bundle, its subjects as `NAME@sha256:HEX`; throws unless one subject
 * has `digest` (when given).
 */
export function statementOf(envelope, digest) {
  if (envelope.payloadType !== INTOTO) throw new Error(`payloadType ${JSON.stringify(envelope.payloadType)} is not ${INTOTO}`);
  const statement = JSON.parse(Buffer.from(envelope.payload).toString('utf8'));
  if (!STATEMENT_TYPES.has(statement._type)) throw new Error(`_type ${JSON.stringify(statement._type)} is not an in-toto Statement`);
  const subjects = Array.isArray(statement.subject) ? statement.subject : [];
  if (!subjects.length) throw new Error('the statement has no subject');
  const names = subjects.map((s) => `${s.name}@sha256:${s.digest?.sha256}`);
  if (digest && !subjects.some((s) => s.digest?.sha256 === digest))
    throw new Error(`no subject is sha256:${digest} (subjects: ${names.join(' ')})`);
  return { statement, names };
}

/** Runs `main`; exit 1 with "not verified: …" when it throws. */
export function verdict(main) {
  try {
    main();
  } catch (e) {
    const extra = [e.code && !String(e.message).startsWith(e.code) ? e.code : '', e.fields ? `[${e.fields.join(', ')}]` : '',
      e.cause?.message ? `(${e.cause.message})` : ''].filter(Boolean).join(' ');
    console.error(`not verified: ${e.message}${extra ? ` ${extra}` : ''}`);
    process.exit(1);
  }
}
