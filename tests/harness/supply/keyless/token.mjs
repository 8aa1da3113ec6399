#!/usr/bin/env node
// node token.mjs (--github OWNER/REPO | --email ADDRESS | --sub SUBJECT --issuer URL) [OPTIONS]
//
// Prints an OIDC identity token (a JWT) that the mock Fulcio of serve.mjs accepts. Nobody checks its
// signature (the mock trusts the token as real Fulcio trusts its issuer), so it is signed with a
// throwaway key. The certificate's identity is the token's email claim when it has one, else its
// sub claim:
//   --github OWNER/REPO  sub = https://github.com/OWNER/REPO/.github/workflows/ci.yml@refs/heads/main
//                        (what real Fulcio derives from a GitHub Actions token's job_workflow_ref),
//                        iss = https://token.actions.githubusercontent.com, plus GitHub's claims
//                        (repository, ref, sha, workflow_ref…) that become certificate extensions
//   --email ADDRESS      sub = email = ADDRESS, email_verified, iss = https://token.example
//   --sub SUBJECT        sub = SUBJECT; --issuer is then required
// OPTIONS: --issuer URL (replaces the default iss), --audience A (default sigstore), --ttl SECONDS
// (default 600; negative for an expired token), --workflow PATH and --ref REF (with --github),
// --claim KEY=VALUE (repeatable: another claim, or one replaced; VALUE is read as JSON when it is).
import crypto from 'node:crypto';

function usage(why) {
  if (why) console.error(why);
  console.error('usage: node token.mjs (--github OWNER/REPO | --email ADDRESS | --sub SUBJECT --issuer URL) '
    + '[--issuer URL] [--audience A] [--ttl SECONDS] [--workflow PATH] [--ref REF] [--claim KEY=VALUE]...');
  process.exit(2);
}

const o = { audience: 'sigstore', ttl: 600, workflow: '.github/workflows/ci.yml', ref: 'refs/heads/main' };
const args = process.argv.slice(2);
const extra = {};
while (args.length) {
  const flag = args.shift();
  if (flag === '--claim' && args[0]?.includes('=')) {
    const [key, ...rest] = args.shift().split('=');
    const text = rest.join('=');
    try { extra[key] = JSON.parse(text); } catch { extra[key] = text; }
    continue;
  }
  const names = { '--github': 'github', '--email': 'email', '--sub': 'sub', '--issuer': 'issuer', '--audience': 'audience',
    '--ttl': 'ttl', '--workflow': 'workflow', '--ref': 'ref' };
  if (!(flag in names) || !args.length) usage(`${flag}: unknown, or missing its value`);
  o[names[flag]] = args.shift();
}
o.ttl = Number(o.ttl);
if (!Number.isInteger(o.ttl)) usage('--ttl wants whole seconds');
if ([o.github, o.email, o.sub].filter((v) => v !== undefined).length !== 1) usage('give one of --github, --email, --sub');

let claims;
if (o.github !== undefined) {
  const jobRef = `${o.github}/${o.workflow}@${o.ref}`;
  const sha = crypto.createHash('sha1').update(jobRef).digest('hex');
  claims = {
    iss: o.issuer ?? 'https://token.actions.githubusercontent.com',
    sub: `https://github.com/${jobRef}`,
    repository: o.github,
    repository_owner: o.github.split('/')[0],
    ref: o.ref,
    sha,
    workflow_ref: jobRef,
    job_workflow_ref: jobRef,
    event_name: 'push',
    runner_environment: 'github-hosted',
  };
} else if (o.email !== undefined) {
  claims = { iss: o.issuer ?? 'https://token.example', sub: o.email, email: o.email, email_verified: true };
} else {
  if (!o.issuer) usage('--sub needs --issuer');
  claims = { iss: o.issuer, sub: o.sub };
}
const now = Math.floor(Date.now() / 1000);
Object.assign(claims, { aud: o.audience, iat: now, nbf: now, exp: now + o.ttl }, extra);

const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const signingInput = `${part({ alg: 'ES256', typ: 'JWT' })}.${part(claims)}`;
const signature = crypto.sign('sha256', Buffer.from(signingInput), { key: privateKey, dsaEncoding: 'ieee-p1363' });
console.log(`${signingInput}.${signature.toString('base64url')}`);
