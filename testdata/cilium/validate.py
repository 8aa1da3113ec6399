"""Validates one JSON document against a JSON schema with the `jsonschema` library, printing each
error and exiting 1 when there is one. (The `jsonschema` CLI first checks the schema's own
`pattern`s as Python regexes, and Cilium's CRD uses `\\PC`, which Python's `re` lacks; a pattern
the document never reaches is not compiled here.)

Usage: python validate.py SCHEMA.json DOCUMENT.json
"""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
validator = jsonschema.validators.validator_for(schema)(schema)
errors = list(validator.iter_errors(doc))
for e in errors:
    print(f"{'/'.join(map(str, e.absolute_path))}: {e.message}")
sys.exit(1 if errors else 0)
