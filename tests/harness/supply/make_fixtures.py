#!/usr/bin/env python3
"""make_fixtures.py OUTDIR: key-based Sigstore bundles made without otters, by Python's `cryptography`.

otters must verify what another signer makes and refuse what is wrong. Writes into OUTDIR:

  key.key, key.pub        the signing key (PKCS#8 PEM) and its SubjectPublicKeyInfo PEM
  other.pub               a key that signed nothing
  artifact.bin            the "signed artifact": a small OCI image manifest
  artifact.sha256         its sha256 (hex, one line)
  dsse.bundle.json        bundle v0.3: DSSE envelope over an in-toto statement v1 (SLSA provenance)
                          whose subject is artifact.bin
  dsse-v02.bundle.json    the same, media type of bundle v0.2
  dsse-tampered.bundle.json  the payload's subject digest replaced, the signature kept
  dsse-unknown-key.bundle.json  a field no protobuf-JSON reader knows (publicKeyHint)
  msg.bundle.json         bundle v0.3: a message signature over artifact.bin's bytes

The bundle shape: protobuf-JSON (lowerCamelCase keys), bytes in standard base64, ECDSA P-256 SHA-256
signatures DER-encoded, `verificationMaterial` a public key hint and no log entries; a DSSE
signature is over the PAE "DSSEv1 <len type> <type> <len payload> <payload>" (byte lengths).
"""
import base64
import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

BUNDLE_V03 = "application/vnd.dev.sigstore.bundle.v0.3+json"
BUNDLE_V02 = "application/vnd.dev.sigstore.bundle+json;version=0.2"
INTOTO = "application/vnd.in-toto+json"


def b64(data):
    return base64.b64encode(data).decode()


def hexdigest(data):
    return hashlib.sha256(data).hexdigest()


class Out:
    def __init__(self, root):
        self.root = root
        os.makedirs(root, exist_ok=True)

    def bytes(self, name, data):
        with open(os.path.join(self.root, name), "wb") as f:
            f.write(data)

    def json(self, name, value):
        self.bytes(name, (json.dumps(value, indent=2) + "\n").encode())


def new_key(out, name, private):
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key()
    out.bytes(f"{name}.pub", public.public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo))
    if private:
        out.bytes(f"{name}.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key, b64(hashlib.sha256(der).digest())


def main(root):
    out = Out(root)
    key, hint = new_key(out, "key", private=True)
    new_key(out, "other", private=False)

    def sign(data):
        return key.sign(data, ec.ECDSA(hashes.SHA256()))

    def material():
        return {"publicKey": {"hint": hint}, "tlogEntries": []}

    empty = b"{}"
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": "sha256:" + hexdigest(empty),
                   "size": len(empty)},
        "layers": [],
    }, separators=(",", ":")).encode()
    out.bytes("artifact.bin", manifest)
    out.bytes("artifact.sha256", (hexdigest(manifest) + "\n").encode())

    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "registry.example/agents/ledger", "digest": {"sha256": hexdigest(manifest)}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {
                "buildType": "https://example.invalid/fixtures/build/v1",
                "externalParameters": {"context": "."},
            },
            "runDetails": {"builder": {"id": "https://example.invalid/fixtures"}},
        },
    }
    payload = json.dumps(statement, separators=(",", ":"), sort_keys=True).encode()

    def dsse(body, media_type=BUNDLE_V03):
        pae = b"DSSEv1 %d %s %d %s" % (len(INTOTO), INTOTO.encode(), len(body), body)
        return {"mediaType": media_type, "verificationMaterial": material(),
                "dsseEnvelope": {"payload": b64(body), "payloadType": INTOTO,
                                 "signatures": [{"sig": b64(sign(pae)), "keyid": ""}]}}

    good = dsse(payload)
    out.json("dsse.bundle.json", good)
    out.json("dsse-v02.bundle.json", dsse(payload, BUNDLE_V02))
    tampered = json.loads(json.dumps(good))
    evil = payload.replace(hexdigest(manifest).encode(), hexdigest(b"evil").encode())
    tampered["dsseEnvelope"]["payload"] = b64(evil)
    out.json("dsse-tampered.bundle.json", tampered)
    unknown = json.loads(json.dumps(good))
    unknown["verificationMaterial"]["publicKeyHint"] = hint
    out.json("dsse-unknown-key.bundle.json", unknown)

    out.json("msg.bundle.json", {
        "mediaType": BUNDLE_V03, "verificationMaterial": material(),
        "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(hashlib.sha256(manifest).digest())},
                             "signature": b64(sign(manifest))},
    })
    print(f"fixtures in {root}: artifact sha256:{hexdigest(manifest)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: make_fixtures.py OUTDIR", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
