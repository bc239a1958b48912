#!/usr/bin/env python3
"""json-check.py DEFINITION FILE [DEFINITION FILE...]: validates each JSON document FILE
against the definition of that name in vcpuplace.schema.json (beside this script), the
written form of vcpuplace-json(7). Prints one line per document; exit 1 if any fails."""
import json
import os
import sys

import jsonschema

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "vcpuplace.schema.json"), encoding="utf-8") as f:
    schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
args = sys.argv[1:]
if not args or len(args) % 2:
    sys.exit(__doc__)
failed = 0
for name, path in zip(args[::2], args[1::2]):
    if name not in schema["$defs"]:
        print(f"not ok - {path}: no definition '{name}' in the schema")
        failed += 1
        continue
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    validator = jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        failed += 1
        for e in errors[:5]:
            where = "/".join(str(p) for p in e.absolute_path) or "(top)"
            print(f"not ok - {os.path.basename(path)} as {name}: at {where}: {e.message[:300]}")
    else:
        print(f"ok - {os.path.basename(path)} as {name}")
sys.exit(1 if failed else 0)
