#!/usr/bin/env python3
"""validate_sbom.py SBOM.json: validates an SBOM with its format's own upstream tools (PyPI).

SPDX 2.x JSON (has "spdxVersion"): parsed by spdx-tools, then its full document validation.
CycloneDX JSON ("bomFormat": "CycloneDX"): cyclonedx-python-lib's strict JSON schema validator for
the document's specVersion (no property the schema does not name).

Prints one line, "<format> <version> valid: …" or "invalid …: <first errors>"; exit 0 when valid, 1
when not, 3 when the packages are missing (run install.sh). Runs under the venv install.sh made
($OTTERS_HARNESS/venv), re-executing itself there when started by another python3.
"""
import json
import os
import sys

VENV = os.path.join(os.environ.get("OTTERS_HARNESS", "/tmp/otters-harness"), "venv")


def ensure_venv():
    try:
        import cyclonedx.validation.json  # noqa: F401
        import spdx_tools.spdx.validation  # noqa: F401
    except ImportError:
        python = os.path.join(VENV, "bin", "python")
        if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(VENV):
            os.execv(python, [python, *sys.argv])
        print(f"spdx-tools / cyclonedx-python-lib are not installed in {VENV}: "
              "run bash tests/harness/supply/install.sh (.ci/install does)")
        sys.exit(3)


def check_spdx(path):
    from spdx_tools.spdx.parser.error import SPDXParsingError
    from spdx_tools.spdx.parser.parse_anything import parse_file
    from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document

    try:
        document = parse_file(path)
    except SPDXParsingError as e:
        return None, [str(m) for m in e.get_messages()]
    problems = [m.validation_message for m in validate_full_spdx_document(document)]
    info = document.creation_info
    return (f"SPDX {info.spdx_version} valid: {len(document.packages)} packages, "
            f"{len(document.files)} files, {len(document.relationships)} relationships"), problems


def components(items):
    """How many components, nested ones counted."""
    return sum(1 + components(c.get("components") or []) for c in items if isinstance(c, dict))


def check_cyclonedx(path, document):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    version = str(document.get("specVersion"))
    try:
        validator = JsonStrictValidator(SchemaVersion.from_version(version))
    except (ValueError, NotImplementedError):
        return None, [f"no JSON schema for CycloneDX specVersion {version!r}"]
    with open(path, encoding="utf-8") as f:
        errors = validator.validate_str(f.read(), all_errors=True) or []
    problems = [f"{e.data.json_path}: {e.data.message}" for e in errors]
    return f"CycloneDX {version} valid: {components(document.get('components') or [])} components", problems


def main(path):
    ensure_venv()
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        print(f"invalid: {path} is not readable JSON: {e}")
        return 1
    if isinstance(document, dict) and "spdxVersion" in document:
        kind, (summary, problems) = "SPDX", check_spdx(path)
    elif isinstance(document, dict) and document.get("bomFormat") == "CycloneDX":
        kind, (summary, problems) = "CycloneDX", check_cyclonedx(path, document)
    else:
        print("invalid: neither SPDX 2.x JSON (spdxVersion) nor CycloneDX JSON (bomFormat)")
        return 1
    if problems or summary is None:
        print(f"invalid {kind}: {len(problems)} problem(s): " + " | ".join(problems[:5]))
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: validate_sbom.py SBOM.json", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
